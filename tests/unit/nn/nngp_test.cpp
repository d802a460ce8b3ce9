// The NNGP kernel (nn/nngp.hpp) against Monte Carlo averages over wide random networks, its
// quadrature against the closed forms, and the GP fit with it.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "uqnn/nn/mlp.hpp"
#include "uqnn/nn/nngp_posterior_model.hpp"
#include "uqnn/optim/gaussian_process_fit.hpp"
#include "uqnn/nn/nngp.hpp"

namespace uqnn {
namespace {

/// Four inputs in 3-D: near, far, opposite and at the origin.
Mat probe_inputs() {
  Mat X(3, 4);
  X << 0.5, 0.7, -1.0, 0.0,  //
      -1.2, -1.0, 1.1, 0.0,  //
      0.3, 0.1, -0.2, 0.0;
  return X;
}

struct MonteCarloCase {
  Activation activation;
  Index depth, width, networks;
};

class NngpMonteCarlo : public ::testing::TestWithParam<MonteCarloCase> {};

TEST_P(NngpMonteCarlo, KernelIsTheOutputCovarianceOfWideRandomNetworks) {
  // Networks with weights N(0, sigma_w^2 / fan_in) and biases N(0, sigma_b^2): E[f(x) f(x')] is the
  // NNGP kernel exactly for one hidden layer at any width, and up to O(1 / width) for two.
  const MonteCarloCase c = GetParam();
  NngpArchitecture a;
  a.depth = c.depth;
  a.activation = c.activation;
  a.weight_variance = 1.6;
  a.bias_variance = 0.2;
  const Mat X = probe_inputs();
  const Mat K = nngp_covariance(a, X, X);
  std::vector<Index> hidden(static_cast<std::size_t>(c.depth), c.width);
  const Mlp net(MlpSpec{3, hidden, 1, c.activation, InitScheme::Glorot});
  Rng rng(31, static_cast<std::uint64_t>(c.activation) * 10 + static_cast<std::uint64_t>(c.depth));
  const Index n = X.cols();
  Mat sum = Mat::Zero(n, n), sum_squares = Mat::Zero(n, n);
  for (Index s = 0; s < c.networks; ++s) {
    Vec theta(net.num_params());
    for (const ParamBlock& b : net.layout().blocks()) {
      const bool weight = b.name.find("weight") != std::string::npos;
      const double sd = weight ? std::sqrt(a.weight_variance / static_cast<double>(b.fan_in)) : std::sqrt(a.bias_variance);
      theta.segment(b.offset, b.size()) = sd * rng.normal_vector(b.size());
    }
    const Vec f = net.forward(theta, X).row(0).transpose();
    const Mat outer = f * f.transpose();
    sum += outer;
    sum_squares += outer.cwiseAbs2();
  }
  const double S = static_cast<double>(c.networks);
  const Mat mean = sum / S;
  const Mat standard_error = ((sum_squares / S - mean.cwiseAbs2()) / (S - 1)).cwiseSqrt();
  for (Index j = 0; j < n; ++j)
    for (Index i = 0; i <= j; ++i)
      EXPECT_NEAR(K(i, j), mean(i, j), 4.0 * standard_error(i, j))
          << to_string(c.activation) << " depth " << c.depth << " entry (" << i << ", " << j << "), Monte Carlo " << mean(i, j);
}

INSTANTIATE_TEST_SUITE_P(
    Activations, NngpMonteCarlo,
    ::testing::Values(MonteCarloCase{Activation::Relu, 1, 32, 6000}, MonteCarloCase{Activation::Tanh, 1, 32, 6000},
                      MonteCarloCase{Activation::Sine, 1, 32, 6000}, MonteCarloCase{Activation::Sigmoid, 1, 32, 6000},
                      MonteCarloCase{Activation::Silu, 1, 32, 6000}, MonteCarloCase{Activation::Identity, 1, 32, 6000},
                      MonteCarloCase{Activation::Relu, 2, 256, 2000}, MonteCarloCase{Activation::Tanh, 2, 256, 2000}),
    [](const ::testing::TestParamInfo<MonteCarloCase>& info) {
      return to_string(info.param.activation) + "_depth" + std::to_string(info.param.depth);
    });

TEST(Nngp, QuadratureMatchesTheClosedForms) {
  // The quadrature serves tanh, sigmoid and silu; on the smooth closed forms it is exact to round-off.
  for (const auto& [k12, k11, k22] : {std::tuple{0.3, 1.0, 0.5}, std::tuple{-0.9, 1.2, 0.8}, std::tuple{2.0, 2.0, 2.0},
                                      std::tuple{4.0, 5.0, 9.0}}) {
    for (const Activation act : {Activation::Identity, Activation::Sine}) {
      const double exact = nngp_pair_expectation(act, k12, k11, k22);
      EXPECT_NEAR(nngp_pair_expectation_by_quadrature(act, k12, k11, k22), exact, 1e-10 * std::max(1.0, std::abs(exact)))
          << to_string(act) << " at (" << k12 << ", " << k11 << ", " << k22 << ")";
    }
  }
  // E[tanh(u)^2] for u ~ N(0, k), by a trapezoid rule with 400,001 nodes on [-12, 12] sds: at k = 5
  // and 20 tanh is nearly a step at the scale of u (32-node Gauss-Hermite was off by 4e-3 at k = 5).
  for (const auto& [k, reference] : {std::pair{1.0, 0.39429449039778536}, std::pair{5.0, 0.6684448850200357},
                                     std::pair{20.0, 0.825107126438699}})
    EXPECT_NEAR(nngp_pair_expectation(Activation::Tanh, k, k, k), reference, 1e-11) << "k = " << k;
  // Swapping u and v changes nothing.
  EXPECT_NEAR(nngp_pair_expectation(Activation::Tanh, 1.5, 5.0, 3.5), nngp_pair_expectation(Activation::Tanh, 1.5, 3.5, 5.0), 1e-10);
}

TEST(Nngp, KernelIsSymmetricPositiveDefiniteAndAgreesBetweenItsTwoPaths) {
  NngpArchitecture a;
  a.depth = 3;
  Rng rng(32, 0);
  Mat X(2, 30);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
  const Mat K = nngp_covariance(a, X, X);
  const Mat copy = X;
  EXPECT_LT((K - nngp_covariance(a, X, copy)).cwiseAbs().maxCoeff(), 1e-10);  // the one-triangle path
  EXPECT_LT((K - K.transpose()).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_GT(Eigen::SelfAdjointEigenSolver<Mat>(K, Eigen::EigenvaluesOnly).eigenvalues()[0], 0.0);
  NngpArchitecture bad = a;
  bad.weight_variance = 0.0;
  EXPECT_THROW(nngp_covariance(bad, X, X), std::invalid_argument);
}

TEST(Nngp, TheGpFitMaximisesTheMarginalLikelihoodOverSignalAndNoiseVariance) {
  // Data from a random relu network; the fit's closed-form evidence (one eigendecomposition) must be
  // the GaussianProcess's own, and its optimum a stationary point of it.
  NngpArchitecture a;
  a.activation = Activation::Relu;
  a.weight_variance = 2.0;
  Rng rng(33, 0);
  Mat X(2, 60);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
  Vec y(60);
  for (Index i = 0; i < 60; ++i) y[i] = std::sin(2 * X(0, i)) + 0.3 * X(1, i) + 0.1 * rng.normal();
  GpFitParams params;
  params.kernel = GpKernel::Nngp;
  params.nngp = a;
  params.iterations = 2000;
  const GaussianProcess gp = fit_gaussian_process(X, y, params, rng);
  EXPECT_EQ(gp.kernel(), GpKernel::Nngp);
  Vec grad;
  gp.log_marginal_likelihood(X, y, &grad);
  ASSERT_EQ(grad.size(), 3);
  EXPECT_NEAR(grad[0], 0.0, 1e-3) << "d/d log s^2";
  EXPECT_NEAR(grad[2], 0.0, 1e-3) << "d/d log s_n^2";
  EXPECT_EQ(grad[1], 0.0) << "the input scale is not fitted";
  // The GP's gradient against central differences of its value, away from the optimum.
  Vec p = gp.log_parameters();
  p[0] += 0.3;
  p[2] -= 0.4;
  Vec g;
  gp.with_log_parameters(p).log_marginal_likelihood(X, y, &g);
  for (const Index j : {Index{0}, Index{2}}) {
    Vec up = p, down = p;
    up[j] += 1e-5;
    down[j] -= 1e-5;
    const double fd = (gp.with_log_parameters(up).log_marginal_likelihood(X, y) - gp.with_log_parameters(down).log_marginal_likelihood(X, y)) / 2e-5;
    EXPECT_NEAR(g[j], fd, 1e-5 * std::max(1.0, std::abs(fd))) << j;
    EXPECT_GT(std::abs(fd), 0.1) << "not at the optimum";
  }
  EXPECT_GT(gp.hyperparameters().noise_variance, 0.002);
  EXPECT_LT(gp.hyperparameters().noise_variance, 0.05) << "the data's noise variance is 0.01";
  EXPECT_NE(gp.describe().find("nngp(") , std::string::npos);
  EXPECT_NE(gp.describe().find("activation=relu"), std::string::npos);
  GpFitParams ard = params;
  ard.per_input_length_scales = true;
  EXPECT_THROW(fit_gaussian_process(X, y, ard, rng), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn

namespace uqnn {
namespace {

TEST(NngpPosteriorModel, IsTheExactGpPosteriorAndRoundTripsThroughJson) {
  NngpArchitecture a;
  a.depth = 2;
  a.activation = Activation::Tanh;
  Rng rng(34, 0);
  Mat X(1, 15), Y(1, 15);
  for (Index i = 0; i < 15; ++i) {
    X(0, i) = -1.5 + 3.0 * static_cast<double>(i) / 14.0;
    Y(0, i) = std::sin(2 * X(0, i)) + 0.1 * rng.normal();
  }
  const double s2 = 2.5, noise = 0.02;
  const NngpPosteriorModel model(a, s2, noise, X, Y);
  Mat Xs(1, 3);
  Xs << -0.3, 0.8, 3.0;  // inside the data, and far outside
  // Rasmussen & Williams eqs. 2.25-2.26 by explicit inverse.
  Mat K = s2 * nngp_covariance(a, X, X);
  K.diagonal().array() += noise;
  const Mat Kinv = K.inverse();
  const Mat Ks = s2 * nngp_covariance(a, X, Xs);
  const Vec mean = Ks.transpose() * Kinv * Y.row(0).transpose();
  const Vec var = (s2 * nngp_covariance(a, Xs, Xs) - Ks.transpose() * Kinv * Ks).diagonal();
  const auto [m, sd] = model.mean_and_sd(Xs);
  for (Index j = 0; j < 3; ++j) {
    EXPECT_NEAR(m(0, j), mean[j], 1e-9);
    EXPECT_NEAR(sd(0, j) * sd(0, j), var[j], 1e-9);
  }
  EXPECT_GT(sd(0, 2), 2 * sd(0, 0)) << "wider far from the data";
  // f(z, x) = m(x) + z sd(x), its gradient and Hessian-vector product for a squared loss.
  const Vec z = Vec::Constant(1, 0.7);
  const Mat f = model.forward(z, Xs);
  EXPECT_NEAR(f(0, 1), m(0, 1) + 0.7 * sd(0, 1), 1e-12);
  const OutputLoss<double> loss = [](const Mat& F, Mat& dF) {
    dF = F;
    return 0.5 * F.squaredNorm();
  };
  Vec grad = Vec::Zero(1);
  model.value_and_gradient(z, Xs, loss, grad);
  const auto value = [&](double zz) { return 0.5 * model.forward(Vec::Constant(1, zz), Xs).squaredNorm(); };
  EXPECT_NEAR(grad[0], (value(0.7 + 1e-6) - value(0.7 - 1e-6)) / 2e-6, 1e-6);
  const OutputLoss<Dual> dual_loss = [](const MatT<Dual>& F, MatT<Dual>& dF) {
    dF = F;
    Dual v = make_dual(0.0, 0.0);
    for (Index i = 0; i < F.size(); ++i) v = v + 0.5 * F.data()[i] * F.data()[i];
    return v;
  };
  EXPECT_NEAR(model.hessian_vector_product(z, Vec::Constant(1, 1.0), Xs, dual_loss)[0], sd.squaredNorm(), 1e-10);
  // Its evidence is the GaussianProcess's at the same hyperparameters (R&W eq. 2.30).
  GpHyperparameters h;
  h.signal_variance = s2;
  h.noise_variance = noise;
  EXPECT_NEAR(model.log_marginal_likelihood(), GaussianProcess(a, h).log_marginal_likelihood(X, Y.row(0).transpose()), 1e-9);
  // model.json's description rebuilds the same model.
  const std::unique_ptr<Model> again = make_model(model.to_json());
  EXPECT_EQ(again->kind(), "nngp_posterior");
  EXPECT_LT((again->forward(z, Xs) - f).cwiseAbs().maxCoeff(), 1e-12);
}

}  // namespace
}  // namespace uqnn
