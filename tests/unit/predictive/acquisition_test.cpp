// Active learning's acquisition scores (issue 20, item 8): epistemic variance and BALD against hand
// values, BALD against the exact mutual information where the predictive is Gaussian, and against
// numerical integration of a two-component mixture (where the Gaussian entropy bounds it above).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "uqnn/core/rng.hpp"
#include "uqnn/predictive/acquisition.hpp"

namespace uqnn {
namespace {

/// Draws with the given means and noise variances at one point each column.
PredictiveDraws acquisition_draws(const std::vector<std::vector<double>>& means, const std::vector<std::vector<double>>& noise) {
  PredictiveDraws d;
  for (std::size_t s = 0; s < means.size(); ++s) {
    Mat m(1, static_cast<Index>(means[s].size())), v(1, static_cast<Index>(means[s].size()));
    for (std::size_t j = 0; j < means[s].size(); ++j) m(0, static_cast<Index>(j)) = means[s][j], v(0, static_cast<Index>(j)) = noise[s][j];
    d.means.push_back(m);
    d.noise_variance.push_back(v);
  }
  return d;
}

TEST(Acquisition, HandValues) {
  // Point 0: means 1, 2, 3 with noise 0.5 each; point 1: means all 2, noises 0.25, 1, 4.
  const auto d = acquisition_draws({{1, 2}, {2, 2}, {3, 2}}, {{0.5, 0.25}, {0.5, 1.0}, {0.5, 4.0}});
  const Vec v = epistemic_variance(d);
  EXPECT_NEAR(v[0], 1.0, 1e-14);  // the unbiased variance of 1, 2, 3
  EXPECT_NEAR(v[1], 0.0, 1e-14);
  const Vec b = bald_score(d);
  EXPECT_NEAR(b[0], 0.5 * std::log(2.0 / 3.0 + 0.5) - 0.5 * std::log(0.5), 1e-14);
  // No disagreement about the mean; the draws' noise differs: 0.5 log(mean noise) - mean(0.5 log noise) > 0.
  EXPECT_NEAR(b[1], 0.5 * std::log(5.25 / 3.0) - 0.5 * (std::log(0.25) + std::log(1.0) + std::log(4.0)) / 3.0, 1e-14);
  EXPECT_GT(b[1], 0.0);
}

TEST(Acquisition, BaldIsTheMutualInformationWhenThePredictiveIsGaussian) {
  // mu ~ N(0, v) over draws, noise sigma^2 shared: y ~ N(0, v + sigma^2), so I = 0.5 log(1 + v / sigma^2).
  Rng rng(1);
  const std::vector<double> v = {0.01, 1.0, 25.0};
  const double noise = 0.5;
  std::vector<std::vector<double>> means, noises;
  for (int s = 0; s < 200000; ++s) {
    std::vector<double> m;
    for (double vj : v) m.push_back(std::sqrt(vj) * rng.normal());
    means.push_back(m);
    noises.push_back(std::vector<double>(v.size(), noise));
  }
  const Vec b = bald_score(acquisition_draws(means, noises));
  for (std::size_t j = 0; j < v.size(); ++j)
    EXPECT_NEAR(b[static_cast<Index>(j)], 0.5 * std::log(1.0 + v[j] / noise), 0.01 * (1 + 0.5 * std::log(1.0 + v[j] / noise))) << j;
  // With a shared noise, BALD ranks as the epistemic variance does.
  const Vec e = epistemic_variance(acquisition_draws(means, noises));
  EXPECT_LT(b[0], b[1]);
  EXPECT_LT(b[1], b[2]);
  EXPECT_LT(e[0], e[1]);
  EXPECT_LT(e[1], e[2]);
}

TEST(Acquisition, BaldBoundsTheMixturesMutualInformationFromAbove) {
  // Two equally likely draws with means -1 and 1, noise 0.25: the predictive is a bimodal mixture.
  // The exact I = H[mixture] - H[N(0, 0.25)]; the Gaussian of the same variance has the larger entropy.
  const double sd = 0.5;
  const auto density = [&](double y) {
    const auto n = [&](double m) { return std::exp(-0.5 * (y - m) * (y - m) / (sd * sd)) / (sd * std::sqrt(2 * std::numbers::pi)); };
    return 0.5 * n(-1.0) + 0.5 * n(1.0);
  };
  double entropy = 0.0;
  const double h = 1e-3;
  for (double y = -8; y <= 8; y += h) {
    const double p = density(y);
    if (p > 0) entropy -= p * std::log(p) * h;
  }
  const double exact = entropy - 0.5 * std::log(2 * std::numbers::pi * std::numbers::e * sd * sd);
  const double bald = bald_score(acquisition_draws({{-1.0}, {1.0}}, {{sd * sd}, {sd * sd}}))[0];
  std::printf("  two-component mixture: exact I %.4f nats, Gaussian-entropy BALD %.4f\n", exact, bald);
  EXPECT_GT(bald, exact);
  EXPECT_GT(exact, 0.5);  // the draws disagree clearly: most of log 2 = 0.693
  EXPECT_LT(bald - exact, 0.25);
}

}  // namespace
}  // namespace uqnn
