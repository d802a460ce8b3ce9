// The Dirichlet-based GP of Milios et al. (2018), the classification prior of functional SG-MCMC:
// the label transformation against the moments it matches, the summed heteroscedastic marginal
// likelihood against dense algebra and its gradient against finite differences, the pre-training
// fit against its neighbourhood, and the prior over logits with class means (FunctionalPrior).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "uqnn/nn/mlp.hpp"
#include "uqnn/optim/gaussian_process_fit.hpp"
#include "uqnn/prob/dirichlet_gaussian_process.hpp"
#include "uqnn/prob/functional_prior.hpp"

namespace uqnn {
namespace {

/// Three classes in 2-D: noisy points around three centres (deterministic noise).
void three_blobs(Index per_class, Mat& X, Vec& labels) {
  X.resize(2, 3 * per_class);
  labels.resize(3 * per_class);
  Rng rng(31);
  for (Index c = 0; c < 3; ++c)
    for (Index i = 0; i < per_class; ++i) {
      const Index j = c * per_class + i;
      const double angle = 2.0 * std::numbers::pi * static_cast<double>(c) / 3.0;
      X(0, j) = 1.5 * std::cos(angle) + 0.8 * rng.normal();
      X(1, j) = 1.5 * std::sin(angle) + 0.8 * rng.normal();
      labels[j] = static_cast<double>(c);
    }
}

// y~ and s^2 are the log-normal whose mean and variance are those of Gamma(alpha, 1), i.e. alpha
// and alpha (Milios et al. 2018, sec. 4): exp(y~ + s^2/2) = alpha, (exp(s^2) - 1) exp(2 y~ + s^2) = alpha.
TEST(DirichletGaussianProcess, TargetsMatchTheGammaMoments) {
  const double eps = 0.01;
  const Vec labels = (Vec(4) << 2, 0, 1, 2).finished();
  const DirichletTargets d = dirichlet_targets(labels, 3, eps);
  ASSERT_EQ(d.targets.rows(), 3);
  ASSERT_EQ(d.targets.cols(), 4);
  for (Index i = 0; i < 4; ++i)
    for (Index c = 0; c < 3; ++c) {
      const double alpha = (static_cast<Index>(labels[i]) == c ? 1.0 : 0.0) + eps;
      const double mu = d.targets(c, i), s2 = d.noise(c, i);
      EXPECT_NEAR(std::exp(mu + 0.5 * s2), alpha, 1e-12 * alpha) << c << " " << i;
      EXPECT_NEAR((std::exp(s2) - 1.0) * std::exp(2 * mu + s2), alpha, 1e-12 * alpha) << c << " " << i;
    }
  EXPECT_THROW(dirichlet_targets((Vec(1) << 3).finished(), 3, eps), std::invalid_argument);
  EXPECT_THROW(dirichlet_targets((Vec(1) << 0.5).finished(), 3, eps), std::invalid_argument);
}

// sum_c log N(y~_c - m_c | 0, K + diag(s_c^2)) against dense inverse and determinant, and its
// gradient w.r.t. the log hyperparameters against central differences (shared and ARD length
// scales, rbf and matern52).
TEST(DirichletGaussianProcess, MarginalLikelihoodAndGradientMatchDenseAlgebraAndFiniteDifferences) {
  Mat X;
  Vec labels;
  three_blobs(5, X, labels);
  const DirichletTargets d = dirichlet_targets(labels, 3, 0.05);
  const Vec means = (Vec(3) << -2.0, -2.5, -1.0).finished();
  for (GpKernel kernel : {GpKernel::Rbf, GpKernel::Matern52})
    for (bool ard : {false, true}) {
      GpHyperparameters h;
      h.signal_variance = 1.7;
      h.length_scales = ard ? (Vec(2) << 0.7, 1.3).finished() : Vec::Constant(1, 0.9);
      const GaussianProcess gp(kernel, h);
      Vec grad;
      const double value = dirichlet_log_marginal_likelihood(gp, X, d, means, &grad);
      double expected = 0;
      const Mat K = gp.covariance(X);
      for (Index c = 0; c < 3; ++c) {
        const Mat A = K + Mat(d.noise.row(c).asDiagonal());
        const Vec r = (d.targets.row(c).array() - means[c]).matrix().transpose();
        expected += -0.5 * r.dot(A.inverse() * r) - 0.5 * std::log(A.determinant()) -
                    0.5 * static_cast<double>(X.cols()) * std::log(2 * std::numbers::pi);
      }
      EXPECT_NEAR(value, expected, 1e-9 * std::abs(expected));
      const Vec p = gp.log_parameters();
      ASSERT_EQ(grad.size(), p.size());
      const double step = 1e-6;
      for (Index j = 0; j < p.size(); ++j) {
        Vec up = p, down = p;
        up[j] += step;
        down[j] -= step;
        const double fd = (dirichlet_log_marginal_likelihood(gp.with_log_parameters(up), X, d, means) -
                           dirichlet_log_marginal_likelihood(gp.with_log_parameters(down), X, d, means)) /
                          (2 * step);
        EXPECT_NEAR(grad[j], fd, 1e-6 * std::max(1.0, std::abs(fd))) << gp_kernel_name(kernel) << " ard " << ard << " j " << j;
      }
      EXPECT_GT(std::abs(grad[0]), 0.1);  // not vacuous
      EXPECT_EQ(grad[p.size() - 1], 0.0);  // the noise is the labels', not a parameter
    }
}

// The pre-training at its defaults (GpFitParams, 500 iterations as seed 002 App. E) ends at a
// maximum: no step of 0.2 on the log scale in any coordinate raises the marginal likelihood, the
// gradient there is small, and it is far above the start's. The class means are the means of the
// transformed targets.
TEST(DirichletGaussianProcess, PretrainingFindsTheMarginalLikelihoodMaximum) {
  Mat X;
  Vec labels;
  three_blobs(20, X, labels);
  GpFitParams params;
  params.iterations = 500;
  Rng rng(5);
  const DirichletGaussianProcess fitted = fit_dirichlet_gaussian_process(X, labels, 3, 0.01, params, rng);
  const DirichletTargets d = dirichlet_targets(labels, 3, 0.01);
  const Vec means = d.targets.rowwise().mean();
  EXPECT_LT((fitted.class_means - means).norm(), 1e-12);
  Vec grad;
  const double best = dirichlet_log_marginal_likelihood(fitted.process, X, d, means, &grad);
  const Vec p = fitted.process.log_parameters();
  for (Index j = 0; j + 1 < p.size(); ++j)
    for (double delta : {-0.2, 0.2}) {
      Vec q = p;
      q[j] += delta;
      EXPECT_LT(dirichlet_log_marginal_likelihood(fitted.process.with_log_parameters(q), X, d, means), best) << j << " " << delta;
    }
  EXPECT_LT(grad.head(p.size() - 1).norm(), 1e-2 * std::abs(best) / static_cast<double>(X.cols()));
  GpFitParams none = params;
  none.iterations = 0;
  Rng rng0(5);
  const DirichletGaussianProcess start = fit_dirichlet_gaussian_process(X, labels, 3, 0.01, none, rng0);
  EXPECT_GT(best, dirichlet_log_marginal_likelihood(start.process, X, d, means) + 1.0);
}

// log N(F_o | m_o, K) with class means against dense algebra, and the gradient w.r.t. the network
// parameters (J^T of -K^-1 (F - m)) against central differences.
TEST(DirichletGaussianProcess, PriorOverLogitsWithClassMeansMatchesDenseAlgebraAndFiniteDifferences) {
  auto net = std::make_shared<Mlp>(MlpSpec{2, {6, 5}, 3, Activation::Tanh, InitScheme::Glorot});
  Mat X;
  Vec labels;
  three_blobs(3, X, labels);
  GpHyperparameters h;
  h.signal_variance = 2.0;
  h.length_scales = Vec::Constant(1, 1.1);
  const Vec means = (Vec(3) << -3.0, 1.0, 0.5).finished();
  const FunctionalPrior prior(net, GaussianProcess(GpKernel::Rbf, h), 1e-3, false, means);
  const auto cov = prior.factorize(X);
  Rng rng(8);
  const Vec theta = net->initial_params(rng) * 2.0;
  Vec grad = Vec::Zero(net->num_params());
  const double value = prior.log_density(theta, cov, &grad);
  const Mat F = net->forward(theta, X);
  Mat K = prior.process().covariance(X);
  K.diagonal().array() += cov.jitter;
  double expected = 0;
  for (Index o = 0; o < 3; ++o) {
    const Vec r = (F.row(o).array() - means[o]).matrix().transpose();
    expected += -0.5 * r.dot(K.inverse() * r) - 0.5 * std::log(K.determinant()) -
                0.5 * static_cast<double>(X.cols()) * std::log(2 * std::numbers::pi);
  }
  EXPECT_NEAR(value, expected, 1e-9 * std::abs(expected));
  const double step = 1e-6;
  double max_error = 0, max_grad = 0;
  for (Index j = 0; j < theta.size(); ++j) {
    Vec up = theta, down = theta;
    up[j] += step;
    down[j] -= step;
    const double fd = (prior.log_density(up, cov) - prior.log_density(down, cov)) / (2 * step);
    max_error = std::max(max_error, std::abs(fd - grad[j]));
    max_grad = std::max(max_grad, std::abs(grad[j]));
  }
  EXPECT_LT(max_error, 1e-6 * max_grad);
  EXPECT_GT(max_grad, 1.0);
  EXPECT_THROW(FunctionalPrior(net, GaussianProcess(GpKernel::Rbf, h), 1e-3, false, Vec::Zero(2)), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn
