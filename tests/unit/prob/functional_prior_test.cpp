// FunctionalPrior, MeasurementSampler and FunctionalPosterior: the GP log-density of the network
// outputs against a dense-algebra reference, its gradient w.r.t. the network parameters against
// finite differences, measurement-point draws, and the N/n-scaled functional posterior.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <set>

#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/functional_posterior.hpp"
#include "uqnn/prob/functional_prior.hpp"
#include "uqnn/prob/measurement_sampler.hpp"

namespace uqnn {
namespace {

std::shared_ptr<Mlp> small_network(Index inputs, Index outputs) {
  return std::make_shared<Mlp>(MlpSpec{inputs, {6, 5}, outputs, Activation::Tanh, InitScheme::Glorot});
}

GaussianProcess rbf(double s2, double l) {
  GpHyperparameters h;
  h.signal_variance = s2;
  h.length_scales = Vec::Constant(1, l);
  return GaussianProcess(GpKernel::Rbf, h);
}

Mat uniform_points(Index d, Index n, std::uint64_t seed) {
  Rng rng(seed);
  Mat X(d, n);
  for (Index j = 0; j < n; ++j)
    for (Index i = 0; i < d; ++i) X(i, j) = rng.uniform(-1, 1);
  return X;
}

// log N(F_o | 0, K) summed over outputs, with K^-1 and |K| from dense LU (reference only).
TEST(FunctionalPrior, OutputDensityMatchesDenseReference) {
  auto net = small_network(2, 2);
  const FunctionalPrior prior(net, rbf(1.5, 0.8), 1e-3);
  const Mat X = uniform_points(2, 7, 3);
  const auto cov = prior.factorize(X);
  Mat K = prior.process().covariance(X);
  K.diagonal().array() += 1e-3 * 1.5;
  EXPECT_DOUBLE_EQ(cov.jitter, 1e-3 * 1.5);
  Rng rng(4);
  Mat F(2, 7);
  for (Index i = 0; i < F.size(); ++i) F.data()[i] = rng.normal();
  const Mat Kinv = K.inverse();
  double expected = 0;
  for (Index o = 0; o < 2; ++o)
    expected += -0.5 * F.row(o).dot(Kinv * F.row(o).transpose()) - 0.5 * std::log(K.determinant()) -
                3.5 * std::log(2 * std::numbers::pi);
  Mat dF;
  EXPECT_NEAR(prior.log_density_of_outputs(F, cov, &dF), expected, 1e-9 * std::abs(expected));
  EXPECT_LT((dF - (-(Kinv * F.transpose()).transpose())).norm(), 1e-9 * dF.norm());
}

// grad_theta log P0(f(X_M; theta)) = J^T (-K^-1 f) against central differences, for the RBF and
// Matern 5/2 kernels and a network with two outputs.
TEST(FunctionalPrior, GradientWrtNetworkParametersMatchesFiniteDifferences) {
  auto net = small_network(2, 2);
  Rng rng(8);
  const Vec theta = net->initial_params(rng) * 2.0;
  const Mat X = uniform_points(2, 9, 9);
  for (GpKernel kernel : {GpKernel::Rbf, GpKernel::Matern52}) {
    GpHyperparameters h;
    h.signal_variance = 0.7;
    h.length_scales = (Vec(2) << 0.6, 1.1).finished();
    const FunctionalPrior prior(net, GaussianProcess(kernel, h), 1e-3);
    const auto cov = prior.factorize(X);
    Vec grad = Vec::Zero(net->num_params());
    const double value = prior.log_density(theta, cov, &grad);
    EXPECT_NEAR(value, prior.log_density(theta, cov), 1e-12 * std::abs(value));
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
    EXPECT_LT(max_error, 1e-6 * max_grad) << gp_kernel_name(kernel);
    EXPECT_GT(max_grad, 1.0);  // the check is not vacuous
  }
}

TEST(MeasurementSampler, DrawsDistinctDataPointsAndBoxPoints) {
  const Mat inputs = uniform_points(2, 20, 11);
  MeasurementParams p;
  p.num_data_points = 8;
  p.num_box_points = 30;
  p.box_margin = 0.5;
  const MeasurementSampler sampler(inputs, p);
  EXPECT_FALSE(sampler.is_fixed());
  EXPECT_EQ(sampler.size(), 38);
  Rng rng(1);
  const Mat X = sampler.draw(rng);
  ASSERT_EQ(X.cols(), 38);
  std::set<std::pair<double, double>> seen;
  for (Index j = 0; j < 8; ++j) {
    bool found = false;
    for (Index i = 0; i < 20; ++i) found = found || (inputs.col(i) - X.col(j)).norm() == 0.0;
    EXPECT_TRUE(found);
    seen.insert({X(0, j), X(1, j)});
  }
  EXPECT_EQ(seen.size(), 8u);  // without replacement
  const Vec lo = inputs.rowwise().minCoeff(), hi = inputs.rowwise().maxCoeff();
  bool outside_data = false;
  for (Index j = 8; j < 38; ++j)
    for (Index r = 0; r < 2; ++r) {
      EXPECT_GE(X(r, j), lo[r] - 0.5 * (hi[r] - lo[r]));
      EXPECT_LE(X(r, j), hi[r] + 0.5 * (hi[r] - lo[r]));
      outside_data = outside_data || X(r, j) < lo[r] || X(r, j) > hi[r];
    }
  EXPECT_TRUE(outside_data);
  EXPECT_NE((sampler.draw(rng) - X).norm(), 0.0);  // fresh points every draw
  // All data and no box: fixed.
  p.num_data_points = 1000;
  p.num_box_points = 0;
  const MeasurementSampler all(inputs, p);
  EXPECT_TRUE(all.is_fixed());
  EXPECT_EQ(all.draw(rng), inputs);
  p.num_data_points = -1;
  EXPECT_THROW(MeasurementSampler(inputs, p), std::invalid_argument);
}

// The functional posterior is (N/n) * minibatch log-likelihood + log P0(f(X_M)) (+ log p(w) when the
// weight prior is kept); check it against its parts and its gradient against finite differences
// (learned noise: the extras' prior stays).
TEST(FunctionalPosterior, ScaledMinibatchPlusFunctionalPrior) {
  auto net = small_network(1, 1);
  const Mat X = uniform_points(1, 30, 12);
  Mat Y = X.array().sin().matrix();
  MeasurementParams mp;
  mp.num_data_points = 5;
  mp.num_box_points = 5;
  const FunctionalPrior prior(net, rbf(1.0, 0.5));
  const IndexVec batch{1, 4, 7, 20, 29, 0};
  Rng rng(13);
  const Vec net_theta = net->initial_params(rng);
  for (const bool learned_noise : {false, true})
  for (const bool keep_weight_prior : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "learned noise " << learned_noise << ", weight prior kept " << keep_weight_prior);
    auto weight_posterior = std::make_shared<Posterior>(
        net, learned_noise ? make_learned_sigma_likelihood(0.3) : make_gaussian_likelihood(0.3),
        GaussianPrior::isotropic(net->num_params(), 0.4), X, Y);
    const FunctionalPosterior target(weight_posterior, prior, MeasurementSampler(X, mp), 3, keep_weight_prior);
    Vec theta(target.dim());
    theta.head(net_theta.size()) = net_theta;
    if (learned_noise) theta.tail(1).setConstant(-0.7);  // log sigma, away from its prior mean
    Vec grad;
    const double value = target.minibatch_log_density_and_grad(theta, batch, grad);
    Vec extra_prior_grad = Vec::Zero(learned_noise ? 1 : 0);
    const double expected = 5.0 * weight_posterior->log_likelihood(theta, gather_columns(X, batch), gather_columns(Y, batch)) +
                            prior.log_density(net_theta, target.reference()) +
                            weight_posterior->likelihood().extra_log_prior(theta.tail(learned_noise ? 1 : 0), &extra_prior_grad) +
                            (keep_weight_prior ? weight_posterior->prior().log_density(net_theta, static_cast<Vec*>(nullptr)) : 0.0);
    EXPECT_NEAR(value, expected, 1e-10 * std::abs(expected));
    IndexVec checked;
    for (Index j = 0; j < theta.size(); j += 7) checked.push_back(j);
    checked.push_back(theta.size() - 1);  // the log sigma when learned
    for (Index j : checked) {
      Vec up = theta, down = theta, g;
      up[j] += 1e-6;
      down[j] -= 1e-6;
      const double fd = (target.minibatch_log_density_and_grad(up, batch, g) - target.minibatch_log_density_and_grad(down, batch, g)) / 2e-6;
      EXPECT_NEAR(grad[j], fd, 1e-5 * (1 + std::abs(fd))) << "coordinate " << j;
    }
  }
  auto weight_posterior = std::make_shared<Posterior>(net, make_gaussian_likelihood(0.3),
                                                      GaussianPrior::isotropic(net->num_params(), 1.0), X, Y);
  const FunctionalPosterior target(weight_posterior, prior, MeasurementSampler(X, mp), 3);
  const Vec& theta = net_theta;
  Vec grad;
  const double value = target.minibatch_log_density_and_grad(theta, batch, grad);
  const double expected = 5.0 * weight_posterior->log_likelihood(theta, gather_columns(X, batch), gather_columns(Y, batch)) +
                          prior.log_density(theta, target.reference());
  // The randomized estimate uses fresh points (differs from the reference) and the same batch scaling.
  Vec g1;
  Rng r1(1);
  const double v1 = target.randomized_log_density_and_grad(r1, theta, &batch, g1);
  EXPECT_NE(v1, value);
  Rng r2(1);
  const Mat XM = target.measurement().draw(r2);
  EXPECT_NEAR(v1, expected - prior.log_density(theta, target.reference()) + prior.log_density(theta, XM), 1e-9 * std::abs(v1));
}

}  // namespace
}  // namespace uqnn
