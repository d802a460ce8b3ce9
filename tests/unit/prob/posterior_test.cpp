// Likelihoods, priors and the Posterior: values against closed forms, gradients and Hessian-vector
// products against finite differences, minibatch estimates unbiased, views consistent.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "uqnn/core/error.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/posterior.hpp"
#include "uqnn/prob/views.hpp"

namespace uqnn {
namespace {

constexpr double kLog2Pi = 1.8378770664093454836;

struct Setup {
  std::string name;
  std::shared_ptr<Likelihood> likelihood;
  std::shared_ptr<Prior> prior;  // null: isotropic Gaussian
  Index targets = 1;
};

std::shared_ptr<Posterior> make_posterior(const Setup& s, Index n = 12, std::uint64_t seed = 1) {
  const Index out = s.likelihood->model_outputs(s.targets);
  auto model = std::make_shared<Mlp>(MlpSpec{2, {4}, out, Activation::Tanh, InitScheme::Glorot});
  Rng rng(seed);
  Mat X(2, n), Y(s.targets, n);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < n; ++i)
    for (Index t = 0; t < s.targets; ++t) {
      if (s.likelihood->kind() == "bernoulli") Y(t, i) = rng.uniform() < 0.5 ? 0.0 : 1.0;
      else if (s.likelihood->kind() == "categorical") Y(t, i) = static_cast<double>(rng.uniform_index(3));
      else Y(t, i) = std::sin(3 * X(0, i)) + 0.2 * rng.normal();
    }
  auto prior = s.prior ? s.prior : GaussianPrior::isotropic(model->num_params(), 1.3);
  return std::make_shared<Posterior>(model, s.likelihood, prior, X, Y);
}

// Readable test names in ctest / gtest output instead of the struct bytes.
void PrintTo(const Setup& value, std::ostream* os) { *os << value.name; }

std::vector<Setup> setups() {
  const Index P = 2 * 4 + 4;  // network parameters before the output layer vary; priors sized later
  (void)P;
  return {
      {"gaussian", make_gaussian_likelihood(0.3), nullptr, 1},
      {"gaussian_two_targets", make_gaussian_likelihood(0.3), nullptr, 2},
      {"learned_sigma", make_learned_sigma_likelihood(0.5), nullptr, 1},
      {"heteroscedastic", make_heteroscedastic_likelihood(), nullptr, 1},
      {"heteroscedastic_two_targets", make_heteroscedastic_likelihood(), nullptr, 2},
      {"bernoulli", make_bernoulli_likelihood(), nullptr, 1},
      {"categorical", make_categorical_likelihood(3), nullptr, 1},
  };
}

Vec random_point(const Posterior& p, std::uint64_t seed) {
  Rng rng(seed);
  Vec theta = p.initial_point(rng);
  theta += 0.5 * rng.normal_vector(theta.size());
  return theta;
}

class PosteriorDerivatives : public ::testing::TestWithParam<Setup> {};

TEST_P(PosteriorDerivatives, GradientMatchesFiniteDifferences) {
  const auto post = make_posterior(GetParam());
  const Vec theta = random_point(*post, 3);
  Vec grad;
  post->log_density_and_grad(theta, grad);
  ASSERT_EQ(grad.size(), post->dim());
  const double h = 1e-6;
  for (Index k = 0; k < theta.size(); ++k) {
    Vec a = theta, b = theta;
    a[k] += h;
    b[k] -= h;
    const double fd = (post->log_density(a) - post->log_density(b)) / (2 * h);
    EXPECT_NEAR(grad[k], fd, 1e-6 * (1 + std::abs(fd))) << GetParam().name << " " << post->layout().name_of(k);
  }
}

// The value alone (a forward pass: what Metropolis, slice and SG-MCMC's lp__ use) is the gradient
// path's value, prior and likelihood extras included, here and through the subspace and tempered views.
TEST_P(PosteriorDerivatives, TheValueAloneIsTheGradientPathsValue) {
  const auto post = make_posterior(GetParam());
  for (std::uint64_t seed : {5, 6}) {
    const Vec theta = random_point(*post, seed);
    Vec grad;
    const double value = post->log_density_and_grad(theta, grad);
    EXPECT_NEAR(post->log_density(theta), value, 1e-12 * (1 + std::abs(value))) << GetParam().name;
    EXPECT_NEAR(post->log_likelihood(theta, post->inputs(), post->targets()), value - post->log_prior(theta), 1e-12 * (1 + std::abs(value)))
        << GetParam().name;
    const IndexVec active{0, 5, theta.size() - 1};
    const SubspaceView view(post, active, theta);
    EXPECT_NEAR(view.log_density(view.restrict(theta)), value, 1e-12 * (1 + std::abs(value))) << GetParam().name;
    const TemperedView cold(post, 0.4);
    EXPECT_NEAR(cold.log_density(theta), 0.4 * value, 1e-12 * (1 + std::abs(value))) << GetParam().name;
  }
}

TEST_P(PosteriorDerivatives, HessianVectorProductMatchesFiniteDifferences) {
  const auto post = make_posterior(GetParam());
  const Vec theta = random_point(*post, 4);
  Rng rng(9);
  const Vec v = rng.normal_vector(theta.size());
  const Vec hv = post->hessian_vector_product(theta, v);
  const double h = 1e-5;
  Vec ga, gb;
  post->log_density_and_grad(theta + h * v, ga);
  post->log_density_and_grad(theta - h * v, gb);
  const Vec fd = (ga - gb) / (2 * h);
  for (Index k = 0; k < theta.size(); ++k)
    EXPECT_NEAR(hv[k], fd[k], 2e-6 * (1 + std::abs(fd[k]))) << GetParam().name << " " << post->layout().name_of(k);
}

TEST_P(PosteriorDerivatives, MinibatchEstimatesAverageToTheFullBatch) {
  // Over the blocks of any partition into equal batches, the (N/n)-scaled estimates average to the
  // full-batch value and gradient exactly: that is what unbiasedness under uniform batches means.
  const auto post = make_posterior(GetParam(), 12);
  const Vec theta = random_point(*post, 5);
  Vec full_grad;
  const double full = post->log_density_and_grad(theta, full_grad);
  Rng rng(2);
  const IndexVec perm = rng.permutation(12);
  double mean_value = 0;
  Vec mean_grad = Vec::Zero(theta.size());
  for (int b = 0; b < 3; ++b) {
    IndexVec batch(perm.begin() + 4 * b, perm.begin() + 4 * (b + 1));
    Vec g;
    mean_value += post->minibatch_log_density_and_grad(theta, batch, g) / 3;
    mean_grad += g / 3;
  }
  EXPECT_NEAR(mean_value, full, 1e-10 * (1 + std::abs(full)));
  EXPECT_LT((mean_grad - full_grad).cwiseAbs().maxCoeff(), 1e-10 * (1 + full_grad.cwiseAbs().maxCoeff()));
}

INSTANTIATE_TEST_SUITE_P(Likelihoods, PosteriorDerivatives, ::testing::ValuesIn(setups()),
                         [](const auto& info) { return info.param.name; });

TEST(Posterior, PriorsGradientsAndHessiansMatchFiniteDifferences) {
  const Index P = Mlp(MlpSpec{2, {4}, 1, Activation::Tanh, InitScheme::Glorot}).num_params();
  ParamLayout layout = Mlp(MlpSpec{2, {4}, 1, Activation::Tanh, InitScheme::Glorot}).layout();
  const std::vector<std::pair<std::string, std::shared_ptr<Prior>>> priors{
      {"per_layer", GaussianPrior::per_layer(layout, {0.5, 1.0, 2.0, 0.7})},
      {"fan_in", GaussianPrior::fan_in_scaled(layout, 1.0)},
      {"mixture", std::make_shared<ScaleMixturePrior>(P, 0.3, 1.5, 0.1)},
      {"laplace", std::make_shared<LaplacePrior>(P, 0.8)}};
  for (const auto& [name, prior] : priors) {
    const auto post = make_posterior({name, make_gaussian_likelihood(0.3), prior, 1});
    const Vec theta = random_point(*post, 6);
    Vec grad;
    post->log_density_and_grad(theta, grad);
    const double h = 1e-6;
    for (Index k = 0; k < theta.size(); ++k) {
      Vec a = theta, b = theta;
      a[k] += h;
      b[k] -= h;
      const double fd = (post->log_density(a) - post->log_density(b)) / (2 * h);
      EXPECT_NEAR(grad[k], fd, 1e-6 * (1 + std::abs(fd))) << name << " " << k;
    }
    Vec e = Vec::Zero(theta.size());
    e[0] = 1;
    Vec ga, gb;
    post->log_density_and_grad(theta + 1e-5 * e, ga);
    post->log_density_and_grad(theta - 1e-5 * e, gb);
    const Vec fd = (ga - gb) / 2e-5;
    const Vec hv = post->hessian_vector_product(theta, e);
    EXPECT_LT((hv - fd).cwiseAbs().maxCoeff(), 1e-5 * (1 + fd.cwiseAbs().maxCoeff())) << name;
  }
}

// The gradient interfaces take segments in place (Eigen::Ref): a vector of the wrong size is an
// error, never resized or written past.
TEST(Posterior, GradientsOfTheWrongSizeAreAnError) {
  const Mlp mlp(MlpSpec{2, {4}, 1, Activation::Tanh, InitScheme::Glorot});
  const Index P = mlp.num_params();
  const Mat X = Mat::Ones(2, 3);
  const OutputLoss<double> loss = [](const Mat& Y, Mat& dY) {
    dY = Y;
    return 0.5 * Y.squaredNorm();
  };
  Vec longer = Vec::Zero(P + 1);
  EXPECT_THROW(mlp.value_and_gradient(Vec::Zero(P), X, loss, longer), std::invalid_argument);
  Vec fits = Vec::Zero(P + 1);
  EXPECT_NO_THROW(mlp.value_and_gradient(Vec::Zero(P), X, loss, fits.head(P)));  // a segment, in place
  const auto prior = GaussianPrior::isotropic(P, 1.0);
  EXPECT_THROW(prior->log_density(Vec::Zero(P), &longer), std::invalid_argument);
  EXPECT_THROW(prior->log_density(Vec::Zero(P + 1), nullptr), std::invalid_argument);
  fits.setZero();
  EXPECT_DOUBLE_EQ(prior->log_density(Vec::Ones(P), fits.head(P)), prior->log_density(Vec::Ones(P), nullptr));
  EXPECT_EQ(fits.head(P), -Vec::Ones(P));
  EXPECT_EQ(fits[P], 0.0) << "the entry past the segment is left alone";
}

TEST(Likelihood, GaussianValueIsTheClosedForm) {
  const auto lik = make_gaussian_likelihood(0.5);
  Mat Y(1, 3), T(1, 3);
  Y << 0.1, -0.2, 1.0;
  T << 0.3, 0.0, 0.5;
  double expected = 0;
  for (int i = 0; i < 3; ++i) {
    const double r = T(0, i) - Y(0, i);
    expected += -0.5 * r * r / 0.25 - std::log(0.5) - 0.5 * kLog2Pi;
  }
  EXPECT_NEAR(lik->log_likelihood(Y, T, Vec(0), nullptr, nullptr), expected, 1e-14);
  EXPECT_NEAR(lik->pointwise_log_likelihood(Y, T, Vec(0)).sum(), expected, 1e-14);
}

TEST(Likelihood, HeteroscedasticAndLearnedSigmaAreTheGaussianDensity) {
  Mat Y(2, 2), T(1, 2);
  Y << 0.1, -0.2, std::log(0.4), std::log(2.0);
  T << 0.3, 0.5;
  const double expected = -0.5 * std::pow(0.2 / 0.4, 2) - std::log(0.4) - 0.5 * std::pow(0.7 / 2.0, 2) - std::log(2.0) - kLog2Pi;
  const auto heteroscedastic = make_heteroscedastic_likelihood();
  EXPECT_NEAR(heteroscedastic->log_likelihood(Y, T, Vec(0), nullptr, nullptr), expected, 1e-14);
  const Vec pointwise = heteroscedastic->pointwise_log_likelihood(Y, T, Vec(0));
  EXPECT_NEAR(pointwise[0], -0.5 * std::pow(0.2 / 0.4, 2) - std::log(0.4) - 0.5 * kLog2Pi, 1e-14);
  EXPECT_NEAR(pointwise[1], -0.5 * std::pow(0.7 / 2.0, 2) - std::log(2.0) - 0.5 * kLog2Pi, 1e-14);
  // Two targets: rows (mean_1, mean_2, log sigma_1, log sigma_2); a point's density is the product.
  Mat Y2(4, 1), T2(2, 1);
  Y2 << 0.1, -0.2, std::log(0.4), std::log(2.0);
  T2 << 0.3, 0.5;
  EXPECT_NEAR(heteroscedastic->pointwise_log_likelihood(Y2, T2, Vec(0))[0], expected, 1e-14);
  const auto learned = make_learned_sigma_likelihood(1.0);
  const Vec log_sigma = Vec::Constant(1, std::log(0.4));
  const double expected_learned = -0.5 * (0.04 + 0.49) / 0.16 - 2 * std::log(0.4) - kLog2Pi;
  EXPECT_NEAR(learned->log_likelihood(Y.topRows(1), T, log_sigma, nullptr, nullptr), expected_learned, 1e-14);
}

TEST(Likelihood, BernoulliAndCategoricalAreTheClosedForms) {
  Mat f(1, 2), y(1, 2);
  f << 0.7, -40.0;
  y << 1.0, 0.0;
  const double expected = std::log(1 / (1 + std::exp(-0.7))) + std::log(1 - 1 / (1 + std::exp(40.0)));
  EXPECT_NEAR(make_bernoulli_likelihood()->log_likelihood(f, y, Vec(0), nullptr, nullptr), expected, 1e-14);
  Mat logits(3, 1), label(1, 1);
  logits << 1.0, 2.0, -0.5;
  label << 1;
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(-0.5));
  EXPECT_NEAR(make_categorical_likelihood(3)->log_likelihood(logits, label, Vec(0), nullptr, nullptr), 2.0 - lse, 1e-14);
  Mat bad(1, 1);
  bad << 0.5;
  EXPECT_THROW(make_bernoulli_likelihood()->validate_targets(bad), InputError);
  bad << 3;
  EXPECT_THROW(make_categorical_likelihood(3)->validate_targets(bad), InputError);
}

// The predictive sums mean(Y) and noise_variance(Y) element by element: both have one row per
// output of the mean (a classifier's K class probabilities), or the sum reads past the end.
TEST(Likelihood, NoiseVarianceHasTheShapeOfTheMean) {
  Mat logits(3, 4);
  logits.setRandom();
  for (const auto& lik : {make_categorical_likelihood(3), make_bernoulli_likelihood(), make_gaussian_likelihood(0.5)}) {
    const Mat Y = lik->kind() == "categorical" ? logits : Mat(logits.topRows(1));
    const Mat mean = lik->mean(Y), noise = lik->noise_variance(Y, Vec(0));
    EXPECT_EQ(noise.rows(), mean.rows()) << lik->kind();
    EXPECT_EQ(noise.cols(), mean.cols()) << lik->kind();
  }
}

TEST(Prior, ValuesAreTheClosedForms) {
  Vec theta(3);
  theta << 0.5, -1.0, 2.0;
  const double gauss = -0.5 * theta.squaredNorm() / 4.0 - 3 * std::log(2.0) - 1.5 * kLog2Pi;
  EXPECT_NEAR(GaussianPrior::isotropic(3, 2.0)->log_density(theta, nullptr), gauss, 1e-14);
  // A mixture of two equal components is that component.
  EXPECT_NEAR(ScaleMixturePrior(3, 0.3, 2.0, 2.0).log_density(theta, nullptr), gauss, 1e-13);
  const double mixture0 = std::log(0.3 * std::exp(-0.125) / std::sqrt(2 * std::numbers::pi) +
                                   0.7 * std::exp(-0.5 * 0.25 / 0.01) / (0.1 * std::sqrt(2 * std::numbers::pi)));
  EXPECT_NEAR(ScaleMixturePrior(1, 0.3, 1.0, 0.1).log_density(theta.head(1), nullptr), mixture0, 1e-13);
  EXPECT_NEAR(LaplacePrior(3, 0.5).log_density(theta, nullptr), -3.5 / 0.5 - 3 * std::log(1.0), 1e-14);
}

TEST(Prior, SamplesHaveTheRightVariance) {
  Rng rng(12);
  const int n = 20000;
  const auto check = [&](const Prior& prior, double variance) {
    double s2 = 0;
    for (int i = 0; i < n; ++i) s2 += prior.sample(rng).squaredNorm();
    const double estimate = s2 / (n * prior.dim());
    EXPECT_NEAR(estimate, variance, 0.05 * variance);
  };
  check(*GaussianPrior::isotropic(2, 1.5), 2.25);
  check(ScaleMixturePrior(2, 0.25, 2.0, 0.5), 0.25 * 4 + 0.75 * 0.25);
  check(LaplacePrior(2, 0.7), 2 * 0.49);
}


// model.json records a Gaussian prior compactly (a network's million parameters must not make
// megabytes of "0.0"): one number for an isotropic prior, runs for one per layer, every entry when
// runs would not be shorter. Each form reads back to the same prior, and so do the arrays that
// runs before the compaction wrote.
TEST(Prior, AGaussianPriorIsWrittenCompactlyAndReadBackExactly) {
  const auto roundtrip = [](const GaussianPrior& prior) {
    const nlohmann::json j = nlohmann::json::parse(prior.to_json().dump());
    const auto back = std::dynamic_pointer_cast<GaussianPrior>(make_prior(j));
    EXPECT_TRUE(back && back->mean() == prior.mean() && back->sd() == prior.sd()) << j.dump();
    return j;
  };
  const nlohmann::json isotropic = roundtrip(*GaussianPrior::isotropic(100000, 0.7));
  EXPECT_EQ(isotropic["sd"], 0.7);
  EXPECT_EQ(isotropic["mean"], 0.0);
  ParamLayout layout;
  layout.add_matrix("w", 300, 20, 20);
  layout.add_matrix("b", 300, 1, 1);
  const nlohmann::json per_layer = roundtrip(*GaussianPrior::per_layer(layout, {0.5, 2.0}));
  EXPECT_EQ(per_layer["sd"], nlohmann::json::parse("[[0.5, 6000], [2.0, 300]]"));
  Vec varied(4), sd = Vec::Ones(4);
  varied << 1, 2, 3, 4;
  EXPECT_TRUE(roundtrip(GaussianPrior(varied, sd))["mean"].is_array());
  // As runs before the compaction wrote it: arrays and no dim.
  const auto old = make_prior({{"kind", "gaussian"}, {"mean", {0.0, 1.0}}, {"sd", {2.0, 2.0}}});
  EXPECT_EQ(old->dim(), 2);
  EXPECT_THROW(make_prior({{"kind", "gaussian"}, {"dim", 3}, {"mean", 0.0}, {"sd", {{1.0, 2}}}}), InputError);
  EXPECT_THROW(make_prior({{"kind", "gaussian"}, {"mean", 0.0}, {"sd", 1.0}}), InputError);
}
TEST(Views, SubspaceGradientIsTheRestrictedFullGradient) {
  const auto post = make_posterior(setups()[0]);
  const Vec theta = random_point(*post, 8);
  const IndexVec active{0, 3, 7, 11};
  SubspaceView view(post, active, theta);
  const Vec z = view.restrict(theta);
  Vec gz, gfull;
  const double vz = view.log_density_and_grad(z, gz);
  const double vf = post->log_density_and_grad(theta, gfull);
  EXPECT_DOUBLE_EQ(vz, vf);
  for (std::size_t j = 0; j < active.size(); ++j) EXPECT_DOUBLE_EQ(gz[static_cast<Index>(j)], gfull[active[j]]);
  Vec moved = z;
  moved[1] += 0.3;
  const Vec expanded = view.expand(moved);
  EXPECT_DOUBLE_EQ(expanded[3], theta[3] + 0.3);
  EXPECT_DOUBLE_EQ(expanded[1], theta[1]);
}

TEST(Views, TemperingScalesValueGradientAndHessian) {
  const auto post = make_posterior(setups()[0]);
  const Vec theta = random_point(*post, 9);
  TemperedView cold(post, 2.5);
  Vec g, gt;
  const double v = post->log_density_and_grad(theta, g);
  EXPECT_NEAR(cold.log_density_and_grad(theta, gt), 2.5 * v, 1e-12 * std::abs(v));
  EXPECT_LT((gt - 2.5 * g).cwiseAbs().maxCoeff(), 1e-12 * (1 + g.cwiseAbs().maxCoeff()));
}

TEST(Posterior, RejectsMismatchedShapes) {
  auto model = std::make_shared<Mlp>(MlpSpec{2, {3}, 1, Activation::Tanh, InitScheme::Glorot});
  const auto prior = GaussianPrior::isotropic(model->num_params(), 1.0);
  EXPECT_THROW(Posterior(model, make_gaussian_likelihood(1), prior, Mat::Zero(3, 4), Mat::Zero(1, 4)), std::invalid_argument);
  EXPECT_THROW(Posterior(model, make_gaussian_likelihood(1), prior, Mat::Zero(2, 4), Mat::Zero(1, 5)), std::invalid_argument);
  EXPECT_THROW(Posterior(model, make_heteroscedastic_likelihood(), prior, Mat::Zero(2, 4), Mat::Zero(1, 4)), std::invalid_argument);
}

TEST(Posterior, AFloat32PassRedoneInDoubleCountsTheNoiseGradientOnce) {
  // Outputs beyond float's range send a float32 network's evaluation back to double; the learned
  // noise's gradient must then be the double evaluation's, not the float pass's added to it.
  const MlpSpec spec{2, {4}, 1, Activation::Tanh, InitScheme::Glorot};
  auto in_double = std::make_shared<Mlp>(spec), in_float = std::make_shared<Mlp>(spec);
  in_float->set_precision(Precision::Float32);
  Rng rng(4);
  Mat X(2, 6), Y(1, 6);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < Y.size(); ++i) Y.data()[i] = rng.normal();
  const auto likelihood = make_learned_sigma_likelihood(0.5);
  const Posterior reference(in_double, likelihood, GaussianPrior::isotropic(in_double->num_params(), 1e40), X, Y);
  const Posterior tested(in_float, likelihood, GaussianPrior::isotropic(in_float->num_params(), 1e40), X, Y);
  Vec theta = reference.initial_point(rng);
  theta[in_double->num_params() - 1] = 1e39;  // the output bias: finite in double, infinite in float
  theta[in_double->num_params()] = 90.0;      // log sigma: the log likelihood stays finite
  Vec expected, grad;
  const double value = reference.log_density_and_grad(theta, expected);
  ASSERT_TRUE(std::isfinite(value) && expected.allFinite());
  EXPECT_EQ(tested.log_density_and_grad(theta, grad), value);
  EXPECT_TRUE(grad == expected) << "noise gradient " << grad.tail(1) << " against " << expected.tail(1);
}

}  // namespace
}  // namespace uqnn
