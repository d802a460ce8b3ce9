// The default optimiser of a posterior mode (full-batch L-BFGS through "auto") and the convergence
// report every optimiser gives: at the defaults, on an ill-conditioned Bayesian linear regression
// whose MAP is known in closed form.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/optim/objective.hpp"
#include "uqnn/optim/trainer.hpp"
#include "unit/mcmc/test_models.hpp"

namespace uqnn {
namespace {

IndexVec all_rows(Index n) {
  IndexVec rows(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = i;
  return rows;
}

TEST(Lbfgs, TheDefaultMapOfAnIllConditionedRegressionEqualsTheClosedFormTo1e8PosteriorSds) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  NegativeLogPosteriorObjective objective(target.posterior);
  ASSERT_EQ(chosen_optimizer(objective, TrainParams{}), "lbfgs");
  Rng rng(1);
  const TrainResult r = train(objective, Vec::Zero(5), TrainParams{}, rng);
  const ConvergenceReport& c = r.convergence;
  EXPECT_EQ(c.optimizer, "lbfgs");
  EXPECT_TRUE(c.converged) << c.stop_reason;
  EXPECT_LE(c.gradient_norm, TrainParams{}.gradient_tolerance);
  EXPECT_LT(c.iterations, 200);
  // The posterior is Gaussian: its mode is its mean. The error is measured in posterior sds: in the
  // prior-dominated coordinate (sd 2.5, per-point curvature 0.004) moving by 1e-8 changes the
  // objective by 2e-19, far below its rounding, so no line search on f can place it closer in
  // absolute terms (measured: 1.4e-8 there, 6e-9 sd; 3e-9 in the others).
  const Vec sds = target.covariance.diagonal().cwiseSqrt();
  EXPECT_LT((r.best_theta - target.mean).cwiseQuotient(sds).cwiseAbs().maxCoeff(), 1e-8)
      << (r.best_theta - target.mean).transpose();
}

TEST(Lbfgs, AdamAtItsDefaultsReportsWhetherItsLossLevelledOff) {
  // The same regression with Adam (lr 1e-2, up to 2000 epochs, the window monitor): the report has
  // the full gradient's norm at the kept point, and "converged" exactly when the monitor stopped it.
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  NegativeLogPosteriorObjective objective(target.posterior);
  TrainParams p;
  p.optimizer.name = "adam";
  Rng rng(1);
  const TrainResult r = train(objective, Vec::Zero(5), p, rng);
  Vec grad(5);
  objective.loss_and_grad(r.best_theta, all_rows(40), grad);
  EXPECT_EQ(r.convergence.optimizer, "adam");
  EXPECT_NEAR(r.convergence.gradient_norm, grad.norm(), 1e-12 * std::max(1.0, grad.norm()));
  EXPECT_EQ(r.convergence.iterations, static_cast<Index>(r.history.epoch.size()));
  EXPECT_EQ(r.convergence.iterations, p.epochs);  // every epoch by default
}

TEST(Lbfgs, AnEvaluationCapIsReportedAsNotConverged) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  NegativeLogPosteriorObjective objective(target.posterior);
  TrainParams p;
  p.epochs = 2;
  Rng rng(1);
  const TrainResult r = train(objective, Vec::Zero(5), p, rng);
  EXPECT_FALSE(r.convergence.converged);
  EXPECT_GT(r.convergence.gradient_norm, p.gradient_tolerance);
  EXPECT_EQ(r.convergence.stop_reason, "evaluation limit");
  EXPECT_EQ(r.convergence.iterations, 2);
}

TEST(Lbfgs, AutoIsAdamOnMinibatchesWithEarlyStoppingOrForALossWithoutAPrior) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  NegativeLogPosteriorObjective posterior_mode(target.posterior);
  TrainParams p;
  p.batch_size = 10;
  EXPECT_EQ(chosen_optimizer(posterior_mode, p), "adam");
  p.batch_size = 40;  // a batch of every row is a full batch
  EXPECT_EQ(chosen_optimizer(posterior_mode, p), "lbfgs");
  p.early_stopping_patience = 5;
  EXPECT_EQ(chosen_optimizer(posterior_mode, p), "adam");
  MeanSquaredErrorObjective mse(target.posterior->model_ptr(), target.posterior->inputs(), target.posterior->targets());
  EXPECT_EQ(chosen_optimizer(mse, TrainParams{}), "adam");
}

TEST(Lbfgs, ExplicitLbfgsOnMinibatchesIsAnError) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  NegativeLogPosteriorObjective objective(target.posterior);
  TrainParams p;
  p.optimizer.name = "lbfgs";
  p.batch_size = 10;
  Rng rng(1);
  EXPECT_THROW(train(objective, Vec::Zero(5), p, rng), InputError);
}

TEST(Lbfgs, ACallbackStopKeepsTheBestPointEvaluated) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  NegativeLogPosteriorObjective objective(target.posterior);
  Rng rng(1);
  Index calls = 0;
  const TrainResult r = train(objective, Vec::Zero(5), TrainParams{}, rng, {},
                              [&calls](Index, double, double) { return ++calls < 5; });
  EXPECT_EQ(calls, 5);
  EXPECT_FALSE(r.convergence.converged);
  ASSERT_EQ(r.history.train_loss.size(), 5u);
  const double best = *std::min_element(r.history.train_loss.begin(), r.history.train_loss.end());
  Vec grad(5);
  EXPECT_DOUBLE_EQ(objective.loss_and_grad(r.best_theta, all_rows(40), grad), best);
}

/// 0.5 sum_k a_k (theta_k - 1)^2 with curvatures 100x apart, for the first-order monitor.
class IllConditionedQuadratic : public Objective {
 public:
  Index dim() const override { return 2; }
  Index num_data() const override { return 1; }
  double loss_and_grad(const Vec& theta, const IndexVec&, Vec& grad) const override {
    const Vec d = theta - Vec::Ones(2);
    grad = a_.cwiseProduct(d);
    return 0.5 * d.dot(grad);
  }
  Vec a_ = (Vec(2) << 1.0, 100.0).finished();
};

TEST(AdamMonitor, ByDefaultEveryEpochRunsAndTheEndIsJudged) {
  IllConditionedQuadratic q;
  TrainParams p;  // auto is Adam here: the objective does not ask for an exact minimum
  p.epochs = 3000;
  Rng rng(1);
  const TrainResult r = train(q, Vec::Zero(2), p, rng);
  EXPECT_EQ(r.convergence.optimizer, "adam");
  EXPECT_EQ(r.convergence.iterations, 3000);
  EXPECT_TRUE(r.convergence.converged) << r.convergence.stop_reason;
  EXPECT_NE(r.convergence.stop_reason.find("levelled off"), std::string::npos) << r.convergence.stop_reason;
}

TEST(AdamMonitor, StopsOnceTheLossLevelsOffWhenAskedAndSaysSo) {
  IllConditionedQuadratic q;
  TrainParams p;
  p.stop_when_converged = true;
  p.epochs = 100000;
  Rng rng(1);
  const TrainResult r = train(q, Vec::Zero(2), p, rng);
  const ConvergenceReport& c = r.convergence;
  EXPECT_TRUE(c.converged) << c.stop_reason;
  EXPECT_EQ(c.stop_reason, "training loss levelled off");
  EXPECT_LT(c.iterations, p.epochs);
  EXPECT_GE(c.iterations, 2 * p.convergence_window);
  // The rule it stopped on, recomputed from the history: the last two windows' mean losses.
  const auto& loss = r.history.train_loss;
  const auto w = static_cast<std::ptrdiff_t>(p.convergence_window);
  double last = 0, before = 0;
  for (std::ptrdiff_t i = 0; i < w; ++i) {
    last += loss[loss.size() - 1 - static_cast<std::size_t>(i)] / static_cast<double>(w);
    before += loss[loss.size() - 1 - static_cast<std::size_t>(w + i)] / static_cast<double>(w);
  }
  EXPECT_LE(std::abs(last - before), p.convergence_tolerance * std::abs(last));
  // Levelled off near the minimum (loss 0), not on the way to it.
  Vec grad(2);
  EXPECT_LT(q.loss_and_grad(r.best_theta, {}, grad), 1e-4);
}

TEST(AdamMonitor, AnEpochCapBeforeTheLossLevelsOffIsNotConverged) {
  IllConditionedQuadratic q;
  TrainParams p;
  p.epochs = 150;  // fewer than two windows: the monitor cannot fire
  Rng rng(1);
  const TrainResult r = train(q, Vec::Zero(2), p, rng);
  EXPECT_FALSE(r.convergence.converged);
  EXPECT_EQ(r.convergence.iterations, 150);
  EXPECT_EQ(r.convergence.stop_reason, "epoch limit");
}

}  // namespace
}  // namespace uqnn
