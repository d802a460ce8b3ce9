// Chains in lockstep (run/lockstep.hpp): requests batched across fibers, errors delivered, and
// NUTS through the lane kernel at its defaults on the ill-conditioned regression's exact posterior,
// with draws that do not depend on the thread count or the grouping; SGLD's minibatch gradients
// batched the same way.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "../mcmc/test_models.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/sgmcmc/sgld.hpp"
#include "uqnn/core/randomized_log_density.hpp"
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

/// A Posterior that records the sizes of the minibatch batches it is asked for.
class RecordingMinibatches : public StochasticLogDensity {
 public:
  explicit RecordingMinibatches(std::shared_ptr<const Posterior> posterior) : posterior_(std::move(posterior)) {}
  Index dim() const override { return posterior_->dim(); }
  Index num_data() const override { return posterior_->num_data(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override { return posterior_->log_density_and_grad(theta, grad); }
  double minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override {
    return posterior_->minibatch_log_density_and_grad(theta, batch, grad);
  }
  void minibatch_log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<const IndexVec* const> batches,
                                            std::span<Vec* const> grads, std::span<double> values) const override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      batch_sizes.push_back(thetas.size());
    }
    posterior_->minibatch_log_density_and_grad_batch(thetas, batches, grads, values);
  }
  mutable std::vector<std::size_t> batch_sizes;

 private:
  std::shared_ptr<const Posterior> posterior_;
  mutable std::mutex mutex_;
};

TEST(Lockstep, SgldMinibatchGradientsBatchAndKeepTheDrawsOfARunWithoutLockstep) {
  const auto target = testing::ill_conditioned_regression();
  const auto recording = std::make_shared<RecordingMinibatches>(target.posterior);
  sgmcmc::SgldParams params;
  params.schedule = sgmcmc::StepSizeSchedule::constant(2e-4);
  params.batch_size = 10;  // of 40 rows
  const auto sgld = [params](std::shared_ptr<const LogDensity> density) -> SamplerFactory {
    return [density, params] { return std::make_unique<sgmcmc::SgldSampler>(density, params); };
  };
  RunConfig run;
  run.num_chains = 4;
  run.num_threads = 1;
  run.num_warmup = 200;
  run.num_draws = 2000;
  run.seed = 7;
  const InitialPointFn init = [&](int, Rng& rng) { return Vec(target.mean + 0.5 * rng.normal_vector(target.mean.size())); };
  const RunResult plain = run_chains(run, sgld(target.posterior), init);
  run.lockstep = true;
  const auto lockstep = make_lockstep_density(recording);
  ASSERT_NE(dynamic_cast<const StochasticLogDensity*>(lockstep.get()), nullptr);
  const RunResult one = run_chains(run, sgld(lockstep), init);
  // Every minibatch gradient of the 4 chains went through the lane kernel as one batch of 4.
  ASSERT_EQ(recording->batch_sizes.size(), static_cast<std::size_t>(run.num_warmup + run.num_draws));
  for (const std::size_t size : recording->batch_sizes) EXPECT_EQ(size, 4u);
  // The same minibatches, scale and noise: the chains differ by the kernels' rounding only. (SGLD's
  // own accuracy against the exact posterior is sgld_test's.)
  for (int c = 0; c < 4; ++c) {
    const Mat& a = one.draws[static_cast<std::size_t>(c)];
    const Mat& b = plain.draws[static_cast<std::size_t>(c)];
    ASSERT_EQ(a.rows(), b.rows());
    EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-9) << "chain " << c;
  }
  for (const int threads : {2, 3}) {
    run.num_threads = threads;
    const RunResult other = run_chains(run, sgld(lockstep), init);
    for (int c = 0; c < 4; ++c)
      EXPECT_TRUE(one.draws[static_cast<std::size_t>(c)] == other.draws[static_cast<std::size_t>(c)]) << threads << " threads, chain " << c;
  }
}

/// A randomized density (the functional prior's kind): lockstep cannot pass its Rng on.
class RandomizedGaussian : public RandomizedLogDensity {
 public:
  Index dim() const override { return 1; }
  Index num_data() const override { return 1; }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override {
    grad = -theta;
    return -0.5 * theta.squaredNorm();
  }
  double minibatch_log_density_and_grad(const Vec& theta, const IndexVec&, Vec& grad) const override { return log_density_and_grad(theta, grad); }
  double randomized_log_density_and_grad(Rng&, const Vec& theta, const IndexVec*, Vec& grad) const override {
    return log_density_and_grad(theta, grad);
  }
};

TEST(Lockstep, ARandomizedDensityIsRefusedAndAPlainOneStaysPlain) {
  EXPECT_THROW(make_lockstep_density(std::make_shared<RandomizedGaussian>()), InputError);
  const auto plain = make_lockstep_density(std::make_shared<RecordingGaussian>(2));
  EXPECT_NE(dynamic_cast<const LockstepLogDensity*>(plain.get()), nullptr);
  EXPECT_EQ(dynamic_cast<const StochasticLogDensity*>(plain.get()), nullptr);
}

}  // namespace
}  // namespace uqnn
