#include <gtest/gtest.h>

#include "unit/approx/blr_fixture.hpp"
#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/approx/dropout.hpp"
#include "uqnn/approx/swag.hpp"

namespace uqnn {
namespace {

Mat sample_covariance(const std::vector<Vec>& x, Vec& mean) {
  mean = Vec::Zero(x.front().size());
  for (const Vec& v : x) mean += v / static_cast<double>(x.size());
  Mat c = Mat::Zero(mean.size(), mean.size());
  for (const Vec& v : x) c += (v - mean) * (v - mean).transpose() / static_cast<double>(x.size() - 1);
  return c;
}

TEST(GaussianPosterior, SamplesHaveTheInverseOfThePrecisionAsCovariance) {
  Mat P(2, 2);
  P << 4.0, 1.5, 1.5, 2.0;
  GaussianPosterior q(Vec::Constant(2, 1.0), P);
  Rng rng(1, 0);
  Vec mean;
  const Mat c = sample_covariance(q.sample(rng, 40000), mean);
  EXPECT_LT((c - P.inverse()).cwiseAbs().maxCoeff(), 0.02);
  EXPECT_LT((q.marginal_variance() - Vec(P.inverse().diagonal())).norm(), 1e-12);
  EXPECT_THROW(GaussianPosterior(Vec::Zero(2), -P), std::runtime_error);
}

TEST(SwagPosterior, SamplingKeepsTheMeanAndMatchesItsVariance) {
  Rng rng(2, 0);
  Mat D = rng.normal_vector(12).reshaped(4, 3);
  const Vec mean = Vec::LinSpaced(4, -1, 1);
  const Vec diag = Vec::Constant(4, 0.2);
  SwagPosterior q(mean, diag, D);
  Vec sample_mean;
  const Mat c = sample_covariance(q.sample(rng, 40000), sample_mean);
  EXPECT_EQ(q.mean(), mean);  // QUiNN's sampler moved its stored mean (defect 1)
  // Covariance of seed 001's sampler: (1/2) diag + (1/2) D D^T / (k - 1).
  const Mat expected = 0.5 * Mat(diag.asDiagonal()) + 0.5 * D * D.transpose() / 2.0;
  EXPECT_LT((c - expected).cwiseAbs().maxCoeff(), 0.03);
  EXPECT_LT((q.marginal_variance() - Vec(expected.diagonal())).norm(), 1e-12);
  EXPECT_LT((sample_mean - mean).cwiseAbs().maxCoeff(), 0.02);
}

TEST(Swag, MomentsFollowSeed001AndNegativeVariancesAreClampedToZero) {
  // A constant-gradient objective: w_t = w_0 - t lr g, so the moments are known in closed form.
  struct Linear : Objective {
    Index dim() const override { return 2; }
    Index num_data() const override { return 1; }
    double loss_and_grad(const Vec& theta, const IndexVec&, Vec& grad) const override {
      grad = Vec(2);
      grad << 1.0, 0.0;
      return theta[0];
    }
  } objective;
  SwagParams p;
  p.steps = 4;
  p.snapshot_every = 2;
  p.rank = 5;
  p.learning_rate = 0.5;
  Rng rng(3, 0);
  Vec w0(2);
  w0 << 0.0, 1e8;  // coordinate 1 never moves: w2bar - wbar^2 rounds to ~0, possibly below
  const SwagResult r = fit_swag(objective, w0, p, rng);
  // Snapshots w_0 = 0, w_2 = -1, w_4 = -2 (coordinate 0): mean -1, variance 2/3.
  EXPECT_EQ(r.num_snapshots, 3);
  EXPECT_NEAR(r.approximation->mean()[0], -1.0, 1e-14);
  EXPECT_NEAR(r.approximation->diagonal_variance()[0], 2.0 / 3.0, 1e-12);
  EXPECT_GE(r.approximation->diagonal_variance()[1], 0.0);
  EXPECT_EQ(r.approximation->deviations().cols(), 2);
  // Deviations after each update: w_2 - mean(w_0, w_2) = -0.5, w_4 - mean(all) = -1.
  EXPECT_NEAR(r.approximation->deviations()(0, 0), -0.5, 1e-14);
  EXPECT_NEAR(r.approximation->deviations()(0, 1), -1.0, 1e-14);
}

TEST(DropoutMlp, SharedMaskEqualsMlpWithMaskedWeightsAndGradientMatchesFiniteDifferences) {
  DropoutMlp net(MlpSpec{2, {5, 4}, 1, Activation::Tanh, InitScheme::Glorot}, 0.3);
  Rng rng(4, 0);
  const Vec theta = net.network().initial_params(rng) + 0.1 * rng.normal_vector(net.num_params());
  Mat X = rng.normal_vector(14).reshaped(2, 7);
  const auto shared = net.sample_masks(rng, 1);
  EXPECT_LT((net.forward(theta, X, shared) - net.network().forward(net.apply_mask(theta, shared), X)).cwiseAbs().maxCoeff(), 1e-13);
  // Per-example masks: gradient of 0.5 ||f||^2 vs central differences.
  const auto masks = net.sample_masks(rng, 7);
  const OutputLoss<double> half_square = [](const Mat& Y, Mat& dY) {
    dY = Y;
    return 0.5 * Y.squaredNorm();
  };
  Vec grad = Vec::Zero(net.num_params());
  net.value_and_gradient(theta, X, masks, half_square, grad);
  for (Index k = 0; k < net.num_params(); ++k) {
    Vec tp = theta, tm = theta;
    tp[k] += 1e-6;
    tm[k] -= 1e-6;
    const double fd = (0.5 * net.forward(tp, X, masks).squaredNorm() - 0.5 * net.forward(tm, X, masks).squaredNorm()) / 2e-6;
    EXPECT_NEAR(grad[k], fd, 1e-6 * (1 + std::abs(fd))) << k;
  }
}

TEST(DropoutPosterior, DrawsAverageToThetaWithTheStatedVariance) {
  auto net = std::make_shared<DropoutMlp>(MlpSpec{1, {6}, 1, Activation::Tanh, InitScheme::Glorot}, 0.25);
  Rng rng(5, 0);
  Vec theta(net->num_params() + 1);
  theta.head(net->num_params()) = net->network().initial_params(rng);
  theta[net->num_params()] = -1.0;  // an extra (log sigma) is copied unchanged
  DropoutPosterior<DropoutMlp> q(net, theta);
  Vec mean;
  const auto draws = q.sample(rng, 40000);
  const Mat c = sample_covariance(draws, mean);
  EXPECT_LT((mean - theta).cwiseAbs().maxCoeff(), 0.02);
  EXPECT_LT((c.diagonal() - q.marginal_variance()).cwiseAbs().maxCoeff(), 0.03);
  EXPECT_EQ(draws[0][net->num_params()], -1.0);
  // Layer 1 weights are never dropped (dropout acts on hidden units' outputs).
  EXPECT_EQ(draws[0].head(12), theta.head(12));
}

}  // namespace
}  // namespace uqnn
