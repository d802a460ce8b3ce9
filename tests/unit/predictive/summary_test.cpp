// Predictive intervals: with few draws they are the exact quantiles of the Gaussian mixture (one draw:
// mean +- z sd; point masses: the step function's quantiles); with many, type-7 quantiles of samples
// of the mixture, selected without sorting, equal to those of the fully sorted sample.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "uqnn/core/rng.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {
namespace {

/// Draws with means mu[k] + shift_i and noise sd[k] at n points (one output).
PredictiveDraws mixture_draws(const std::vector<double>& mu, const std::vector<double>& sd, Index n) {
  PredictiveDraws d;
  for (std::size_t k = 0; k < mu.size(); ++k) {
    Mat m(1, n), v(1, n);
    for (Index i = 0; i < n; ++i) {
      m(0, i) = mu[k] + 0.1 * static_cast<double>(i);
      v(0, i) = sd[k] * sd[k];
    }
    d.means.push_back(m);
    d.noise_variance.push_back(v);
  }
  return d;
}

double mixture_cdf(const std::vector<double>& mu, const std::vector<double>& sd, double y) {
  double f = 0;
  for (std::size_t k = 0; k < mu.size(); ++k) f += 0.5 * std::erfc(-(y - mu[k]) / (sd[k] * std::sqrt(2.0)));
  return f / static_cast<double>(mu.size());
}

TEST(PredictiveSummary, OneDrawGivesTheGaussianQuantiles) {
  Rng rng(1, 0);
  const PredictiveSummary s = summarize_predictive(mixture_draws({2.0}, {0.5}, 3), {0.5, 0.9, 0.95}, rng);
  const std::pair<double, double> z[] = {{0.5, 0.6744897501960817}, {0.9, 1.6448536269514722}, {0.95, 1.959963984540054}};
  for (const auto& [level, quantile] : z)
    for (Index i = 0; i < 3; ++i) {
      const double mean = 2.0 + 0.1 * static_cast<double>(i);
      EXPECT_NEAR(s.intervals.at(level).first(0, i), mean - 0.5 * quantile, 1e-10) << level;
      EXPECT_NEAR(s.intervals.at(level).second(0, i), mean + 0.5 * quantile, 1e-10) << level;
    }
}

TEST(PredictiveSummary, FewDrawsGiveTheExactMixtureQuantiles) {
  Rng rng(1, 0);
  const std::vector<double> mu = {-1.0, 3.0, 3.5}, sd = {0.5, 2.0, 0.01};  // bimodal, scales 200x apart
  const PredictiveSummary s = summarize_predictive(mixture_draws(mu, sd, 1), {0.5, 0.9, 0.95}, rng);
  for (double level : {0.5, 0.9, 0.95}) {
    EXPECT_NEAR(mixture_cdf(mu, sd, s.intervals.at(level).first(0, 0)), 0.5 - level / 2, 1e-11) << level;
    EXPECT_NEAR(mixture_cdf(mu, sd, s.intervals.at(level).second(0, 0)), 0.5 + level / 2, 1e-11) << level;
  }
}

TEST(PredictiveSummary, PointMassesGiveTheQuantilesOfTheStepFunction) {
  Rng rng(1, 0);
  // Three draws without noise: F jumps by 1/3 at -2, 1 and 4.
  const PredictiveSummary s = summarize_predictive(mixture_draws({1.0, -2.0, 4.0}, {0.0, 0.0, 0.0}, 1), {0.5, 0.95}, rng);
  EXPECT_NEAR(s.intervals.at(0.95).first(0, 0), -2.0, 1e-9);
  EXPECT_NEAR(s.intervals.at(0.95).second(0, 0), 4.0, 1e-9);
  EXPECT_NEAR(s.intervals.at(0.5).first(0, 0), -2.0, 1e-9);  // F(-2) = 1/3 >= 0.25
  EXPECT_NEAR(s.intervals.at(0.5).second(0, 0), 4.0, 1e-9);  // F(y) = 2/3 < 0.75 for y < 4
}

// A draw with a NaN mean or an infinite noise variance (a diverged chain) gives NaN bounds at that
// point, on both paths, and leaves the other points' bounds finite.
TEST(PredictiveSummary, ANonFiniteDrawGivesNanBoundsWhereItIsNonFinite) {
  for (const Index S : {Index{3}, kExactQuantileMaxDraws + 8}) {
    std::vector<double> mu(static_cast<std::size_t>(S), 1.0), sd(static_cast<std::size_t>(S), 0.5);
    PredictiveDraws draws = mixture_draws(mu, sd, 3);
    draws.means[1](0, 0) = std::numeric_limits<double>::quiet_NaN();
    draws.noise_variance[2](0, 1) = std::numeric_limits<double>::infinity();
    Rng rng(1, 0);
    const PredictiveSummary s = summarize_predictive(draws, {0.9}, rng);
    const auto& [lower, upper] = s.intervals.at(0.9);
    for (Index i : {0, 1}) {
      EXPECT_TRUE(std::isnan(lower(0, i))) << S << " draws, point " << i << ": " << lower(0, i);
      EXPECT_TRUE(std::isnan(upper(0, i))) << S << " draws, point " << i << ": " << upper(0, i);
    }
    EXPECT_TRUE(std::isfinite(lower(0, 2)) && std::isfinite(upper(0, 2))) << S;
  }
}

TEST(PredictiveSummary, ManyDrawsGiveType7QuantilesOfTheMixtureSamples) {
  const Index S = kExactQuantileMaxDraws + 8, n = 40;
  std::vector<double> mu, sd;
  for (Index k = 0; k < S; ++k) {
    mu.push_back(std::sin(static_cast<double>(k)) * 3.0);
    sd.push_back(0.2 + 0.05 * static_cast<double>(k % 7));
  }
  const PredictiveDraws draws = mixture_draws(mu, sd, n);
  const std::vector<double> levels = {0.5, 0.9, 0.95};
  Rng rng(7, 0);
  const PredictiveSummary s = summarize_predictive(draws, levels, rng);

  // The same samples from the same stream, fully sorted: the selected order statistics are equal.
  Rng replay(7, 0);
  const Index per_draw = (2000 + S - 1) / S, total = per_draw * S;
  double mean_cdf_error = 0;
  for (Index i = 0; i < n; ++i) {
    std::vector<double> samples;
    for (Index k = 0; k < S; ++k)
      for (Index r = 0; r < per_draw; ++r) samples.push_back(draws.means[k](0, i) + sd[k] * replay.normal());
    std::sort(samples.begin(), samples.end());
    const auto type7 = [&](double p) {
      const double h = (static_cast<double>(total) - 1) * p;
      const auto lo = static_cast<std::size_t>(std::floor(h));
      return samples[lo] + (h - std::floor(h)) * (samples[std::min(lo + 1, samples.size() - 1)] - samples[lo]);
    };
    for (double level : levels) {
      EXPECT_DOUBLE_EQ(s.intervals.at(level).first(0, i), type7(0.5 - level / 2)) << level << " point " << i;
      EXPECT_DOUBLE_EQ(s.intervals.at(level).second(0, i), type7(0.5 + level / 2)) << level << " point " << i;
    }
    std::vector<double> shifted = mu;
    for (double& m : shifted) m += 0.1 * static_cast<double>(i);
    mean_cdf_error += (mixture_cdf(shifted, sd, s.intervals.at(0.95).second(0, i)) - 0.975) / static_cast<double>(n);
  }
  // And they estimate the mixture's quantiles: F(upper 95% bound) is 0.975 within Monte Carlo error
  // (sd sqrt(0.975 * 0.025 / 2000) = 0.0035 per point, /sqrt(40) averaged).
  EXPECT_NEAR(mean_cdf_error, 0.0, 4 * 0.0035 / std::sqrt(40.0));
}

}  // namespace
}  // namespace uqnn
