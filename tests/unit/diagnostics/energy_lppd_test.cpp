// Hand-checked E-BFMI and LPPD (seed 003 eqs. 7-9).
#include <gtest/gtest.h>

#include <cmath>

#include "uqnn/diagnostics/energy.hpp"
#include "uqnn/diagnostics/lppd.hpp"

namespace uqnn::diagnostics {
namespace {

TEST(DiagnosticsEBfmi, HandComputedPerChain) {
  Mat energy(4, 3);
  energy << 1.0, 0.0, 2.0,  //
      3.0, 0.0, 2.0,        //
      2.0, 1.0, 2.0,        //
      4.0, 1.0, 2.0;
  const Vec bfmi = e_bfmi(energy);
  ASSERT_EQ(bfmi.size(), 3);
  // Chain 0: differences 2, -1, 2 -> 9; deviations from 2.5: -1.5 .5 -.5 1.5 -> 5.
  EXPECT_DOUBLE_EQ(bfmi(0), 9.0 / 5.0);
  // Chain 1: differences 0, 1, 0 -> 1; deviations from 0.5 -> 4 * 0.25 = 1.
  EXPECT_DOUBLE_EQ(bfmi(1), 1.0);
  EXPECT_TRUE(std::isnan(bfmi(2)));  // constant energy
  EXPECT_THROW(e_bfmi(Mat::Zero(1, 2)), std::invalid_argument);
}

TEST(DiagnosticsLppd, HandComputedTwoDrawsTwoPoints) {
  Mat log_lik(2, 2);  // [draws, points]
  log_lik << std::log(0.5), std::log(1.0), std::log(0.25), std::log(0.5);
  const Vec pointwise = pointwise_lppd(log_lik);
  EXPECT_NEAR(pointwise(0), std::log(0.375), 1e-15);
  EXPECT_NEAR(pointwise(1), std::log(0.75), 1e-15);
  EXPECT_NEAR(lppd(log_lik), (std::log(0.375) + std::log(0.75)) / 2.0, 1e-15);  // seed 003 eq. 7
}

TEST(DiagnosticsLppd, StableForVeryNegativeLogLikelihoods) {
  Mat log_lik(3, 2);
  log_lik << -1000.0, -2000.0, -1001.0, -2000.5, -1002.0, -2001.0;
  // exp(-1000) underflows; the log-sum-exp result is exact: shift by the maximum.
  const double expected0 = -1000.0 + std::log((1.0 + std::exp(-1.0) + std::exp(-2.0)) / 3.0);
  const double expected1 = -2000.0 + std::log((1.0 + std::exp(-0.5) + std::exp(-1.0)) / 3.0);
  EXPECT_NEAR(lppd(log_lik), (expected0 + expected1) / 2.0, 1e-10);
}

TEST(DiagnosticsLppd, ExpandingWindowMatchesLppdOfEachPrefix) {
  Mat log_lik(4, 3);
  log_lik << -1.0, -2.0, -0.5,  //
      -3.0, -0.1, -900.0,       //
      -0.2, -1.5, -2.5,         //
      -1.1, -4.0, -0.7;
  const Vec running = expanding_window_lppd(log_lik);  // seed 003 eq. 8
  ASSERT_EQ(running.size(), 4);
  EXPECT_NEAR(running(0), log_lik.row(0).mean(), 1e-14);
  for (Index l = 1; l <= 4; ++l) {
    EXPECT_NEAR(running(l - 1), lppd(log_lik.topRows(l)), 1e-13) << "l = " << l;
  }
}

TEST(DiagnosticsLppd, ConvergedWhenTheWindowMeanIsWithinEpsilon) {
  Vec by_draw(6);
  by_draw << 1.0, 2.0, 2.0, 2.0, 2.0, 2.5;
  // l = 3: mean(LPPD_1, LPPD_2) = 1.5 vs 2; l = 4: mean(2, 2) = 2 vs 2 -> converged (eq. 9).
  EXPECT_EQ(lppd_converged_at(by_draw, 2, 0.01), std::optional<Index>(4));
  Vec drifting(4);
  drifting << 1.0, 2.0, 3.0, 4.0;
  EXPECT_FALSE(lppd_converged_at(drifting, 1, 0.5).has_value());
  EXPECT_THROW(lppd_converged_at(by_draw, 0, 0.1), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn::diagnostics
