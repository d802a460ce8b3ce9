// The multi-chain driver: reproducibility across thread counts, initial points, thinning,
// observers (stop, interrupt, writer, progress), errors at the start, divergences counted.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "../core/recording_reporter.hpp"
#include "../mcmc/test_models.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {
namespace {

RunConfig small_config(int threads) {
  RunConfig c;
  c.num_chains = 3;
  c.num_threads = threads;
  c.num_warmup = 200;
  c.num_draws = 300;
  c.seed = 42;
  return c;
}

TEST(McmcRunChains, SameSeedIdenticalDrawsForOneAndTwoThreads) {
  const auto target = testing::correlated_gaussian();
  for (const SamplerConfig& sc : {SamplerConfig{NutsConfig{}}, SamplerConfig{AdaptiveMetropolisConfig{}}}) {
    const auto factory = make_sampler_factory(target, sc);
    InitialPointFn init = [&](int, Rng& rng) { return Vec(target->mean() + rng.normal_vector(3)); };
    const RunResult one = run_chains(small_config(1), factory, init);
    const RunResult two = run_chains(small_config(2), factory, init);
    ASSERT_EQ(one.num_chains(), 3);
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ(one.draws[c].rows(), 300);
      EXPECT_TRUE(one.draws[c] == two.draws[c]) << "chain " << c;  // bitwise
      EXPECT_TRUE(one.initial_points[c] == two.initial_points[c]);
      for (std::size_t i = 0; i < one.stats[c].size(); ++i) {
        EXPECT_EQ(one.stats[c][i].lp, two.stats[c][i].lp);
        EXPECT_EQ(one.stats[c][i].n_leapfrog, two.stats[c][i].n_leapfrog);
      }
    }
    EXPECT_FALSE(one.draws[0] == one.draws[1]);  // chains use different streams
    RunConfig other = small_config(2);
    other.seed = 43;
    EXPECT_FALSE(run_chains(other, factory, init).draws[0] == one.draws[0]);
  }
}

TEST(McmcRunChains, InitialPointsThinningAndShapes) {
  const auto target = testing::correlated_gaussian();
  const auto factory = make_sampler_factory(target, NutsConfig{});
  RunConfig c = small_config(2);
  c.num_draws = 101;
  c.thin = 10;
  const RunResult one = run_chains(c, factory, target->mean());
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(one.draws[k].rows(), 11);
    EXPECT_EQ(one.stats[k].size(), 11u);
    EXPECT_EQ(one.warmup_stats[k].size(), 200u);
    EXPECT_TRUE(one.initial_points[k] == target->mean());
  }
  EXPECT_EQ(one.coordinate(2).rows(), 11);
  EXPECT_EQ(one.coordinate(2).cols(), 3);
  EXPECT_EQ(one.coordinate(2)(4, 1), one.draws[1](4, 2));
  EXPECT_EQ(one.pooled().rows(), 33);
  EXPECT_EQ(one.statistic([](const DrawStats& s) { return s.lp; })(3, 2), one.stats[2][3].lp);
  std::vector<Vec> each{target->mean(), target->mean() * 0.5, target->mean() * 2.0};
  const RunResult per_chain = run_chains(c, factory, each);
  EXPECT_TRUE(per_chain.initial_points[1] == each[1]);
  each.pop_back();
  EXPECT_THROW(run_chains(c, factory, each), std::invalid_argument);
  c.thin = 0;
  EXPECT_THROW(run_chains(c, factory, target->mean()), std::invalid_argument);
}

/// N(0, I) with log density -inf where x0 > 1.5.
class Wall : public LogDensity {
 public:
  Index dim() const override { return 2; }
  double log_density_and_grad(const Vec& t, Vec& g) const override {
    g = -t;
    return t[0] > 1.5 ? -std::numeric_limits<double>::infinity() : -0.5 * t.squaredNorm();
  }
};

TEST(McmcRunChains, NonFiniteStartIsAClearErrorAndDivergencesAreCounted) {
  const auto wall = std::make_shared<Wall>();
  const auto factory = make_sampler_factory(wall, NutsConfig{});
  RunConfig c = small_config(2);
  std::vector<Vec> starts(3, Vec::Zero(2));
  starts[1][0] = 3.0;
  try {
    run_chains(c, factory, starts);
    FAIL() << "no exception";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("chain 1"), std::string::npos) << what;
    EXPECT_NE(what.find("not finite"), std::string::npos) << what;
  }
  // The wall makes trajectories diverge mid-run: counted, never an exception, draws stay finite.
  NutsConfig fixed;
  fixed.kernel.step_size = 0.9;
  fixed.warmup.adapt_step_size = false;
  fixed.warmup.metric = MetricAdaptation::None;
  const RunResult r = run_chains(c, make_sampler_factory(wall, fixed), Vec(Vec::Zero(2)));
  long counted = 0;
  for (const auto& chain : r.stats)
    for (const auto& s : chain) counted += s.is_divergent;
  EXPECT_GT(r.num_divergent(), 10);
  EXPECT_EQ(r.num_divergent(), counted);
  for (const auto& d : r.draws) {
    EXPECT_TRUE(d.allFinite());
    EXPECT_LE(d.col(0).maxCoeff(), 1.5);
  }
}

/// Raises SIGINT from chain 0 at a given iteration (as Ctrl-C would).
class RaiseSigint : public Observer {
 public:
  explicit RaiseSigint(long at) : at_(at) {}
  ObserverAction on_iteration(const IterationEvent& e) override {
    if (e.chain == 0 && e.iteration == at_) std::raise(SIGINT);
    return ObserverAction::Continue;
  }

 private:
  long at_;
};

TEST(McmcRunChains, InterruptKeepsTheDrawsMadeSoFar) {
  const auto target = testing::correlated_gaussian();
  const auto factory = make_sampler_factory(target, NutsConfig{});
  RunConfig c = small_config(1);  // one thread: chain 0 runs first, the others never start
  c.num_draws = 1000;
  RaiseSigint raise(250);  // 50 draws into sampling
  InterruptObserver interrupt;
  const RunResult r = run_chains(c, factory, target->mean(), {&raise, &interrupt});
  EXPECT_TRUE(interrupt.interrupted());
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.draws[0].rows(), 51);  // iterations 200..250 kept
  EXPECT_EQ(r.stats[0].size(), 51u);
  EXPECT_TRUE(r.draws[0].allFinite());
  // Chains that never started are left out, so chain 0's draws are kept (not cut to 0).
  EXPECT_EQ(r.draws[1].rows(), 0);
  EXPECT_TRUE(r.in_part(0));
  EXPECT_FALSE(r.in_part(1));
  EXPECT_FALSE(r.in_part(2));
  EXPECT_EQ(r.min_draws(), 51);
  EXPECT_EQ(r.pooled().rows(), 51);
  // The handler was restored: a later run is not interrupted.
  const RunResult again = run_chains(small_config(2), factory, target->mean(), {&interrupt});
  EXPECT_FALSE(again.interrupted);
  EXPECT_FALSE(interrupt.interrupted());
  // Two threads: every chain stops cleanly with what it has.
  c.num_threads = 2;
  const RunResult r2 = run_chains(c, factory, target->mean(), {&raise, &interrupt});
  EXPECT_TRUE(r2.interrupted);
  EXPECT_EQ(r2.draws[0].rows(), 51);
  for (const auto& d : r2.draws) EXPECT_TRUE(d.allFinite());  // (how far chains 1, 2 got depends on timing)
}

TEST(McmcRunChains, AStoppedRunDoesNotStopTheRunsAfterIt) {
  // A stop requested in an earlier run's scope (Ctrl-C, SIGTERM) is that run's: a later run without
  // an InterruptObserver, as a library caller may start one, runs all its chains. (Before, the
  // flag outlived its scope and the later run began no chain: 0 draws.)
  const auto target = testing::correlated_gaussian();
  const auto factory = make_sampler_factory(target, MalaConfig{});
  {
    const StopSignalScope scope;
    request_stop();
    EXPECT_TRUE(stop_requested());
  }
  EXPECT_FALSE(stop_requested());
  const RunResult r = run_chains(small_config(2), factory, target->mean(), {});
  EXPECT_FALSE(r.interrupted);
  for (const auto& d : r.draws) EXPECT_EQ(d.rows(), 300);
}

TEST(McmcRunChains, StopWriterAndProgressObservers) {
  const auto target = testing::correlated_gaussian();
  const auto factory = make_sampler_factory(target, MalaConfig{});
  RunConfig c = small_config(2);
  std::vector<std::vector<Vec>> written(3);
  DrawWriterObserver writer([&](int chain, long index, const Vec& x, const DrawStats&) {
    EXPECT_EQ(index, static_cast<long>(written[chain].size()));
    written[chain].push_back(x);
  });
  const auto updates = std::make_shared<testing::RecordingReporter>();
  ProgressObserver progress(updates, "mala");
  const RunResult r = run_chains(c, factory, target->mean(), {&writer, &progress});
  // One final update, counting every iteration of the 3 chains (warmup 200 + 300 draws each).
  ASSERT_FALSE(updates->updates.empty());
  EXPECT_TRUE(updates->updates.back().finished);
  EXPECT_EQ(updates->updates.back().done, 3 * (c.num_warmup + c.num_draws));
  EXPECT_EQ(updates->updates.back().total, 3 * (c.num_warmup + c.num_draws));
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(written[k].size(), 300u);
    EXPECT_TRUE(written[k][17] == r.draws[k].row(17).transpose());
  }
  StopWhenObserver stop([](const IterationEvent& e) { return e.chain == 2 && e.iteration == 99; });
  c.num_threads = 1;
  const RunResult stopped = run_chains(c, factory, target->mean(), {&stop});
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.draws[0].rows(), 300);  // chains 0 and 1 had finished
  EXPECT_EQ(stopped.draws[2].rows(), 0);    // chain 2 stopped during warmup
}

}  // namespace
}  // namespace uqnn
