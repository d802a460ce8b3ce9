#include <gtest/gtest.h>

#include <cmath>

#include "uqnn/data/synthetic.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/optim/trainer.hpp"

namespace uqnn {
namespace {

/// 0.5 (theta - c)^T diag(a) (theta - c) as an objective over 4 identical "data points".
class DiagonalQuadratic : public Objective {
 public:
  Index dim() const override { return 3; }
  Index num_data() const override { return 4; }
  double loss_and_grad(const Vec& theta, const IndexVec&, Vec& grad) const override {
    const Vec d = theta - c_;
    grad = a_.cwiseProduct(d);
    return 0.5 * d.dot(grad);
  }
  Vec c_ = (Vec(3) << 1.0, -2.0, 0.5).finished();
  Vec a_ = (Vec(3) << 1.0, 10.0, 0.1).finished();
};

TEST(Trainer, AdamAndSgdMinimiseAQuadratic) {
  DiagonalQuadratic q;
  for (const std::string name : {"adam", "sgd"}) {
    TrainParams p;
    p.optimizer.name = name;
    p.optimizer.learning_rate = name == "adam" ? 0.05 : 0.15;
    p.optimizer.momentum = name == "sgd" ? 0.5 : 0.0;
    p.epochs = 3000;
    p.convergence_window = 0;  // every epoch: this checks the update rules, not the monitor
    Rng rng(1);
    const auto r = train(q, Vec::Zero(3), p, rng);
    EXPECT_LT((r.last_theta - q.c_).norm(), 1e-4) << name;
  }
}

TEST(Trainer, WeightDecayShrinksTheMinimiser) {
  // With decay lambda the stationary point solves a (theta - c) + lambda theta = 0.
  DiagonalQuadratic q;
  TrainParams p;
  p.optimizer.name = "sgd";
  p.optimizer.learning_rate = 0.1;
  p.optimizer.weight_decay = 0.5;
  p.epochs = 5000;
  p.convergence_window = 0;
  Rng rng(1);
  const auto r = train(q, Vec::Zero(3), p, rng);
  const Vec expected = q.a_.cwiseProduct(q.c_).cwiseQuotient(q.a_ + Vec::Constant(3, 0.5));
  EXPECT_LT((r.last_theta - expected).norm(), 1e-6);
}

TEST(Schedule, StepExponentialAndPlateauFollowPyTorch) {
  ScheduleParams step;
  step.name = "step";
  step.step_every = 10;
  step.gamma = 0.1;
  LearningRateSchedule s(step, 1.0);
  EXPECT_DOUBLE_EQ(s.next(9, 0), 1.0);
  EXPECT_DOUBLE_EQ(s.next(10, 0), 0.1);
  EXPECT_NEAR(s.next(25, 0), 0.01, 1e-15);
  ScheduleParams ex;
  ex.name = "exponential";
  ex.gamma = 0.9;
  LearningRateSchedule e(ex, 2.0);
  EXPECT_NEAR(e.next(3, 0), 2.0 * 0.729, 1e-15);
  ScheduleParams pl;
  pl.name = "plateau";
  pl.patience = 2;
  pl.factor = 0.5;
  LearningRateSchedule p(pl, 1.0);
  p.next(0, 1.0);  // best = 1
  EXPECT_DOUBLE_EQ(p.next(1, 1.0), 1.0);  // 1 bad epoch
  EXPECT_DOUBLE_EQ(p.next(2, 1.0), 1.0);  // 2 bad epochs = patience
  EXPECT_DOUBLE_EQ(p.next(3, 1.0), 0.5);  // 3 > patience: reduce
  EXPECT_DOUBLE_EQ(p.next(4, 0.2), 0.5);  // improvement resets
}

TEST(Trainer, KeepsTheBestValidationSnapshotAndStopsEarly) {
  DiagonalQuadratic q;
  TrainParams p;
  p.optimizer.learning_rate = 0.05;
  p.epochs = 1000;
  p.early_stopping_patience = 5;
  Rng rng(1);
  // A validation loss that is best at theta[0] == 0.3 (reached on the way to 1): training must stop
  // early and return the snapshot closest to it.
  const auto val = [](const Vec& t) { return std::abs(t[0] - 0.3); };
  const auto r = train(q, Vec::Zero(3), p, rng, val);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_LT(static_cast<Index>(r.history.epoch.size()), 1000);
  EXPECT_LT(std::abs(r.best_theta[0] - 0.3), 0.05);
  EXPECT_DOUBLE_EQ(r.best_validation_loss, val(r.best_theta));
  double min_val = 1e9;
  for (double v : r.history.validation_loss) min_val = std::min(min_val, v);
  EXPECT_DOUBLE_EQ(min_val, r.best_validation_loss);
}

TEST(Trainer, FitsSineCaseTwoWithAOneTenTenOneTanhNetwork) {
  // Issue requirement: training RMSE below 0.1 of the target's standard deviation.
  const Dataset data = sine_case_ii(20, 0.05);
  const double mean = data.targets.mean();
  const double sd = std::sqrt((data.targets.array() - mean).square().mean());
  auto model = std::make_shared<Mlp>(MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot});
  const Mat T = (data.targets.array() - mean) / sd;  // standardised targets, as the CLI does
  MeanSquaredErrorObjective mse(model, data.inputs, T);
  TrainParams p;
  p.optimizer.learning_rate = 0.01;
  p.epochs = 6000;
  Rng rng(3);
  const auto r = train(mse, model->initial_params(rng), p, rng);
  const Mat pred = model->forward(r.best_theta, data.inputs).array() * sd + mean;
  const double rmse = std::sqrt((pred - data.targets).squaredNorm() / 20.0);
  EXPECT_LT(rmse, 0.1 * sd) << "rmse " << rmse << " sd " << sd;
}

TEST(Trainer, MinibatchesCoverEveryExampleOncePerEpoch) {
  class Counting : public Objective {
   public:
    Index dim() const override { return 1; }
    Index num_data() const override { return 10; }
    double loss_and_grad(const Vec&, const IndexVec& batch, Vec& grad) const override {
      for (Index i : batch) ++counts[static_cast<std::size_t>(i)];
      grad = Vec::Zero(1);
      return 0.0;
    }
    mutable std::vector<int> counts = std::vector<int>(10, 0);
  } counting;
  TrainParams p;
  p.batch_size = 3;
  p.epochs = 4;
  Rng rng(1);
  train(counting, Vec::Zero(1), p, rng);
  // 4 epochs, plus the one full-batch evaluation of the final gradient norm for the report.
  for (int c : counting.counts) EXPECT_EQ(c, 4 + 1);
}

}  // namespace
}  // namespace uqnn

namespace uqnn {
namespace {

TEST(Optimizer, AdamwDecaysTheWeightsOutsideTheMoments) {
  // torch.optim.AdamW, first step: theta <- theta (1 - lr wd), then the bias-corrected Adam step
  // lr m_hat / (sqrt(v_hat) + eps) = lr g / (|g| + eps). Adam with L2 would instead feed wd theta
  // into the moments.
  OptimizerParams p;
  p.name = "adamw";
  p.learning_rate = 0.1;
  p.weight_decay = 0.01;
  Vec theta(2), grad(2);
  theta << 1.0, -2.0;
  grad << 0.5, 0.1;
  make_optimizer(p, 2)->step(theta, grad, p.learning_rate);
  EXPECT_NEAR(theta[0], 1.0 * (1 - 0.001) - 0.1 * 0.5 / (0.5 + 1e-8), 1e-12);
  EXPECT_NEAR(theta[1], -2.0 * (1 - 0.001) - 0.1 * 0.1 / (0.1 + 1e-8), 1e-12);
  p.name = "adam";
  Vec coupled(2);
  coupled << 1.0, -2.0;
  make_optimizer(p, 2)->step(coupled, grad, p.learning_rate);
  EXPECT_GT((coupled - theta).cwiseAbs().maxCoeff(), 1e-4) << "adam's L2 decay is not adamw's";
}

}  // namespace
}  // namespace uqnn
