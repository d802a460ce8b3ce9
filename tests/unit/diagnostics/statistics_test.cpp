// Hand-checked small cases for the building blocks: inverse normal CDF, quantiles, HDI, chain
// splitting, rank normalisation and the classic R-hat formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "uqnn/core/rng.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/diagnostics/statistics.hpp"

namespace uqnn::diagnostics {
namespace {

Mat column(std::initializer_list<double> values) {
  Mat m(static_cast<Index>(values.size()), 1);
  Index i = 0;
  for (double v : values) m(i++, 0) = v;
  return m;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

TEST(DiagnosticsInverseNormalCdf, KnownValues) {
  EXPECT_EQ(inverse_normal_cdf(0.5), 0.0);
  EXPECT_NEAR(inverse_normal_cdf(0.975), 1.959963984540054, 1e-15);
  EXPECT_NEAR(inverse_normal_cdf(0.025), -1.959963984540054, 1e-15);
  EXPECT_NEAR(inverse_normal_cdf(0.9), 1.2815515655446004, 1e-15);
  EXPECT_TRUE(std::isinf(inverse_normal_cdf(0.0)) && inverse_normal_cdf(0.0) < 0);
  EXPECT_TRUE(std::isinf(inverse_normal_cdf(1.0)) && inverse_normal_cdf(1.0) > 0);
  EXPECT_TRUE(std::isnan(inverse_normal_cdf(1.5)));
}

// Phi(Phi^-1(p)) = p in all three regions of AS 241 (central, r <= 5, r > 5).
TEST(DiagnosticsInverseNormalCdf, InvertsTheNormalCdfInEveryRegion) {
  for (double p : {1e-300, 1e-100, 1e-20, 1e-12, 1e-11, 1e-6, 0.001, 0.05, 0.074, 0.076, 0.2, 0.5, 0.7, 0.926,
                   0.99, 0.999999}) {
    const double z = inverse_normal_cdf(p);
    const double tail = p < 0.5 ? p : 1.0 - p;
    const double tail_back = p < 0.5 ? normal_cdf(z) : normal_cdf(-z);
    // AS 241 is accurate to ~1e-16 in z; dp/p = |z| dz, so p round-trips to ~1e-16 z^2.
    EXPECT_NEAR(tail_back, tail, 1e-14 * std::max(1.0, z * z) * tail) << "p = " << p;
    if (1.0 - (1.0 - p) == p) {  // 1 - p exact: the quantile is odd about 1/2
      EXPECT_NEAR(inverse_normal_cdf(1.0 - p), -z, 1e-15 * std::abs(z)) << "symmetry at p = " << p;
    }
  }
}

TEST(DiagnosticsStatistics, QuantileType7) {
  const Mat x = column({4.0, 1.0, 3.0, 2.0});
  EXPECT_DOUBLE_EQ(quantile(x, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(x, 0.1), 1.3);  // h = 1 + 3 * 0.1
  EXPECT_DOUBLE_EQ(quantile(x, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(quantile(x, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(median(x), 2.5);
  EXPECT_DOUBLE_EQ(median(column({5.0, 1.0, 3.0})), 3.0);
  EXPECT_THROW(quantile(x, 1.5), std::invalid_argument);
}

TEST(DiagnosticsStatistics, MeanAndSdPoolChains) {
  Mat x(2, 2);
  x << 1.0, 3.0, 2.0, 4.0;
  EXPECT_DOUBLE_EQ(mean(x), 2.5);
  EXPECT_DOUBLE_EQ(sd(x), std::sqrt(5.0 / 3.0));  // divisor N - 1 = 3
}

TEST(DiagnosticsHdi, ShortestIntervalHoldingFloorProbNPlusOneDraws) {
  // width = floor(0.6 * 5) = 3: candidates [1, 4] (3) and [2, 10] (8).
  Interval i = hdi(column({10.0, 2.0, 1.0, 4.0, 3.0}), 0.6);
  EXPECT_EQ(i.lower, 1.0);
  EXPECT_EQ(i.upper, 4.0);
  // width = floor(0.4 * 5) = 2: [0, 6] (6), [5, 7] (2), [6, 20] (14).
  i = hdi(column({0.0, 5.0, 6.0, 7.0, 20.0}), 0.4);
  EXPECT_EQ(i.lower, 5.0);
  EXPECT_EQ(i.upper, 7.0);
  // Equal widths: the first (lowest) interval wins, as numpy's argmin in ArviZ.
  i = hdi(column({0.0, 1.0, 2.0, 3.0}), 0.5);
  EXPECT_EQ(i.lower, 0.0);
  EXPECT_EQ(i.upper, 2.0);
  // Chains are pooled: a skewed sample puts the interval against the mode.
  Mat two_chains(4, 2);
  two_chains << 0.0, 0.2, 0.1, 0.3, 0.4, 5.0, 9.0, 0.5;
  i = hdi(two_chains, 0.7);  // sorted 0 .1 .2 .3 .4 .5 5 9, width 5: [0, .5]
  EXPECT_EQ(i.lower, 0.0);
  EXPECT_EQ(i.upper, 0.5);
  EXPECT_EQ(hdi(column({1.5}), 0.94).upper, 1.5);  // floor(0.94) = 0: the single draw
  EXPECT_THROW(hdi(Mat(0, 1), 0.94), std::invalid_argument);
  EXPECT_THROW(hdi(column({1.0, 2.0}), 1.0), std::invalid_argument);
}

TEST(DiagnosticsSplitChains, HalvesDropTheMiddleDrawOfAnOddChain) {
  const Mat split = split_chains(column({0, 1, 2, 3, 4}), 2);
  ASSERT_EQ(split.rows(), 2);
  ASSERT_EQ(split.cols(), 2);
  EXPECT_EQ(split(0, 0), 0.0);
  EXPECT_EQ(split(1, 0), 1.0);
  EXPECT_EQ(split(0, 1), 3.0);
  EXPECT_EQ(split(1, 1), 4.0);
}

TEST(DiagnosticsSplitChains, KappaPiecesPerChain) {
  Mat x(8, 2);
  for (Index i = 0; i < 8; ++i) x(i, 0) = static_cast<double>(i), x(i, 1) = 10.0 + static_cast<double>(i);
  const Mat four = split_chains(x, 4);
  ASSERT_EQ(four.rows(), 2);
  ASSERT_EQ(four.cols(), 8);
  // Every piece is two consecutive draws of one chain starting at an even index.
  std::vector<double> starts;
  for (Index j = 0; j < four.cols(); ++j) {
    EXPECT_EQ(four(1, j), four(0, j) + 1.0);
    starts.push_back(four(0, j));
  }
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(starts, (std::vector<double>{0, 2, 4, 6, 10, 12, 14, 16}));
  // kappa = 3 on 7 draws: pieces of 2, the leftover draw (3) dropped from the middle.
  const Mat three = split_chains(column({0, 1, 2, 3, 4, 5, 6}), 3);
  ASSERT_EQ(three.cols(), 3);
  EXPECT_EQ(three(0, 0), 0.0);
  EXPECT_EQ(three(0, 1), 3.0);
  EXPECT_EQ(three(0, 2), 5.0);
  EXPECT_EQ(three(1, 2), 6.0);
  EXPECT_THROW(split_chains(x, 0), std::invalid_argument);
  EXPECT_THROW(split_chains(x, 9), std::invalid_argument);
}

TEST(DiagnosticsRankNormalize, AverageRanksForTiesAndBlomOffset) {
  const Mat z = rank_normalize(column({3.0, 2.0, 1.0, 2.0}));
  // ranks 4, 2.5, 1, 2.5 of N = 4: z = Phi^-1((r - 3/8) / (4 + 1/4)) (posterior's default).
  EXPECT_DOUBLE_EQ(z(0, 0), inverse_normal_cdf(3.625 / 4.25));
  EXPECT_DOUBLE_EQ(z(1, 0), 0.0);
  EXPECT_DOUBLE_EQ(z(2, 0), inverse_normal_cdf(0.625 / 4.25));
  EXPECT_DOUBLE_EQ(z(3, 0), 0.0);
  // rstan 2.21's offset 1/2: z = Phi^-1((r - 1/2) / 4).
  const Mat half = rank_normalize(column({3.0, 2.0, 1.0, 2.0}), 0.5);
  EXPECT_DOUBLE_EQ(half(0, 0), inverse_normal_cdf(3.5 / 4.0));
  EXPECT_DOUBLE_EQ(half(2, 0), inverse_normal_cdf(0.5 / 4.0));
  EXPECT_THROW(rank_normalize(column({1.0, 2.0}), 0.6), std::invalid_argument);
}

TEST(DiagnosticsRhat, ClassicFormulaOnTwoChains) {
  // Chains (0, 1) and (2, 3): S = 2, W = 0.5, B = S var(0.5, 2.5) = 4,
  // R = sqrt(((S-1)/S W + B/S) / W) = sqrt(4.5)  (seed 003 eqs. 3-5).
  Mat x(2, 2);
  x << 0.0, 2.0, 1.0, 3.0;
  EXPECT_DOUBLE_EQ(rhat(x), std::sqrt(4.5));
  // Chains (0, 1, 2) and (3, 4, 8): variances 1 and 7, W = 4, B = 3 var(1, 5) = 24,
  // R = sqrt((2/3 * 4 + 24/3) / 4) = sqrt(8/3).
  Mat y(3, 2);
  y << 0.0, 3.0, 1.0, 4.0, 2.0, 8.0;
  EXPECT_NEAR(rhat(y), std::sqrt(8.0 / 3.0), 1e-15);
  EXPECT_THROW(rhat(column({1.0, 2.0})), std::invalid_argument);
}

TEST(DiagnosticsRhat, UndefinedForConstantOrNonFiniteDraws) {
  EXPECT_TRUE(std::isnan(split_rhat(Mat::Constant(10, 2, 1.5))));
  EXPECT_TRUE(std::isnan(ess_bulk(Mat::Constant(10, 2, 1.5))));
  Mat x = Mat::Random(10, 2);
  x(3, 1) = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isnan(split_rhat(x)));
  EXPECT_TRUE(std::isnan(rank_normalized_rhat(x).max));
  EXPECT_TRUE(std::isnan(ess_tail(x)));
  EXPECT_TRUE(rank_normalize(x).array().isNaN().all());
}

TEST(DiagnosticsEss, AutocovarianceIsTheBiasedDirectSum) {
  const Mat x = column({1.0, 2.0, 4.0, 1.0});  // mean 2, centred -1 0 2 -1
  const Vec gamma = autocovariance(x.col(0), 3);
  EXPECT_DOUBLE_EQ(gamma(0), 6.0 / 4.0);
  EXPECT_DOUBLE_EQ(gamma(1), (0.0 + 0.0 - 2.0) / 4.0);
  EXPECT_DOUBLE_EQ(gamma(2), (-2.0 + 0.0) / 4.0);
  EXPECT_DOUBLE_EQ(gamma(3), 1.0 / 4.0);
}

// Lags from 64 on come from an FFT of the zero-padded chain: equal to the direct sums to rounding at
// every lag (no product wraps around the chain's end), on a slowly mixing AR(1) chain.
TEST(DiagnosticsEss, AutocovariancesByFftEqualTheDirectSumsAtEveryLag) {
  Rng rng(4);
  const Index n = 3001;  // (odd: not a power of two)
  Vec x(n);
  x(0) = rng.normal();
  for (Index t = 1; t < n; ++t) x(t) = 0.99 * x(t - 1) + rng.normal();
  const Vec gamma = autocovariance(x, n - 1);
  const Vec centred = x.array() - x.mean();
  for (Index k = 0; k < n; ++k) {
    double direct = 0.0;
    for (Index t = 0; t + k < n; ++t) direct += centred(t) * centred(t + k);
    ASSERT_NEAR(gamma(k), direct / static_cast<double>(n), 1e-12 * gamma(0)) << "lag " << k;
  }
}

// Four AR(1) chains with rho = 0.995 (tau = (1 + rho) / (1 - rho) = 399) and scales 0.3 to 2:
// Geyer's sequence runs to lags in the thousands, all from the FFT of each chain; the ESS is the
// chains' M S / tau within its sampling error.
TEST(DiagnosticsEss, ASlowlyMixingChainsEssIsItsTheoreticalValue) {
  Rng rng(11);
  const Index S = 40000, M = 4;
  const double rho = 0.995;
  const double scale[M] = {0.3, 1.0, 1.5, 2.0};
  Mat draws(S, M);
  for (Index j = 0; j < M; ++j) {
    draws(0, j) = scale[j] * rng.normal() / std::sqrt(1 - rho * rho);  // stationary start
    for (Index t = 1; t < S; ++t) draws(t, j) = rho * draws(t - 1, j) + scale[j] * rng.normal();
  }
  const double expected = static_cast<double>(S * M) * (1 - rho) / (1 + rho);  // 401
  EXPECT_NEAR(ess_basic(draws), expected, 0.15 * expected);
}

// With discrete draws the quantile is itself a draw: the tail indicator is x <= q (Stan), so the
// lowest value counts as below the 5% quantile and the indicator is not constant.
TEST(DiagnosticsEss, TailIndicatorIncludesTheQuantile) {
  Mat x(20, 2);
  for (Index t = 0; t < 20; ++t) {
    x(t, 0) = static_cast<double>((t * 7) % 5);
    x(t, 1) = static_cast<double>((t * 3 + 1) % 5);
  }
  const double q05 = quantile(x, 0.05), q95 = quantile(x, 0.95);
  EXPECT_EQ(q05, 0.0);
  EXPECT_EQ(q95, 4.0);
  const Mat below05 = (x.array() <= q05).cast<double>().matrix();
  EXPECT_EQ(ess_quantile(x, 0.05), ess_basic(split_chains(below05, 2)));
  EXPECT_TRUE(std::isnan(ess_quantile(x, 0.95)));  // every draw <= 4: constant indicator
  EXPECT_TRUE(std::isnan(ess_tail(x)));
  EXPECT_TRUE(std::isfinite(ess_quantile(x, 0.05)));
}

}  // namespace
}  // namespace uqnn::diagnostics
