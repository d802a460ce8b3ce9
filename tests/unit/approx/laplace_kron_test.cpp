// K-FAC (--laplace-structure kron) and last-layer (--laplace-subset last-layer) Laplace: exact where
// the factorisation is exact, close to the full GGN on B2, usable where the full matrix is not.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include <unsupported/Eigen/KroneckerProduct>

#include "unit/approx/blr_fixture.hpp"
#include "uqnn/approx/laplace.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/cnn_layer_list.hpp"
#include "uqnn/nn/linear.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/optim/objective.hpp"
#include "uqnn/optim/trainer.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {
namespace {

using testing::max_relative;

/// An MLP posterior with Gaussian noise `sigma` and an isotropic N(0, 1) prior on data drawn from
/// `truth` at standard normal inputs.
std::shared_ptr<Posterior> mlp_posterior(const MlpSpec& spec, Index n, double sigma, std::uint64_t seed,
                                         const std::function<Vec(const Vec&)>& truth) {
  auto model = std::make_shared<Mlp>(spec);
  Rng rng(seed, 0);
  Mat X(spec.input_dim, n), Y(spec.output_dim, n);
  for (Index i = 0; i < n; ++i) {
    X.col(i) = rng.normal_vector(spec.input_dim);
    Y.col(i) = truth(X.col(i)) + sigma * rng.normal_vector(spec.output_dim);
  }
  return std::make_shared<Posterior>(model, make_gaussian_likelihood(sigma), GaussianPrior::isotropic(model->num_params(), 1.0), X, Y);
}

LaplaceParams kron_params() {
  LaplaceParams p;
  p.structure = CurvatureStructure::Kronecker;
  return p;
}

/// The dense precision of a Kronecker block: (U_G (x) U_A) diag(Lambda) (U_G (x) U_A)^T in the
/// row-major order of its parameter matrix.
Mat dense_block_precision(const KroneckerGaussianPosterior::Block& b) {
  const Mat U = Eigen::kroneckerProduct(b.output_vectors, b.input_vectors);
  const Mat L = b.precision.transpose();  // row-major vec of Lambda [rows, cols]
  return U * Eigen::Map<const Vec>(L.data(), L.size()).asDiagonal() * U.transpose();
}

TEST(KronLaplace, IsTheFullGaussNewtonLaplaceForALinearGaussianModel) {
  // f = W x + b with a Gaussian likelihood: every example's output precision is I / sigma^2, so
  // sum_i (I / sigma^2) (x) x_i x_i^T = G (x) A exactly, and kron is the full GGN Laplace.
  auto model = std::make_shared<Mlp>(Mlp::linear(3, 2));
  const auto post = mlp_posterior(model->spec(), 25, 0.3, 11, [](const Vec& x) {
    Vec y(2);
    y << x[0] - 0.5 * x[1], 0.2 * x[2] + 1.0;
    return y;
  });
  Rng rng(12, 0);
  const Vec theta = post->initial_point(rng);
  const LaplaceApproximation full(post, theta, LaplaceParams{});
  const LaplaceApproximation kron(post, theta, kron_params());
  EXPECT_EQ(kron.approximation()->kind(), "kronecker_gaussian");
  EXPECT_LT(max_relative(kron.approximation()->marginal_variance(), full.approximation()->marginal_variance()), 1e-9);
  EXPECT_NEAR(kron.log_marginal_likelihood(), full.log_marginal_likelihood(), 1e-9 * std::abs(full.log_marginal_likelihood()));
  const Vec probe = theta + 0.05 * rng.normal_vector(theta.size());
  ASSERT_TRUE(kron.approximation()->has_log_prob());
  EXPECT_NEAR(kron.approximation()->log_prob(probe), full.approximation()->log_prob(probe), 1e-8);
  // Tuning sees the same eigenvalues, so it finds the same prior precision and evidence.
  LaplaceApproximation full_tuned(post, theta, LaplaceParams{}), kron_tuned(post, theta, kron_params());
  const LaplaceTuning a = full_tuned.tune(false), b = kron_tuned.tune(false);
  EXPECT_NEAR(b.prior_precision_factor, a.prior_precision_factor, 1e-8 * a.prior_precision_factor);
  EXPECT_NEAR(b.log_marginal_likelihood_after, a.log_marginal_likelihood_after, 1e-8 * std::abs(a.log_marginal_likelihood_after));
  EXPECT_LT(max_relative(kron_tuned.approximation()->marginal_variance(), full_tuned.approximation()->marginal_variance()), 1e-8);
}

TEST(KronLaplace, FactorsOfOneExampleAreEachLayersGaussNewtonBlock) {
  // One example: the layer's GGN block sum_i (B_i^T Lambda_i B_i) (x) a_i a_i^T has one term.
  const auto post = mlp_posterior(MlpSpec{2, {4, 3}, 2, Activation::Tanh, InitScheme::Glorot}, 1, 0.5, 13,
                                  [](const Vec& x) { return Vec(x.array().sin()); });
  Rng rng(14, 0);
  const Vec theta = post->initial_point(rng);
  Mat ggn = curvature_matrix(*post, theta, CurvatureBackend::GaussNewton);
  ggn.diagonal() -= prior_precision_diagonal(*post, theta);
  IndexVec all(static_cast<std::size_t>(post->dim()));
  std::iota(all.begin(), all.end(), Index{0});
  const auto layers = kronecker_factors(*post, theta, all);
  ASSERT_EQ(layers.size(), 3u);
  for (const auto& f : layers) {
    const Mat block = ggn(f.index, f.index);
    EXPECT_LT(max_relative(Mat(Eigen::kroneckerProduct(f.output_factor, f.input_factor)), block), 1e-10)
        << "layer at " << post->layout().name_of(f.index.front());
  }
}

TEST(KronLaplace, DrawsDensityAndVariancesFollowTheKroneckerPrecision) {
  const auto post = mlp_posterior(MlpSpec{2, {3}, 1, Activation::Tanh, InitScheme::Glorot}, 30, 0.2, 15,
                                  [](const Vec& x) { return Vec::Constant(1, std::sin(2 * x[0]) * x[1]); });
  Rng rng(16, 0);
  const Vec theta = post->initial_point(rng);
  const LaplaceApproximation kron(post, theta, kron_params());
  const auto& q = dynamic_cast<const KroneckerGaussianPosterior&>(*kron.approximation());
  // The same Gaussian with its block-diagonal precision written out.
  Mat precision = Mat::Zero(theta.size(), theta.size());
  for (const auto& b : q.blocks()) precision(b.index, b.index) = dense_block_precision(b);
  const GaussianPosterior dense(theta, precision);
  EXPECT_LT(max_relative(q.marginal_variance(), dense.marginal_variance()), 1e-9);
  const Vec probe = theta + 0.1 * rng.normal_vector(theta.size());
  EXPECT_NEAR(q.log_prob(probe), dense.log_prob(probe), 1e-8);
  // Draws: mean and covariance within Monte Carlo error of the dense Gaussian's.
  const Index S = 20000;
  Rng sampler(17, 0);
  const std::vector<Vec> draws = q.sample(sampler, S);
  Vec mean = Vec::Zero(theta.size());
  for (const Vec& d : draws) mean += d / static_cast<double>(S);
  Mat cov = Mat::Zero(theta.size(), theta.size());
  for (const Vec& d : draws) cov += (d - mean) * (d - mean).transpose() / static_cast<double>(S - 1);
  const Mat exact = dense.covariance();
  for (Index k = 0; k < theta.size(); ++k) {
    const double sd = std::sqrt(exact(k, k));
    EXPECT_NEAR(mean[k], theta[k], 4.5 * sd / std::sqrt(static_cast<double>(S))) << post->layout().name_of(k);
    EXPECT_NEAR(cov(k, k) / exact(k, k), 1.0, 4.5 * std::sqrt(2.0 / static_cast<double>(S))) << post->layout().name_of(k);
    for (Index j = 0; j < k; ++j) {  // correlations: sd of a sample correlation <= 1 / sqrt(S)
      const double rho = exact(k, j) / std::sqrt(exact(k, k) * exact(j, j));
      EXPECT_NEAR(cov(k, j) / std::sqrt(cov(k, k) * cov(j, j)), rho, 4.5 / std::sqrt(static_cast<double>(S)));
    }
  }
}

TEST(KronLaplace, TracksTheFullGaussNewtonLaplaceOnB2) {
  // BENCHMARKS.md's B2: x ~ N(0, I_5), y = sin(x1) + 0.5 x2 x3 - x4 + 0.1 N(0, 1), 5-16-16-1 tanh
  // (K = 385), 1200 points; the MAP by L-BFGS, both Laplaces tuned (the defaults).
  const auto truth = [](const Vec& x) { return Vec::Constant(1, std::sin(x[0]) + 0.5 * x[1] * x[2] - x[3]); };
  const MlpSpec spec{5, {16, 16}, 1, Activation::Tanh, InitScheme::Glorot};
  const auto post = mlp_posterior(spec, 1200, 0.1, 18, truth);
  ASSERT_EQ(post->dim(), 385);
  Rng rng(19, 0);
  TrainParams training;
  training.epochs = 5000;  // L-BFGS evaluations: near a mode, though not at the gradient tolerance
  const TrainResult trained = train(NegativeLogPosteriorObjective(post), post->initial_point(rng), training, rng);
  const Vec theta = trained.best_theta;
  const double rms_residual =
      std::sqrt((post->model().forward(theta, post->inputs()) - post->targets()).squaredNorm() / 1200.0);
  ASSERT_LT(rms_residual, 0.15) << "the noise sd is 0.1";
  LaplaceApproximation full(post, theta, LaplaceParams{}), kron(post, theta, kron_params());
  full.tune(false);
  kron.tune(false);
  // Predictive sd (glm, as the CLI's default) on fresh inputs, epistemic part only.
  const auto test = mlp_posterior(spec, 400, 0.1, 20, truth);
  const Mat J = post->model().jacobian(theta, test->inputs());  // [400, 385]: the glm predictive's
  Rng sampler(21, 0);
  const auto epistemic_sd = [&](const LaplaceApproximation& laplace) {
    const std::vector<Vec> draws = laplace.approximation()->sample(sampler, 4000);
    Mat F(static_cast<Index>(draws.size()), J.rows());
    for (std::size_t s = 0; s < draws.size(); ++s) F.row(static_cast<Index>(s)) = (J * (draws[s] - theta)).transpose();
    return Vec((F.rowwise() - F.colwise().mean()).colwise().squaredNorm().transpose().array() / 3999.0).cwiseSqrt().eval();
  };
  const Vec sd_full = epistemic_sd(full), sd_kron = epistemic_sd(kron);
  const Vec log_ratio = (sd_kron.array() / sd_full.array()).log().matrix();
  const double mean_log_ratio = log_ratio.mean();
  const double rms_log_ratio = std::sqrt(log_ratio.squaredNorm() / static_cast<double>(log_ratio.size()));
  std::cout << "B2: epistemic sd kron / full: geometric mean " << std::exp(mean_log_ratio) << ", rms log ratio "
            << rms_log_ratio << "; log evidence full " << full.log_marginal_likelihood() << " kron " << kron.log_marginal_likelihood()
            << "; median epistemic sd full " << sd_full.mean() << "\n";
  // Measured: geometric mean 0.94, rms log ratio 0.17 (K-FAC drops the layers' cross terms and
  // averages the output precisions over the examples).
  EXPECT_LT(std::abs(mean_log_ratio), std::log(1.25));
  EXPECT_LT(rms_log_ratio, 0.35);
}

TEST(KronLaplace, RunsOnANetworkTooLargeForTheFullMatrixAndTunesItsNoise) {
  // 1-400-400-1 with a learned noise: K = 161,602 parameters, whose full curvature would need
  // 3 x 209 GB. Its Kronecker factors have ranks up to 41 x 41 per hidden layer, more effective
  // parameters than the 40 observations: MacKay's fixed-point update then made sigma^2 negative.
  const auto fixed = mlp_posterior(MlpSpec{1, {400, 400}, 1, Activation::Tanh, InitScheme::Glorot}, 40, 0.1, 22,
                                   [](const Vec& x) { return Vec::Constant(1, std::sin(3 * x[0])); });
  const auto post = std::make_shared<Posterior>(fixed->model_ptr(), make_learned_sigma_likelihood(0.1),
                                                GaussianPrior::isotropic(fixed->dim(), 1.0), fixed->inputs(), fixed->targets());
  ASSERT_EQ(post->dim(), 161602);
  Rng rng(23, 0);
  const Vec theta = post->initial_point(rng);
  LaplaceParams full;
  EXPECT_THROW(LaplaceApproximation(post, theta, full), InputError);
  LaplaceApproximation kron(post, theta, kron_params());
  const LaplaceTuning t = kron.tune(true);
  EXPECT_TRUE(t.converged) << t.iterations << " Newton steps";
  EXPECT_GT(t.log_marginal_likelihood_after, t.log_marginal_likelihood_before);
  EXPECT_TRUE(std::isfinite(t.noise_sd) && t.noise_sd > 0) << t.noise_sd;
  const Vec variance = kron.approximation()->marginal_variance();
  ASSERT_TRUE(variance.allFinite());
  EXPECT_GT(variance.minCoeff(), 0.0);
  // No network direction is wider than the tuned prior: the curvature is at least alpha times its precision.
  EXPECT_LE(variance.head(post->dim() - 1).maxCoeff(), 1.0 / t.prior_precision_factor * (1 + 1e-9));
  // 40 examples constrain few of the 160,801 hidden-layer directions: nearly all keep the prior.
  const Vec relative = kron.curvature_over_prior();
  EXPECT_GT((relative.array() <= 1.01 * t.prior_precision_factor).count(), post->dim() - 5000);
  Rng sampler(24, 0);
  const std::vector<Vec> draws = kron.approximation()->sample(sampler, 3);
  for (const Vec& d : draws) EXPECT_TRUE(d.allFinite());
}

TEST(LastLayerLaplace, IsTheLaplaceOfTheOutputLayerWithTheRestFixedAtTheMap) {
  const auto fixed = mlp_posterior(MlpSpec{1, {4}, 1, Activation::Tanh, InitScheme::Glorot}, 12, 0.1, 25,
                                   [](const Vec& x) { return Vec::Constant(1, std::sin(3 * x[0])); });
  const auto post = std::make_shared<Posterior>(fixed->model_ptr(), make_learned_sigma_likelihood(0.1),
                                                GaussianPrior::isotropic(fixed->dim(), 1.0), fixed->inputs(), fixed->targets());
  const IndexVec active = laplace_active_parameters(*post, LaplaceSubset::LastLayer);
  // layer2.weight [1, 4], layer2.bias [1], then log sigma.
  ASSERT_EQ(active.size(), 6u);
  EXPECT_EQ(post->layout().name_of(active.front()), "layer2.weight[0,0]");
  EXPECT_EQ(active.back(), post->dim() - 1);
  Rng rng(26, 0);
  const Vec theta = post->initial_point(rng);
  for (const auto backend : {CurvatureBackend::Exact, CurvatureBackend::Fisher, CurvatureBackend::GaussNewton}) {
    const Mat all = curvature_matrix(*post, theta, backend);
    EXPECT_LT(max_relative(curvature_matrix(*post, theta, backend, 1e9, &active), Mat(all(active, active))), 1e-12) << to_string(backend);
    EXPECT_LT(max_relative(curvature_diagonal(*post, theta, backend, &active), Vec(all.diagonal()(active))), 1e-10) << to_string(backend);
  }
  for (const auto structure : {CurvatureStructure::Full, CurvatureStructure::Diagonal, CurvatureStructure::Kronecker}) {
    LaplaceParams p;
    p.subset = LaplaceSubset::LastLayer;
    p.structure = structure;
    LaplaceApproximation laplace(post, theta, p);
    laplace.tune(false);  // with the learned noise as a hyperparameter, as the CLI's default
    const Vec centre = laplace.approximation()->mean();
    Rng sampler(27, 0);
    const Vec variance = laplace.approximation()->marginal_variance();
    std::vector<char> is_active(static_cast<std::size_t>(post->dim()), 0);
    for (const Index k : active) is_active[static_cast<std::size_t>(k)] = 1;
    for (const Vec& d : laplace.approximation()->sample(sampler, 20))
      for (Index k = 0; k < post->dim(); ++k) {
        if (is_active[static_cast<std::size_t>(k)]) continue;
        EXPECT_EQ(d[k], theta[k]) << "fixed " << post->layout().name_of(k) << ", " << to_string(structure);
        EXPECT_EQ(variance[k], 0.0);
      }
    for (const Index k : active) EXPECT_GT(variance[k], 0.0) << post->layout().name_of(k) << ", " << to_string(structure);
    EXPECT_EQ(laplace.active().size(), active.size());
  }
}

TEST(LastLayerLaplace, TakesTheOutputLayerWithOrWithoutABias) {
  const auto blr = testing::make_blr();  // the Linear model: its one layer is the output layer
  EXPECT_EQ(laplace_active_parameters(*blr.posterior, LaplaceSubset::LastLayer).size(), 3u);
  const auto no_bias = std::make_shared<Posterior>(std::make_shared<LinearNoBias>(2, 1), make_gaussian_likelihood(0.3),
                                                   GaussianPrior::isotropic(2, 1.0), blr.posterior->inputs(), blr.posterior->targets());
  EXPECT_EQ(laplace_active_parameters(*no_bias, LaplaceSubset::LastLayer).size(), 2u);
  EXPECT_THROW(parse_laplace_subset("first-layer"), InputError);
  EXPECT_THROW(parse_curvature_structure("kfac"), InputError);
}

TEST(KronLaplace, RefusesWhatItCannotFactorise) {
  const auto post = mlp_posterior(MlpSpec{1, {3}, 1, Activation::Tanh, InitScheme::Glorot}, 5, 0.1, 28,
                                  [](const Vec& x) { return x; });
  const Vec theta = Vec::Zero(post->dim());
  LaplaceParams exact = kron_params();
  exact.backend = CurvatureBackend::Exact;
  EXPECT_THROW(LaplaceApproximation(post, theta, exact), InputError);
  const auto blr = testing::make_blr();  // its prior sds differ within the layer
  EXPECT_THROW(LaplaceApproximation(blr.posterior, blr.mean, kron_params()), InputError);
  const auto no_bias = std::make_shared<Posterior>(std::make_shared<LinearNoBias>(2, 1), make_gaussian_likelihood(0.3),
                                                   GaussianPrior::isotropic(2, 1.0), blr.posterior->inputs(), blr.posterior->targets());
  EXPECT_THROW(LaplaceApproximation(no_bias, Vec::Zero(2), kron_params()), InputError);  // not an Mlp
}

// ---------------------------------------------------------------------------------------------
// K-FAC for convolutions (Grosse and Martens 2016): the factors against their definitions, the
// per-example derivatives taken by finite differences of the layers after the conv.

CnnLayer kfac_layer(CnnLayerType type, Index out = 0, Index kernel = 1) {
  CnnLayer l;
  l.type = type;
  l.out = out;
  l.kernel_h = l.kernel_w = kernel;
  l.activation = Activation::Tanh;
  return l;
}

TEST(KronLaplace, ConvFactorsAreTheirDefinitionsSummedOverPositions) {
  // conv (2 channels, 2x2 kernel, bias) on 1x3x3 images -> 2x2x2 (4 positions), tanh, fc to 3 classes.
  const ImageShape shape{1, 3, 3};
  auto net = std::make_shared<Cnn>(shape, std::vector<CnnLayer>{kfac_layer(CnnLayerType::Conv, 2, 2), kfac_layer(CnnLayerType::Activation),
                                                                kfac_layer(CnnLayerType::Linear, 3)},
                                   InitScheme::Glorot);
  const Index N = 4, P = net->num_params();
  ASSERT_EQ(P, 2 * 4 + 2 + 3 * 8 + 3);
  Rng rng(31, 0);
  Mat X(9, N), Y(1, N);
  for (Index i = 0; i < N; ++i) {
    X.col(i) = rng.normal_vector(9);
    Y(0, i) = static_cast<double>(i % 3);
  }
  const auto post = std::make_shared<Posterior>(net, make_categorical_likelihood(3), GaussianPrior::isotropic(P, 1.0), X, Y);
  const Vec theta = 0.8 * rng.normal_vector(P);
  IndexVec all(static_cast<std::size_t>(P));
  std::iota(all.begin(), all.end(), Index{0});
  const auto factors = kronecker_factors(*post, theta, all);
  ASSERT_EQ(factors.size(), 2u);

  // The conv's output s [2 channels x 4 positions] by its definition, and the layers after it as a
  // network of their own, whose input derivatives B_it = d f / d s_it come by central differences.
  const Vec conv_w = theta.head(8), conv_b = theta.segment(8, 2), rest = theta.tail(3 * 8 + 3);
  const auto patch = [&](Index i, Index t) {  // [x(oh+ki, ow+kj) for ki, kj; 1]
    Vec a(5);
    const Index oh = t / 2, ow = t % 2;
    for (Index ki = 0; ki < 2; ++ki)
      for (Index kj = 0; kj < 2; ++kj) a[ki * 2 + kj] = X((oh + ki) * 3 + ow + kj, i);
    a[4] = 1.0;
    return a;
  };
  const Cnn after({2, 2, 2}, {kfac_layer(CnnLayerType::Activation), kfac_layer(CnnLayerType::Linear, 3)}, InitScheme::Glorot);
  Mat A = Mat::Zero(5, 5), G_conv = Mat::Zero(2, 2), A_fc = Mat::Zero(9, 9), G_fc = Mat::Zero(3, 3);
  for (Index i = 0; i < N; ++i) {
    Vec s(8);
    for (Index o = 0; o < 2; ++o)
      for (Index t = 0; t < 4; ++t) s[o * 4 + t] = conv_w.segment(o * 4, 4).dot(patch(i, t).head(4)) + conv_b[o];
    const Vec f = after.forward(rest, s);
    const Vec p = (f.array() - f.maxCoeff()).exp() / (f.array() - f.maxCoeff()).exp().sum();
    const Mat lambda = Mat(p.asDiagonal()) - p * p.transpose();  // the softmax NLL's Hessian in f
    Mat B(3, 8);  // d f / d s
    const double h = 1e-5;
    for (Index k = 0; k < 8; ++k) {
      Vec up = s, down = s;
      up[k] += h;
      down[k] -= h;
      B.col(k) = (after.forward(rest, up) - after.forward(rest, down)) / (2 * h);
    }
    for (Index t = 0; t < 4; ++t) {
      A += patch(i, t) * patch(i, t).transpose();
      const Mat Bt = B(Eigen::all, std::vector<Index>{t, 4 + t});  // [3, 2 channels] at position t
      G_conv += Bt.transpose() * lambda * Bt / 4.0;
    }
    Vec a(9);
    a << s.array().tanh().matrix(), 1.0;
    A_fc += a * a.transpose();
    G_fc += lambda;  // the output layer: d f / d z = I
  }
  G_conv /= static_cast<double>(N);
  G_fc /= static_cast<double>(N);
  EXPECT_LT(max_relative(factors[0].input_factor, A), 1e-12);
  EXPECT_LT(max_relative(factors[0].output_factor, G_conv), 1e-7);  // finite differences
  EXPECT_LT(max_relative(factors[1].input_factor, A_fc), 1e-12);
  EXPECT_LT(max_relative(factors[1].output_factor, G_fc), 1e-12);
  // Their parameters as [W b] by output channel: conv1.weight[o, 0, ki, kj] then conv1.bias[o].
  EXPECT_EQ(factors[0].index, (IndexVec{0, 1, 2, 3, 8, 4, 5, 6, 7, 9}));
}

TEST(KronLaplace, IsExactForAConvWithOnePositionAndOneExample) {
  // One output position and one example: the conv's GGN block has a single term, (B^T Lambda B) (x) a a^T.
  const ImageShape shape{2, 3, 3};
  auto net = std::make_shared<Cnn>(shape, parse_cnn_layers("conv3k3,fc4", shape, 3, Activation::Tanh), InitScheme::Glorot);
  Rng rng(32, 0);
  const Mat X = rng.normal_vector(18);
  const Mat Y = Mat::Constant(1, 1, 2.0);
  const auto post = std::make_shared<Posterior>(net, make_categorical_likelihood(3), GaussianPrior::isotropic(net->num_params(), 1.0), X, Y);
  const Vec theta = post->initial_point(rng);
  Mat ggn = curvature_matrix(*post, theta, CurvatureBackend::GaussNewton);
  ggn.diagonal() -= prior_precision_diagonal(*post, theta);
  IndexVec all(static_cast<std::size_t>(post->dim()));
  std::iota(all.begin(), all.end(), Index{0});
  const auto layers = kronecker_factors(*post, theta, all);
  ASSERT_EQ(layers.size(), 3u);
  for (const auto& f : layers)
    EXPECT_LT(max_relative(Mat(Eigen::kroneckerProduct(f.output_factor, f.input_factor)), ggn(f.index, f.index)), 1e-10)
        << "layer at " << post->layout().name_of(f.index.front());
}

/// A small CNN with a GroupNorm (its weight and bias outside the Kronecker layers) on labelled noise.
std::shared_ptr<Posterior> cnn_with_norm_posterior(double prior_sd, Activation activation = Activation::Tanh) {
  const ImageShape shape{1, 6, 6};
  auto net = std::make_shared<Cnn>(shape, parse_cnn_layers("conv4k3,gn2,pool2,fc5", shape, 3, activation), InitScheme::He);
  Rng rng(33, 0);
  const Index N = 40;
  Mat X(36, N), Y(1, N);
  for (Index i = 0; i < N; ++i) {
    X.col(i) = rng.normal_vector(36);
    Y(0, i) = static_cast<double>(i % 3);
  }
  return std::make_shared<Posterior>(net, make_categorical_likelihood(3), GaussianPrior::isotropic(net->num_params(), prior_sd), X, Y);
}

TEST(KronLaplace, RunsOnACnnWithItsNormsOnTheDiagonal) {
  // conv -> GroupNorm -> pool -> fc: the conv and fc layers get Kronecker blocks, GroupNorm's
  // weight and bias the diagonal GGN; every marginal variance is positive and below the prior's.
  const auto post = cnn_with_norm_posterior(1.0, Activation::Relu);
  Rng rng(33, 1);
  const LaplaceApproximation kron(post, post->initial_point(rng), kron_params());
  const Vec v = kron.approximation()->marginal_variance();
  ASSERT_EQ(v.size(), post->model().num_params());
  EXPECT_GT(v.minCoeff(), 0.0);
  EXPECT_LE(v.maxCoeff(), 1.0 + 1e-12);  // the prior variance bounds the posterior's
  EXPECT_LT(v.minCoeff(), 0.9);           // and the data shrink some directions
}

TEST(LaplacePriorPrecision, AFactorAlphaIsTheLaplaceUnderAPriorAlphaTimesMorePrecise) {
  // The GGN does not depend on the prior: the approximation at factor alpha must be the one built
  // under N(0, 1 / alpha), variances and evidence alike, and successive factors must not compound.
  const auto mlp = [](double sd) {
    const auto base = mlp_posterior(MlpSpec{2, {5}, 1, Activation::Tanh, InitScheme::Glorot}, 30, 0.2, 34,
                                    [](const Vec& x) { return Vec::Constant(1, std::sin(x[0]) + 0.3 * x[1]); });
    return std::make_shared<Posterior>(base->model_ptr(), make_gaussian_likelihood(0.2), GaussianPrior::isotropic(base->dim(), sd),
                                       base->inputs(), base->targets());
  };
  const double alpha = 6.0;
  for (const bool cnn : {false, true})
    for (const auto structure : {CurvatureStructure::Full, CurvatureStructure::Diagonal, CurvatureStructure::Kronecker}) {
      const auto post = cnn ? cnn_with_norm_posterior(1.0) : mlp(1.0);
      const auto scaled = cnn ? cnn_with_norm_posterior(1.0 / std::sqrt(alpha)) : mlp(1.0 / std::sqrt(alpha));
      Rng rng(35, 0);
      const Vec theta = post->initial_point(rng);
      LaplaceParams p;
      p.structure = structure;
      LaplaceApproximation laplace(post, theta, p);
      laplace.set_prior_precision_factor(0.3);
      laplace.set_prior_precision_factor(alpha);
      const LaplaceApproximation reference(scaled, theta, p);
      const std::string what = std::string(cnn ? "cnn " : "mlp ") + to_string(structure);
      EXPECT_EQ(laplace.prior_precision_factor(), alpha);
      EXPECT_LT(max_relative(laplace.approximation()->marginal_variance(), reference.approximation()->marginal_variance()), 1e-9) << what;
      EXPECT_NEAR(laplace.log_marginal_likelihood(), reference.log_marginal_likelihood(),
                  1e-9 * std::abs(reference.log_marginal_likelihood()))
          << what;
    }
}

TEST(LaplacePriorPrecision, TheMarginalLikelihoodTuningFindsTheMaximumOfTheEvidence) {
  // tune() maximises the evidence from the likelihood curvature's eigenvalues; the evidence of the
  // rebuilt approximations must peak there. On the cnn, its norms' coordinates count too.
  for (const auto structure : {CurvatureStructure::Full, CurvatureStructure::Diagonal, CurvatureStructure::Kronecker}) {
    const auto post = cnn_with_norm_posterior(1.0);
    Rng rng(36, 0);
    const Vec theta = post->initial_point(rng);
    LaplaceParams p;
    p.structure = structure;
    LaplaceApproximation tuned(post, theta, p);
    const LaplaceTuning t = tuned.tune(false);
    ASSERT_TRUE(t.converged) << to_string(structure);
    const auto evidence_at = [&](double factor) {
      LaplaceApproximation la(post, theta, p);
      la.set_prior_precision_factor(factor);
      return la.log_marginal_likelihood();
    };
    const double at = evidence_at(t.prior_precision_factor);
    EXPECT_NEAR(at, t.log_marginal_likelihood_after, 1e-8 * std::abs(at)) << to_string(structure);
    EXPECT_GT(at, evidence_at(1.05 * t.prior_precision_factor)) << to_string(structure);
    EXPECT_GT(at, evidence_at(t.prior_precision_factor / 1.05)) << to_string(structure);
  }
}

}  // namespace
}  // namespace uqnn
