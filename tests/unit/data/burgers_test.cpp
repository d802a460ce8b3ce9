// The Burgers solver (seed 000 section 4.2.1) against the exact Cole-Hopf solution for the smooth
// initial condition u0 = sin(2 pi x), nu = 0.01, on the 101 x 101 space-time grid of the paper.
#include <gtest/gtest.h>

#include <complex>
#include <numbers>

#include "uqnn/data/burgers.hpp"

namespace uqnn {
namespace {

/// Cole-Hopf: s = -2 nu phi_x / phi, phi_t = nu phi_xx, phi(x, 0) = exp(-(1 / 2 nu) int_0^x u0),
/// which for u0 = sin(2 pi x) is exp(-a (1 - cos 2 pi x)), a = 1 / (4 pi nu). phi's Fourier
/// coefficients are e^-a I_m(a) (modified Bessel functions); each decays as exp(-nu (2 pi m)^2 t).
double cole_hopf(double x, double t, double nu) {
  const double a = 1.0 / (4 * std::numbers::pi * nu);
  double phi = 0, phi_x = 0;
  for (int m = -80; m <= 80; ++m) {
    const double c = std::exp(-a) * std::cyl_bessel_i(std::abs(m), a);
    const double w = 2 * std::numbers::pi * m, decay = std::exp(-nu * w * w * t);
    phi += c * decay * std::cos(w * x);
    phi_x += -c * decay * w * std::sin(w * x);
  }
  return -2 * nu * phi_x / phi;
}

TEST(Burgers, MatchesColeHopfOnThePapersGrid) {
  BurgersParams p;  // nu 0.01, 500 points, dt 5e-4, 101 x 101 output grid on (0, 1) x [0, 1]
  Vec u0(p.num_points);
  for (Index k = 0; k < p.num_points; ++k) u0[k] = std::sin(2 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(p.num_points));
  const Mat s = solve_burgers(u0, p);
  ASSERT_EQ(s.rows(), 101);
  ASSERT_EQ(s.cols(), 101);
  double worst = 0, peak = 0;
  for (Index j = 0; j < 101; ++j)
    for (Index i = 0; i < 101; ++i) {
      const double exact = cole_hopf(i / 100.0, j / 100.0, p.viscosity);
      worst = std::max(worst, std::abs(s(i, j) - exact));
      peak = std::max(peak, std::abs(exact));
    }
  std::printf("Burgers vs Cole-Hopf: max abs error %.3g on the 101 x 101 grid (max |s| %.3f)\n", worst, peak);
  EXPECT_LT(worst, 1e-6);
  EXPECT_NEAR(s(25, 0), 1.0, 1e-12);                      // the initial condition is recorded as given
  EXPECT_NEAR(s(0, 100), 0.0, 1e-9);                      // the solution stays odd about x = 0
}

TEST(Burgers, ValidatesParameters) {
  BurgersParams p;
  p.num_points = 501;
  EXPECT_THROW(p.validate(), std::invalid_argument);
  p = {};
  p.time_step = 3e-4;  // 0.01 / 3e-4 is not an integer
  EXPECT_THROW(p.validate(), std::invalid_argument);
  Rng rng(1, 0);
  const Vec u = sample_periodic_grf(500, rng);
  EXPECT_EQ(u.size(), 500);
  EXPECT_TRUE(u.allFinite());
}

}  // namespace
}  // namespace uqnn
