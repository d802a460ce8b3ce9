// The parts of the MPI scale-out (issue 16) that run in one process: --part k/n parsing, the work
// layout, run_chains and run_members restricted to a part (chains / members equal to the whole run's,
// bitwise), the byte exchange format, and sample_stats read back for `uqnn merge`. The multi-rank
// behaviour is tested under mpirun by tests/mpi (ctest -R mpi_).
#include <gtest/gtest.h>

#include "../mcmc/test_models.hpp"
#include "uqnn/approx/ensemble.hpp"
#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/io/netcdf_inference_data.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {
namespace {

/// Sets a layout for one test and restores the default however the test ends.
struct LayoutGuard {
  LayoutGuard(int shards, Part part) { set_work_layout(shards, part); }
  ~LayoutGuard() { reset_work_layout(); }
};

TEST(ScaleOutPart, ParsesKOfNAndOwnsRoundRobin) {
  const Part p = Part::parse("2/3", "--part");
  EXPECT_EQ(p.k, 2);
  EXPECT_EQ(p.n, 3);
  EXPECT_FALSE(p.whole());
  EXPECT_EQ(p.text(), "2/3");
  std::vector<int> owned;
  for (int c = 0; c < 8; ++c)
    if (p.owns(c)) owned.push_back(c);
  EXPECT_EQ(owned, (std::vector<int>{1, 4, 7}));
  EXPECT_TRUE(Part::parse("1/1", "--part").whole());
}

TEST(ScaleOutPart, RejectsBadTextNamingTheFlagAndRange) {
  for (const char* bad : {"0/2", "3/2", "1/0", "-1/2", "a/b", "1", "1/2x", "", "/", "1/99999999999"}) {
    try {
      Part::parse(bad, "--part");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--part '" + std::string(bad) + "' is invalid"), std::string::npos) << what;
      EXPECT_NE(what.find("1 <= k <= n"), std::string::npos) << what;
    }
  }
}

TEST(ScaleOutLayout, ShardsMustDivideTheRanks) {
  EXPECT_THROW(set_work_layout(2, {}), InputError);  // one process: 2 shards impossible
  reset_work_layout();
  EXPECT_EQ(work_layout().chains->size(), 1);
  EXPECT_TRUE(work_layout().part.whole());
}

TEST(ScaleOutBytes, RoundTripAndShortMessage) {
  ByteWriter w;
  w.put(1.5);
  w.put(std::int64_t{-7});
  w.put(std::vector<double>{1, 2, 3});
  w.put(std::string("chain"));
  const std::string bytes = w.take();
  ByteReader r(bytes);
  EXPECT_EQ(r.get_double(), 1.5);
  EXPECT_EQ(r.get_int(), -7);
  EXPECT_EQ(r.get_doubles(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(r.get_string(), "chain");
  EXPECT_TRUE(r.done());
  const std::string cut = bytes.substr(0, bytes.size() - 2);
  ByteReader short_reader(cut);
  short_reader.get_double(), short_reader.get_int(), short_reader.get_doubles();
  EXPECT_THROW(short_reader.get_string(), std::runtime_error);
}

RunConfig part_config() {
  RunConfig c;
  c.num_chains = 5;
  c.num_threads = 2;
  c.num_warmup = 50;
  c.num_draws = 40;
  c.seed = 9;
  return c;
}

TEST(ScaleOutPart, RunChainsRunsOnlyThePartsChainsBitwiseAsTheWholeRun) {
  const auto target = testing::correlated_gaussian();
  const auto factory = make_sampler_factory(target, NutsConfig{});
  const InitialPointFn init = [&](int, Rng& rng) { return Vec(target->mean() + rng.normal_vector(3)); };
  const RunResult whole = run_chains(part_config(), factory, init);
  RunResult part;
  {
    const LayoutGuard guard(1, Part{2, 3});  // chains 1 and 4
    part = run_chains(part_config(), factory, init);
  }
  ASSERT_EQ(part.num_chains(), 5);
  for (int c = 0; c < 5; ++c) {
    const auto ci = static_cast<std::size_t>(c);
    EXPECT_EQ(part.in_part(c), c == 1 || c == 4) << c;
    if (!part.in_part(c)) {
      EXPECT_EQ(part.draws[ci].rows(), 0) << c;
      continue;
    }
    EXPECT_TRUE(part.draws[ci] == whole.draws[ci]) << "chain " << c;
    ASSERT_EQ(part.stats[ci].size(), whole.stats[ci].size());
    EXPECT_EQ(part.stats[ci].back().lp, whole.stats[ci].back().lp);
  }
  EXPECT_EQ(part.min_draws(), 40);
  EXPECT_EQ(part.dim(), 3);
  EXPECT_FALSE(part.interrupted);
  EXPECT_EQ(part.coordinate(0).cols(), 2);
  EXPECT_EQ(part.pooled().rows(), 80);
  EXPECT_TRUE(part.pooled().bottomRows(40) == whole.draws[4]);
}

TEST(ScaleOutPart, RunMembersTrainsOnlyThePartsMembers) {
  auto model = std::make_shared<Mlp>(MlpSpec{1, {3}, 1, Activation::Tanh, InitScheme::Glorot});
  Rng rng(2);
  Mat X(1, 15), Y(1, 15);
  for (Index i = 0; i < 15; ++i) X(0, i) = rng.uniform(-1, 1), Y(0, i) = X(0, i) * X(0, i);
  const Posterior posterior(model, make_gaussian_likelihood(0.1), GaussianPrior::isotropic(model->num_params(), 1.0), X, Y);
  EnsembleParams p;
  p.members = 3;
  p.threads = 2;
  p.training.epochs = 20;
  const auto whole = fit_deep_ensemble(posterior, p, 3);
  std::vector<MemberFit> part;
  {
    const LayoutGuard guard(1, Part{1, 2});  // members 0 and 2
    part = fit_deep_ensemble(posterior, p, 3);
  }
  ASSERT_EQ(part.size(), 3u);
  EXPECT_TRUE(part[0].theta == whole[0].theta);
  EXPECT_EQ(part[1].theta.size(), 0);
  EXPECT_TRUE(part[2].theta == whole[2].theta);
  // The exchange format of a member (MPI) gives it back unchanged.
  const MemberFit back = member_fit_from_bytes(member_fit_bytes(whole[1]));
  EXPECT_TRUE(back.theta == whole[1].theta);
  EXPECT_EQ(back.rows, whole[1].rows);
  EXPECT_EQ(back.history.train_loss, whole[1].history.train_loss);
}

TEST(ScaleOutMerge, SampleStatsReadBackAsWritten) {
  std::vector<std::vector<DrawStats>> chains(2, std::vector<DrawStats>(3));
  for (int c = 0; c < 2; ++c)
    for (int d = 0; d < 3; ++d) {
      DrawStats& s = chains[static_cast<std::size_t>(c)][static_cast<std::size_t>(d)];
      s.lp = -c - 0.25 * d, s.accept_prob = 0.1 * d, s.step_size = 0.5 + c, s.tree_depth = d + 1;
      s.n_leapfrog = 3 * d + c, s.is_divergent = d == 2, s.energy = 7.0 * c + d;
    }
  const auto back = read_sample_stats_group(make_sample_stats_group(chains), "test");
  ASSERT_EQ(back.size(), 2u);
  for (int c = 0; c < 2; ++c)
    for (int d = 0; d < 3; ++d) {
      const DrawStats& a = chains[static_cast<std::size_t>(c)][static_cast<std::size_t>(d)];
      const DrawStats& b = back[static_cast<std::size_t>(c)][static_cast<std::size_t>(d)];
      EXPECT_EQ(a.lp, b.lp);
      EXPECT_EQ(a.accept_prob, b.accept_prob);
      EXPECT_EQ(a.step_size, b.step_size);
      EXPECT_EQ(a.tree_depth, b.tree_depth);
      EXPECT_EQ(a.n_leapfrog, b.n_leapfrog);
      EXPECT_EQ(a.is_divergent, b.is_divergent);
      EXPECT_EQ(a.energy, b.energy);
    }
  InferenceGroup empty;
  EXPECT_THROW(read_sample_stats_group(empty, "x.nc"), InputError);
}

}  // namespace
}  // namespace uqnn
