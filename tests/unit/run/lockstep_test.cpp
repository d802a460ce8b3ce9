// Chains in lockstep (run/lockstep.hpp): requests batched across fibers, errors delivered, and
// NUTS through the lane kernel at its defaults on the ill-conditioned regression's exact posterior,
// with draws that do not depend on the thread count or the grouping.
#include <gtest/gtest.h>

#include <atomic>

#include "../mcmc/test_models.hpp"
#include "uqnn/run/lockstep.hpp"

namespace uqnn {
namespace {

/// log N(theta | 0, I) that records the sizes of the batches it is asked for.
class RecordingGaussian : public LogDensity {
 public:
  explicit RecordingGaussian(Index dim) : dim_(dim) {}
  Index dim() const override { return dim_; }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override {
    if (theta.size() != dim_) throw std::invalid_argument("wrong size");
    grad = -theta;
    return -0.5 * theta.squaredNorm();
  }
  void log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<Vec* const> grads,
                                  std::span<double> values) const override {
    batch_sizes.push_back(thetas.size());
    LogDensity::log_density_and_grad_batch(thetas, grads, values);
  }
  mutable std::vector<std::size_t> batch_sizes;

 private:
  Index dim_;
};

TEST(Lockstep, TheWaitingTasksRequestsAreEvaluatedAsOneBatch) {
  auto inner = std::make_shared<RecordingGaussian>(2);
  const LockstepLogDensity density(inner);
  std::vector<double> results(4, 0.0);
  std::vector<std::function<void()>> tasks;
  for (int t = 0; t < 4; ++t)
    tasks.push_back([&, t] {
      for (int k = 0; k <= t; ++k) {  // task t asks t + 1 times
        Vec theta = Vec::Constant(2, t + k), grad;
        results[static_cast<std::size_t>(t)] += density.log_density_and_grad(theta, grad);
        EXPECT_TRUE(grad == -theta);
      }
    });
  run_in_lockstep(tasks);
  for (int t = 0; t < 4; ++t) {
    double expected = 0;
    for (int k = 0; k <= t; ++k) expected += -(t + k) * (t + k);  // -0.5 * 2 (t + k)^2
    EXPECT_EQ(results[static_cast<std::size_t>(t)], expected) << "task " << t;
  }
  EXPECT_EQ(inner->batch_sizes, (std::vector<std::size_t>{4, 3, 2, 1}));
  // Outside a lockstep run: a batch of one.
  Vec grad;
  EXPECT_EQ(density.log_density_and_grad(Vec::Ones(2), grad), -1.0);
  EXPECT_EQ(inner->batch_sizes.back(), 1u);
}

TEST(Lockstep, ErrorsReachTheirTasksAndEveryTaskEnds) {
  auto inner = std::make_shared<RecordingGaussian>(2);
  const LockstepLogDensity density(inner);
  std::atomic<int> ended{0};
  std::vector<std::function<void()>> tasks;
  for (int t = 0; t < 3; ++t)
    tasks.push_back([&, t] {
      Vec grad;
      // Task 1 asks with the wrong size: the batch throws, and every task in it sees the error.
      Vec theta = Vec::Zero(t == 1 ? 3 : 2);
      try {
        density.log_density_and_grad(theta, grad);
      } catch (const std::invalid_argument&) {
        ++ended;
        if (t == 2) throw std::runtime_error("task 2 failed");
        return;
      }
      ++ended;
    });
  EXPECT_THROW(run_in_lockstep(tasks), std::runtime_error);
  EXPECT_EQ(ended.load(), 3);
}

RunConfig lockstep_run(int threads) {
  RunConfig run;
  run.num_chains = 4;
  run.num_threads = threads;
  run.num_warmup = testing::method_default("nuts", "warmup");
  run.num_draws = testing::method_default("nuts", "draws");
  run.seed = 3;
  run.lockstep = true;
  return run;
}

TEST(Lockstep, NutsAtItsDefaultsMatchesTheExactPosteriorWithDrawsIndependentOfThreads) {
  const auto target = testing::ill_conditioned_regression();
  const auto density = std::make_shared<LockstepLogDensity>(target.posterior);
  const auto factory = make_sampler_factory(density, NutsConfig{});
  const InitialPointFn init = [&](int, Rng& rng) { return Vec(target.mean + 0.5 * rng.normal_vector(target.mean.size())); };
  const RunResult one = run_chains(lockstep_run(1), factory, init);
  testing::expect_matches_gaussian(one, target.mean, target.covariance);
  for (const int threads : {2, 3}) {  // groups of (2, 2) and (1, 1, 2) chains
    const RunResult other = run_chains(lockstep_run(threads), factory, init);
    for (int c = 0; c < 4; ++c) EXPECT_TRUE(one.draws[static_cast<std::size_t>(c)] == other.draws[static_cast<std::size_t>(c)]) << threads << " threads, chain " << c;
  }
}

}  // namespace
}  // namespace uqnn
