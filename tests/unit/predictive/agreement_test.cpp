// Agreement with a reference predictive (predictive/agreement.hpp). The 1-Wasserstein distance is
// checked against scipy.stats.wasserstein_distance: its documented example, and its formula
// (scipy's _cdf_distance with p = 1: the merged sorted values, the right-continuous empirical CDFs
// from searchsorted(..., side="right"), sum of |F_u - F_v| times the gaps) written out below, on
// samples of unequal sizes with ties. Total variation and top-1 agreement by hand.
#include "uqnn/predictive/agreement.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace uqnn {
namespace {

/// scipy.stats._stats_py._cdf_distance(1, u, v) without weights.
double scipy_wasserstein(std::vector<double> u, std::vector<double> v) {
  std::sort(u.begin(), u.end());
  std::sort(v.begin(), v.end());
  std::vector<double> all = u;
  all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  double total = 0;
  for (std::size_t k = 0; k + 1 < all.size(); ++k) {
    const double delta = all[k + 1] - all[k];
    const double fu = static_cast<double>(std::upper_bound(u.begin(), u.end(), all[k]) - u.begin()) / static_cast<double>(u.size());
    const double fv = static_cast<double>(std::upper_bound(v.begin(), v.end(), all[k]) - v.begin()) / static_cast<double>(v.size());
    total += std::abs(fu - fv) * delta;
  }
  return total;
}

TEST(Agreement, WassersteinMatchesScipysExampleAndFormula) {
  EXPECT_DOUBLE_EQ(wasserstein1({0, 1, 3}, {5, 6, 8}), 5.0);  // scipy's docstring example
  EXPECT_DOUBLE_EQ(wasserstein1({1, 2, 3}, {1, 2, 3}), 0.0);
  // Equal sizes: the mean absolute difference of the sorted samples.
  EXPECT_NEAR(wasserstein1({3, 1, 2}, {2, 4, 9}), (1.0 + 2.0 + 6.0) / 3, 1e-15);
  std::mt19937_64 engine(21);
  std::normal_distribution<double> z;
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> u(static_cast<std::size_t>(5 + trial)), v(static_cast<std::size_t>(3 + 2 * trial));
    for (double& x : u) x = std::round(4 * z(engine)) / 2;  // ties within and across the samples
    for (double& x : v) x = 0.5 + 1.5 * z(engine);
    if (trial % 3 == 0) v.push_back(u.front());
    EXPECT_NEAR(wasserstein1(u, v), scipy_wasserstein(u, v), 1e-12) << trial;
  }
  // Two normal samples: W1 of N(0, 1) and N(1, 1) is 1.
  std::vector<double> a(20000), b(20000);
  for (double& x : a) x = z(engine);
  for (double& x : b) x = 1 + z(engine);
  EXPECT_NEAR(wasserstein1(a, b), 1.0, 0.03);
  EXPECT_THROW(wasserstein1({}, {1}), std::invalid_argument);
}

TEST(Agreement, TotalVariationAndTopOneByHand) {
  Vec p(3), q(3);
  p << 0.5, 0.3, 0.2;
  q << 0.2, 0.5, 0.3;
  EXPECT_NEAR(total_variation(p, q), 0.5 * (0.3 + 0.2 + 0.1), 1e-15);
  Mat probs(3, 2), ref(3, 2);
  probs << 0.5, 0.1, 0.3, 0.1, 0.2, 0.8;
  ref << 0.2, 0.1, 0.5, 0.2, 0.3, 0.7;
  const ClassAgreement c = class_agreement(probs, ref);
  EXPECT_EQ(c.top1(0), 0.0);  // class 0 against class 1
  EXPECT_EQ(c.top1(1), 1.0);  // class 2 both
  EXPECT_NEAR(c.total_variation(0), 0.3, 1e-15);
  EXPECT_NEAR(c.total_variation(1), 0.1, 1e-15);
  // Bernoulli: P(y = 1) read as two classes (0.3, 0.7) against (0.6, 0.4): TV 0.3, top-1 disagrees.
  Mat pb(1, 1), rb(1, 1);
  pb << 0.7;
  rb << 0.4;
  const ClassAgreement b = class_agreement(pb, rb);
  EXPECT_EQ(b.top1(0), 0.0);
  EXPECT_NEAR(b.total_variation(0), 0.3, 1e-15);
}

}  // namespace
}  // namespace uqnn
