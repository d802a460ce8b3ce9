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

}  // namespace uqnn
