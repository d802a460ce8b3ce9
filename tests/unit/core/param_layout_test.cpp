#include <gtest/gtest.h>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/rng.hpp"

namespace uqnn {

TEST(ParamLayout, NamesEveryCoordinate) {
  ParamLayout layout;
  layout.add_matrix("layer1.weight", 2, 3, 3);
  layout.add_vector("layer1.bias", 2, 3);
  EXPECT_EQ(layout.size(), 8);
  EXPECT_EQ(layout.name_of(0), "layer1.weight[0,0]");
  EXPECT_EQ(layout.name_of(5), "layer1.weight[1,2]");
  EXPECT_EQ(layout.name_of(7), "layer1.bias[1]");
  EXPECT_EQ(layout.block_of(6), 1u);
  EXPECT_THROW(layout.name_of(8), std::out_of_range);
}

TEST(Rng, StreamsAreReproducibleAndDistinct) {
  Rng a(42, 0), b(42, 0), c(42, 1);
  const double xa = a.normal(), xb = b.normal(), xc = c.normal();
  EXPECT_EQ(xa, xb);
  EXPECT_NE(xa, xc);
}

TEST(Rng, NormalHasUnitMoments) {
  Rng rng(7);
  const int n = 200000;
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    s += z;
    s2 += z * z;
  }
  // Mean within 5 standard errors of 0; variance within 5 standard errors (sd of s2/n is sqrt(2/n)).
  EXPECT_NEAR(s / n, 0.0, 5.0 / std::sqrt(n));
  EXPECT_NEAR(s2 / n, 1.0, 5.0 * std::sqrt(2.0 / n));
}

TEST(Rng, FillNormalIsReproducibleAndStandardNormalIncludingTheZigguratTail) {
  Rng a(11, 3), b(11, 3);
  Vec za(1000), zb(1000);
  a.fill_normal(za);
  b.fill_normal(zb);
  EXPECT_EQ(za, zb);
  // Moments and the probabilities of intervals, the last one beyond 3.44: the ziggurat's base layer
  // hands that tail to a separate exponential rejection sampler, whose bugs the bulk cannot show.
  Rng rng(7);
  const Index n = 2000000;
  Vec z(n);
  rng.fill_normal(z);
  const double mean = z.mean(), m2 = z.squaredNorm() / n, m4 = z.array().pow(4).mean();
  EXPECT_NEAR(mean, 0.0, 5.0 / std::sqrt(n));
  EXPECT_NEAR(m2, 1.0, 5.0 * std::sqrt(2.0 / n));
  EXPECT_NEAR(m4, 3.0, 5.0 * std::sqrt(96.0 / n));  // Var[z^4] = 105 - 9
  const auto normal_cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  for (const double edge : {0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.44, 4.0}) {
    const double p = 1.0 - normal_cdf(edge);
    const double share = static_cast<double>((z.array() > edge).count()) / n;
    EXPECT_NEAR(share, p, 5.0 * std::sqrt(p * (1 - p) / n) + 1e-7) << "P(z > " << edge << ")";
    const double lower = static_cast<double>((z.array() < -edge).count()) / n;
    EXPECT_NEAR(lower, p, 5.0 * std::sqrt(p * (1 - p) / n) + 1e-7) << "P(z < -" << edge << ")";
  }
}

}  // namespace uqnn
