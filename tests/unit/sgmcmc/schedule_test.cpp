// Step-size schedules: hand-computed values and validation; minibatch epochs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "uqnn/mcmc/sgmcmc/gradient_estimator.hpp"
#include "uqnn/mcmc/sgmcmc/step_size_schedule.hpp"
#include "targets.hpp"

namespace uqnn::sgmcmc {
namespace {

TEST(StepSizeSchedule, ConstantValues) {
  const auto s = StepSizeSchedule::constant(3e-4);
  EXPECT_EQ(s(0), 3e-4);
  EXPECT_EQ(s(123456), 3e-4);
  EXPECT_EQ(s.max_step_size(), 3e-4);
}

TEST(StepSizeSchedule, PolynomialValues) {
  // a (b + t)^-gamma: 0.01 * 10^-0.5 at t = 0; 0.01 * 100^-0.5 = 0.001 at t = 90.
  const auto s = StepSizeSchedule::polynomial(0.01, 10.0, 0.5);
  EXPECT_NEAR(s(0), 0.0031622776601683794, 1e-17);
  EXPECT_NEAR(s(90), 0.001, 1e-17);
  const auto w = StepSizeSchedule::polynomial(2.0, 1.0, 1.0);  // 2 / (1 + t)
  EXPECT_DOUBLE_EQ(w(3), 0.5);
  EXPECT_DOUBLE_EQ(w(999), 0.002);
}

TEST(StepSizeSchedule, StepDecayValues) {
  // seed 002 App. E: 1e-3, times 0.9 every 5000 iterations.
  const auto s = StepSizeSchedule::step_decay(1e-3, 0.9, 5000);
  EXPECT_DOUBLE_EQ(s(0), 1e-3);
  EXPECT_DOUBLE_EQ(s(4999), 1e-3);
  EXPECT_DOUBLE_EQ(s(5000), 9e-4);
  EXPECT_DOUBLE_EQ(s(9999), 9e-4);
  EXPECT_DOUBLE_EQ(s(10000), 1e-3 * 0.81);
  EXPECT_DOUBLE_EQ(s(14999), 1e-3 * 0.81);
  EXPECT_DOUBLE_EQ(s(15000), 1e-3 * 0.729);
}

TEST(StepSizeSchedule, ValidateNamesParameter) {
  auto expect_bad = [](const StepSizeSchedule& s, const std::string& name) {
    try {
      s.validate();
      ADD_FAILURE() << "no exception for " << name;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  StepSizeSchedule s;
  s.step_size = 0.0;
  expect_bad(s, "schedule.step_size");
  s.step_size = std::nan("");
  expect_bad(s, "schedule.step_size");
  StepSizeSchedule p;
  p.kind = StepSizeSchedule::Kind::Polynomial;
  p.gamma = 1.5;
  expect_bad(p, "schedule.gamma");
  p.gamma = 0.55;
  p.b = 0.0;
  expect_bad(p, "schedule.b");
  p.b = 1.0;
  p.a = -1.0;
  expect_bad(p, "schedule.a");
  StepSizeSchedule d;
  d.kind = StepSizeSchedule::Kind::StepDecay;
  d.factor = 0.0;
  expect_bad(d, "schedule.factor");
  d.factor = 1.1;
  expect_bad(d, "schedule.factor");
  d.factor = 0.9;
  d.every = 0;
  expect_bad(d, "schedule.every");
  EXPECT_THROW(StepSizeSchedule::constant(-1.0), std::invalid_argument);
  EXPECT_THROW(StepSizeSchedule::constant(1.0)(-1), std::invalid_argument);
}

TEST(GradientEstimator, EpochsWithoutReplacement) {
  auto lr = testing::make_linear_regression(10);
  GradientEstimator estimator(lr.posterior, 3);
  ASSERT_TRUE(estimator.uses_minibatches());
  Rng rng(5);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::set<Index> seen;
    for (int b = 0; b < 3; ++b) {  // 3 batches of 3 per epoch of 10; the 10th index is dropped
      const IndexVec batch = estimator.next_batch(rng);
      ASSERT_EQ(batch.size(), 3u);
      for (Index i : batch) {
        EXPECT_TRUE(i >= 0 && i < 10);
        EXPECT_TRUE(seen.insert(i).second) << "index " << i << " repeated within epoch " << epoch;
      }
    }
    EXPECT_EQ(seen.size(), 9u);
  }
  // The minibatch estimate equals the posterior's own estimate on the drawn batch.
  GradientEstimator a(lr.posterior, 4), b(lr.posterior, 4);
  Rng ra(9), rb(9);
  const Vec theta = Vec::Constant(3, 0.2);
  Vec ga, gb;
  const double la = a.estimate(ra, theta, ga);
  const IndexVec batch = b.next_batch(rb);
  const double lb = lr.posterior->minibatch_log_density_and_grad(theta, batch, gb);
  EXPECT_EQ(la, lb);
  EXPECT_EQ(ga, gb);
}

TEST(GradientEstimator, FullBatchAndErrors) {
  auto lr = testing::make_linear_regression(10);
  EXPECT_FALSE(GradientEstimator(lr.posterior, 0).uses_minibatches());
  EXPECT_FALSE(GradientEstimator(lr.posterior, 10).uses_minibatches());
  auto gauss = std::make_shared<testing::IndependentGaussian>(Vec::Zero(2), Vec::Ones(2));
  EXPECT_THROW(GradientEstimator(gauss, 5), std::invalid_argument);
  EXPECT_THROW(GradientEstimator(lr.posterior, -1), std::invalid_argument);
  GradientEstimator full(lr.posterior, 0);
  Rng rng(1);
  Vec g, g_exact;
  const Vec theta = Vec::Constant(3, -0.1);
  EXPECT_EQ(full.estimate(rng, theta, g), lr.posterior->log_density_and_grad(theta, g_exact));
  EXPECT_EQ(g, g_exact);
  // Sanity of the exact posterior used by the statistical tests: grad log p = -A (theta - mean).
  EXPECT_LT((g_exact + lr.precision * (theta - lr.exact_mean)).norm(), 1e-8 * g_exact.norm());
}

}  // namespace
}  // namespace uqnn::sgmcmc
