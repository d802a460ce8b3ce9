#include "uqnn/diagnostics/normal_quantile.hpp"

#include <cmath>
#include <limits>

namespace uqnn::diagnostics {
namespace {

/// Evaluates the polynomial c[0] + c[1] x + ... + c[7] x^7 by Horner's rule.
double horner(const double (&c)[8], double x) {
  double value = c[7];
  for (int i = 6; i >= 0; --i) value = value * x + c[i];
  return value;
}

// Coefficients of Wichura (1988), AS 241 PPND16, as published (lowest degree first).
// Central region |p - 1/2| <= 0.425: Phi^-1(p) = q A(r) / B(r), r = 0.180625 - q^2.
constexpr double kA[8] = {3.3871328727963666080,  1.3314166789178437745e+2, 1.9715909503065514427e+3,
                          1.3731693765509461125e+4, 4.5921953931549871457e+4, 6.7265770927008700853e+4,
                          3.3430575583588128105e+4, 2.5090809287301226727e+3};
constexpr double kB[8] = {1.0,                      4.2313330701600911252e+1, 6.8718700749205790830e+2,
                          5.3941960214247511077e+3, 2.1213794301586595867e+4, 3.9307895800092710610e+4,
                          2.8729085735721942674e+4, 5.2264952788528545610e+3};
// Intermediate tails, r = sqrt(-log(min(p, 1-p))) <= 5: C(r - 1.6) / D(r - 1.6).
constexpr double kC[8] = {1.42343711074968357734,  4.63033784615654529590,   5.76949722146069140550,
                          3.64784832476320460504,  1.27045825245236838258,   2.41780725177450611770e-1,
                          2.27238449892691845833e-2, 7.74545014278341407640e-4};
constexpr double kD[8] = {1.0,                     2.05319162663775882187,   1.67638483018380384940,
                          6.89767334985100004550e-1, 1.48103976427480074590e-1, 1.51986665636164571966e-2,
                          5.47593808499534494600e-4, 1.05075007164441684324e-9};
// Far tails, r > 5: E(r - 5) / F(r - 5).
constexpr double kE[8] = {6.65790464350110377720,  5.46378491116411436990,   1.78482653991729133580,
                          2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3,
                          2.71155556874348757815e-5, 2.01033439929228813265e-7};
constexpr double kF[8] = {1.0,                     5.99832206555887937690e-1, 1.36929880922735805310e-1,
                          1.48753612908506148525e-2, 7.86869131145613259100e-4, 1.84631831751005468180e-5,
                          1.42151175831644588870e-7, 2.04426310338993978564e-15};

}  // namespace

double inverse_normal_cdf(double p) {
  if (std::isnan(p) || p < 0.0 || p > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0.0) return -std::numeric_limits<double>::infinity();
  if (p == 1.0) return std::numeric_limits<double>::infinity();

  const double q = p - 0.5;
  if (std::abs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q * horner(kA, r) / horner(kB, r);
  }
  const double r = std::sqrt(-std::log(q < 0.0 ? p : 1.0 - p));
  const double value = r <= 5.0 ? horner(kC, r - 1.6) / horner(kD, r - 1.6)
                                : horner(kE, r - 5.0) / horner(kF, r - 5.0);
  return q < 0.0 ? -value : value;
}

}  // namespace uqnn::diagnostics
