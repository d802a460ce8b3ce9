#pragma once
/// @file The standard normal distribution: its density, CDF and quantile function (inverse CDF).
#include <cmath>
#include <numbers>

namespace uqnn::diagnostics {

/// Phi(z), through erfc so that the lower tail keeps its relative accuracy.
inline double normal_cdf(double z) { return 0.5 * std::erfc(-z * (1.0 / std::numbers::sqrt2)); }
/// phi(z) = exp(-z^2 / 2) / sqrt(2 pi).
inline double normal_pdf(double z) { return 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2 * std::exp(-0.5 * z * z); }

/// Inverse of the standard normal CDF, Phi^-1(p), accurate to about 1 part in 1e16 on (0, 1).
/// Returns -inf at p = 0, +inf at p = 1 and NaN outside [0, 1]. It is the same algorithm as R's
/// `qnorm`, which is why rank normalisation reproduces rstan's `z_scale` to the last bits.
/// References: M. J. Wichura (1988), "Algorithm AS 241: The percentage points of the normal
/// distribution", Applied Statistics 37(3), 477-484 (PPND16).
double inverse_normal_cdf(double p);

}  // namespace uqnn::diagnostics
