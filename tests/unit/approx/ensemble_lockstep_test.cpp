// Ensemble and randomized-MAP members trained in lockstep (EnsembleParams::lockstep, issue 19 item 3):
// the members of a thread batch their gradients through the lane kernel, and each member's fit is
// the one it has alone (bitwise for any thread count; to rounding against training without lockstep).
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "unit/mcmc/test_models.hpp"
#include "uqnn/approx/ensemble.hpp"
#include "uqnn/data/synthetic.hpp"
#include "uqnn/nn/lockstep_model.hpp"
#include "uqnn/nn/mlp.hpp"

namespace uqnn {
namespace {

/// An Mlp that records how many members each lane pass on own inputs evaluates.
class RecordingMlp : public Mlp {
 public:
  using Mlp::Mlp;
  void value_and_gradient_lanes_on_own_inputs(std::span<const double* const> thetas, std::span<const Mat* const> inputs,
                                              std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                              std::span<double* const> grads) const override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      batch_sizes.push_back(thetas.size());
    }
    Mlp::value_and_gradient_lanes_on_own_inputs(thetas, inputs, losses, values, grads);
  }
  mutable std::vector<std::size_t> batch_sizes;

 private:
  mutable std::mutex mutex_;
};

double largest_difference(const std::vector<MemberFit>& a, const std::vector<MemberFit>& b) {
  double largest = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j) largest = std::max(largest, (a[j].theta - b[j].theta).cwiseAbs().maxCoeff());
  return largest;
}

// 5 members of 1-10-10-1 tanh on 40 points, each on its own 32 rows (delta 0.8) in minibatches of
// 10 (10, 10, 10, 2 per epoch): every gradient of a lockstep run is one pass for all 5 members.
TEST(EnsembleLockstep, EveryMinibatchGradientIsOnePassForAllMembersAndTheFitsStayTheirOwn) {
  const Dataset data = sine_case_ii(40, 0.05);
  auto model = std::make_shared<RecordingMlp>(MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot});
  for (const std::string loss : {"mse", "nll"}) {
    SCOPED_TRACE(loss);
    std::shared_ptr<const Likelihood> likelihood =
        loss == "mse" ? make_gaussian_likelihood(0.05) : make_learned_sigma_likelihood(0.3);
    const Posterior post(model, likelihood, GaussianPrior::isotropic(model->num_params(), 1.0), data.inputs, data.targets);
    EnsembleParams p;
    p.members = 5;
    p.data_fraction = 0.8;
    p.loss = loss;
    p.noise_holdout = 0;  // one training per member
    p.training.epochs = 40;
    p.training.batch_size = 10;
    p.training.optimizer.learning_rate = 0.01;
    p.threads = 1;
    p.lockstep = true;
    model->batch_sizes.clear();
    const auto one = fit_deep_ensemble(post, p, 7);
    // 40 epochs of 4 steps, then the kept point's full gradient for the convergence report.
    EXPECT_EQ(model->batch_sizes.size(), 40u * 4u + 1u);
    EXPECT_TRUE(std::all_of(model->batch_sizes.begin(), model->batch_sizes.end(), [](std::size_t s) { return s == 5; }));
    for (const Index threads : {2, 3}) {
      p.threads = threads;
      const auto other = fit_deep_ensemble(post, p, 7);
      for (std::size_t j = 0; j < one.size(); ++j) {
        EXPECT_EQ(one[j].theta, other[j].theta) << threads << " threads, member " << j;
        EXPECT_EQ(one[j].history.train_loss, other[j].history.train_loss);
      }
    }
    p.threads = 1;
    p.lockstep = false;
    const auto plain = fit_deep_ensemble(post, p, 7);
    for (std::size_t j = 0; j < one.size(); ++j) ASSERT_EQ(one[j].rows, plain[j].rows);
    EXPECT_LT(largest_difference(one, plain), 1e-12);  // measured: 7e-16
    EXPECT_GT((one[0].theta - one[1].theta).norm(), 1e-3);  // the members are not one network
  }
}

// At the defaults (L-BFGS to a gradient norm of 1e-8, full batches) each member's line searches take
// their own numbers of evaluations, so the passes hold whichever members wait; every member still
// converges to its own anchored, perturbed regression's minimiser (the ill-conditioned target).
TEST(EnsembleLockstep, RandomizedMapAtTheDefaultsReachesTheMinimisersOfARunWithoutLockstep) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  const auto& linear = dynamic_cast<const Mlp&>(target.posterior->model());
  auto model = std::make_shared<RecordingMlp>(linear.spec());
  const Posterior post(model, target.posterior->likelihood_ptr(), target.posterior->prior_ptr(), target.posterior->inputs(),
                       target.posterior->targets());
  RandomizedMapParams p;
  p.ensemble.members = 12;
  p.ensemble.threads = 1;
  p.ensemble.lockstep = true;
  p.perturb_targets = true;
  const auto one = fit_randomized_map(post, p, 31);
  EXPECT_GT(*std::max_element(model->batch_sizes.begin(), model->batch_sizes.end()), 6u);
  p.ensemble.threads = 2;
  const auto two = fit_randomized_map(post, p, 31);
  p.ensemble.lockstep = false;
  model->batch_sizes.clear();
  const auto plain = fit_randomized_map(post, p, 31);
  EXPECT_TRUE(model->batch_sizes.empty());
  for (std::size_t j = 0; j < one.size(); ++j) {
    ASSERT_TRUE(one[j].convergence.converged) << one[j].convergence.stop_reason;
    ASSERT_TRUE(plain[j].convergence.converged) << plain[j].convergence.stop_reason;
    EXPECT_EQ(one[j].theta, two[j].theta) << "member " << j;
    EXPECT_EQ(one[j].anchor, plain[j].anchor);
  }
  // Both stop at a gradient norm of 1e-8 of -log posterior / 40, whose smallest curvature is about
  // (1 / 3^2 + 0.01^2 40 / 0.3^2) / 40 = 0.004 (the weakly identified weight): each is within
  // 1e-8 / 0.004 = 2.5e-6 of the minimiser (measured: 1.8e-7 apart).
  EXPECT_LT(largest_difference(one, plain), 5e-6);
}

TEST(EnsembleLockstep, AModelOutsideTheTasksEvaluatesAloneAsInABatch) {
  auto inner = std::make_shared<Mlp>(MlpSpec{2, {5}, 1, Activation::Tanh, InitScheme::Glorot});
  const LockstepModel model(inner);
  Rng rng(3);
  const Vec theta = inner->initial_params(rng);
  const Mat X = Mat::Random(2, 7);
  const OutputLoss<double> loss = [](const Mat& Y, Mat& dY) {
    dY = Y;
    return 0.5 * Y.squaredNorm();
  };
  Vec grad = Vec::Ones(theta.size());  // gradients are added
  const double value = model.value_and_gradient(theta, X, loss, grad);
  Vec expected = Vec::Ones(theta.size());
  const double* thetas[1] = {theta.data()};
  const Mat* inputs[1] = {&X};
  const OutputLoss<double>* losses[1] = {&loss};
  double values[1] = {0.0};
  double* grads[1] = {expected.data()};
  inner->value_and_gradient_lanes_on_own_inputs(thetas, inputs, losses, values, grads);
  EXPECT_EQ(value, values[0]);
  EXPECT_EQ(grad, expected);
  EXPECT_THROW(model.value_and_gradient(theta, Mat::Random(3, 7), loss, grad), std::invalid_argument);
  EXPECT_THROW(LockstepModel(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn
