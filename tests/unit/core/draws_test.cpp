#include "uqnn/core/draws.hpp"

#include <gtest/gtest.h>

namespace uqnn {
namespace {

/// Chain `id` of n draws of K values: draw d's value k is 100 id + 10 d + k (each entry names itself).
Mat chain_values(Index id, Index n, Index K) {
  Mat m(n, K);
  for (Index d = 0; d < n; ++d)
    for (Index k = 0; k < K; ++k) m(d, k) = 100.0 * static_cast<double>(id) + 10.0 * static_cast<double>(d) + static_cast<double>(k);
  return m;
}

std::vector<DrawStats> chain_stats(Index id, Index n) {
  std::vector<DrawStats> stats(static_cast<std::size_t>(n));
  for (Index d = 0; d < n; ++d) stats[static_cast<std::size_t>(d)].lp = -(100.0 * static_cast<double>(id) + static_cast<double>(d));
  return stats;
}

TEST(Draws, CountChainMajorAndKeepEveryChainsIdAndStatistics) {
  Draws draws;
  draws.add_chain(1, chain_values(1, 3, 2), chain_stats(1, 3));
  draws.add_chain(4, chain_values(4, 2, 2), chain_stats(4, 2));  // a part or a merge keeps the run's ids
  EXPECT_EQ(draws.size(), 5);
  EXPECT_EQ(draws.dim(), 2);
  EXPECT_EQ(draws.num_chains(), 2);
  EXPECT_TRUE(draws.has_stats());
  EXPECT_EQ(draws.chain_ids(), (std::vector<Index>{1, 1, 1, 4, 4}));
  EXPECT_EQ(draws.draw(2), (Vec(2) << 120, 121).finished());
  EXPECT_EQ(draws.draw(3), (Vec(2) << 400, 401).finished());
  EXPECT_EQ(draws.stats(4).lp, -401);
  EXPECT_THROW(draws.draw(5), std::out_of_range);
  std::vector<Index> visited;
  draws.for_each([&](Index s, const Vec& theta) {
    visited.push_back(s);
    EXPECT_EQ(theta, draws.draw(s)) << "draw " << s;
  });
  EXPECT_EQ(visited, (std::vector<Index>{0, 1, 2, 3, 4}));
}

TEST(Draws, ByChainCutsToTheShortestChain) {
  Draws draws;
  draws.add_chain(0, chain_values(0, 3, 2));
  draws.add_chain(1, chain_values(1, 2, 2));
  EXPECT_FALSE(draws.comparable_chains()) << "unequal lengths";
  const Mat lp = draws.by_chain({0.0, 1.0, 2.0, 10.0, 11.0});
  EXPECT_EQ(lp, (Mat(2, 2) << 0, 10, 1, 11).finished());
  EXPECT_EQ(draws.parameter_by_chain(1), (Mat(2, 2) << 1, 101, 11, 111).finished());
  EXPECT_THROW(draws.by_chain({1.0, 2.0}), std::invalid_argument);
}

TEST(Draws, ChainsAreComparableWhenEquallyLongWithMoreThanOneDraw) {
  Draws mcmc;
  mcmc.add_chain(0, chain_values(0, 4, 3));
  mcmc.add_chain(1, chain_values(1, 4, 3));
  EXPECT_TRUE(mcmc.comparable_chains());
  const Draws members = Draws::one_per_chain({Vec::Ones(3), Vec::Zero(3), Vec::Constant(3, 2.0)});
  EXPECT_EQ(members.num_chains(), 3);
  EXPECT_EQ(members.chain(2).id, 2);
  EXPECT_FALSE(members.comparable_chains()) << "one draw per chain";
  const Draws samples = Draws::independent({Vec::Ones(3), Vec::Zero(3)});
  EXPECT_EQ(samples.num_chains(), 1);
  EXPECT_EQ(samples.size(), 2);
  EXPECT_FALSE(samples.has_stats());
  EXPECT_TRUE(samples.comparable_chains());
}

TEST(Draws, RefuseChainsThatDoNotFit) {
  Draws draws;
  draws.add_chain(2, chain_values(2, 3, 2), chain_stats(2, 3));
  EXPECT_THROW(draws.add_chain(2, chain_values(2, 3, 2), chain_stats(2, 3)), std::invalid_argument) << "the same id";
  EXPECT_THROW(draws.add_chain(1, chain_values(1, 3, 2), chain_stats(1, 3)), std::invalid_argument) << "a smaller id";
  EXPECT_THROW(draws.add_chain(3, chain_values(3, 3, 4), chain_stats(3, 3)), std::invalid_argument) << "another K";
  EXPECT_THROW(draws.add_chain(3, chain_values(3, 3, 2)), std::invalid_argument) << "no statistics";
  EXPECT_THROW(draws.add_chain(3, chain_values(3, 3, 2), chain_stats(3, 2)), std::invalid_argument) << "too few statistics";
  EXPECT_THROW(draws.add_chain(3, Mat(0, 2), {}), std::invalid_argument) << "no draws";
  EXPECT_THROW(Draws::independent({Vec::Ones(2), Vec::Ones(3)}), std::invalid_argument);
  EXPECT_EQ(draws.size(), 3) << "a refused chain leaves the draws as they were";
}

}  // namespace
}  // namespace uqnn
