#include <gtest/gtest.h>

#include "unit/approx/blr_fixture.hpp"
#include "uqnn/approx/laplace.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/nn/linearized_model.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {
namespace {

using testing::make_blr;
using testing::max_relative;

TEST(Laplace, ExactHessianReproducesConjugatePosteriorAndEvidence) {
  const auto blr = make_blr();
  // One Newton step from 0 lands on the MAP of a quadratic log posterior.
  const Vec map = refine_map_newton(*blr.posterior, Vec::Zero(3), 3);
  LaplaceApproximation laplace(blr.posterior, map, LaplaceParams{});
  const auto* q = dynamic_cast<const GaussianPosterior*>(laplace.approximation().get());
  ASSERT_NE(q, nullptr);
  EXPECT_LT(max_relative(q->mean(), blr.mean), 1e-8);
  const Mat exact_cov = blr.A.inverse();
  EXPECT_LT(max_relative(q->covariance(), exact_cov), 1e-8);
  EXPECT_LT(max_relative(q->marginal_variance(), Vec(exact_cov.diagonal())), 1e-8);
  EXPECT_NEAR(laplace.log_marginal_likelihood(), blr.log_evidence, 1e-8 * std::abs(blr.log_evidence));
  // The density of q is the exact posterior density.
  const Vec probe = blr.mean + Vec::Constant(3, 0.05);
  const double exact = -0.5 * (probe - blr.mean).dot(blr.A * (probe - blr.mean)) + 0.5 * std::log(blr.A.determinant()) -
                       1.5 * std::log(2 * M_PI);
  EXPECT_NEAR(q->log_prob(probe), exact, 1e-9);
}

TEST(Laplace, CovarianceScaleDividesTheCovariance) {
  const auto blr = make_blr();
  LaplaceParams p;
  p.covariance_scale = 4.0;
  LaplaceApproximation laplace(blr.posterior, blr.mean, p);
  EXPECT_LT(max_relative(laplace.approximation()->marginal_variance(), Vec(blr.A.inverse().diagonal() / 4.0)), 1e-8);
}

TEST(Laplace, GaussNewtonEqualsExactHessianForLinearGaussian) {
  const auto blr = make_blr();
  const Vec theta = blr.mean + Vec::Constant(3, 0.3);  // anywhere: the model is linear
  const Mat exact = curvature_matrix(*blr.posterior, theta, CurvatureBackend::Exact);
  const Mat ggn = curvature_matrix(*blr.posterior, theta, CurvatureBackend::GaussNewton);
  EXPECT_LT(max_relative(exact, blr.A), 1e-10);
  EXPECT_LT(max_relative(ggn, blr.A), 1e-10);
  // Diagonal structure = diagonal of the full structure, for every backend.
  for (auto b : {CurvatureBackend::Exact, CurvatureBackend::Fisher, CurvatureBackend::GaussNewton})
    EXPECT_LT(max_relative(curvature_diagonal(*blr.posterior, theta, b),
                           Vec(curvature_matrix(*blr.posterior, theta, b).diagonal())), 1e-10) << to_string(b);
}

TEST(Laplace, EmpiricalFisherIsTheSumOfSquaredPerExampleGradientsPlusPriorPrecision) {
  const auto blr = make_blr();
  const Vec theta = blr.mean;
  Vec expected = blr.prior_sd.array().square().inverse();
  for (Index i = 0; i < blr.y.size(); ++i) {
    const double r = blr.y[i] - blr.Phi.row(i).dot(theta);
    expected += (blr.Phi.row(i).transpose() * r / (blr.sigma * blr.sigma)).array().square().matrix();
  }
  EXPECT_LT(max_relative(curvature_diagonal(*blr.posterior, theta, CurvatureBackend::Fisher), expected), 1e-10);
}

/// A 1-H-1 tanh network on 8 points of sin(3x) with noise sd 0.1 and prior N(0, prior_sd^2).
std::shared_ptr<Posterior> tanh_sine_posterior(Index hidden, double prior_sd) {
  auto model = std::make_shared<Mlp>(MlpSpec{1, {hidden}, 1, Activation::Tanh, InitScheme::Glorot});
  Mat X(1, 8), Y(1, 8);
  for (Index i = 0; i < 8; ++i) {
    X(0, i) = -1 + 0.25 * static_cast<double>(i);
    Y(0, i) = std::sin(3 * X(0, i));
  }
  return std::make_shared<Posterior>(model, make_gaussian_likelihood(0.1), GaussianPrior::isotropic(model->num_params(), prior_sd), X, Y);
}

/// The same data with the noise sd learned: log sigma is the last parameter, prior N(0, 3^2).
std::shared_ptr<Posterior> learned_noise_sine_posterior(Index hidden, double prior_sd) {
  const auto fixed = tanh_sine_posterior(hidden, prior_sd);
  return std::make_shared<Posterior>(fixed->model_ptr(), make_learned_sigma_likelihood(0.1),
                                     GaussianPrior::isotropic(fixed->model().num_params(), prior_sd), fixed->inputs(), fixed->targets());
}

TEST(Laplace, GaussNewtonGivesALearnedNoiseItsFisherInformationAndStaysPositiveDefinite) {
  // Away from the MAP (residuals far above sigma = 0.1) the exact Hessian in (network, log sigma) is
  // indefinite: that stopped laplace on yacht with a learned noise (issue 18).
  const auto post = learned_noise_sine_posterior(4, 1.0);
  const Index P = post->model().num_params();
  Rng rng(3, 0);
  Vec theta = post->initial_point(rng);
  theta[P] = std::log(0.1);
  const Mat exact = curvature_matrix(*post, theta, CurvatureBackend::Exact);
  EXPECT_LT(Eigen::SelfAdjointEigenSolver<Mat>(exact, Eigen::EigenvaluesOnly).eigenvalues()[0], 0.0);
  const Mat ggn = curvature_matrix(*post, theta, CurvatureBackend::GaussNewton);
  // The network block is the GGN with the noise fixed at exp(log sigma) ...
  const auto fixed = tanh_sine_posterior(4, 1.0);
  EXPECT_LT(max_relative(ggn.topLeftCorner(P, P), curvature_matrix(*fixed, theta.head(P), CurvatureBackend::GaussNewton)), 1e-10);
  // ... log sigma's is its expected Fisher information, 2 per observation, plus its prior's 1 / 3^2,
  // with no cross terms (their expectation is 0).
  EXPECT_TRUE(ggn.col(P).head(P).isZero(0.0));
  EXPECT_TRUE(ggn.row(P).head(P).isZero(0.0));
  EXPECT_NEAR(ggn(P, P), 2.0 * 8 + 1.0 / 9.0, 1e-12);
  EXPECT_GT(Eigen::SelfAdjointEigenSolver<Mat>(ggn, Eigen::EigenvaluesOnly).eigenvalues()[0], 0.0);
  EXPECT_LT(max_relative(curvature_diagonal(*post, theta, CurvatureBackend::GaussNewton), Vec(ggn.diagonal())), 1e-10);
  EXPECT_NO_THROW(LaplaceApproximation(post, theta, LaplaceParams{}));  // the default is ggn
}

TEST(Laplace, TuningWithALearnedNoiseMaximisesTheEvidenceOverPriorPrecisionAndNoise) {
  const auto post = learned_noise_sine_posterior(4, 1.0);
  const Index P = post->model().num_params();
  Rng rng(4, 0);
  const Vec theta = post->initial_point(rng);
  LaplaceApproximation laplace(post, theta, LaplaceParams{});
  const LaplaceTuning t = laplace.tune(false);
  EXPECT_GT(t.log_marginal_likelihood_after, t.log_marginal_likelihood_before);
  EXPECT_EQ(t.noise_sd, 0.0);  // the noise is left at the centre's
  // Independently: the Laplace evidence of the posterior whose network prior precision is alpha
  // times the original (prior sd / sqrt(alpha)), built from scratch at the same theta.
  const auto evidence = [&](double alpha) {
    auto scaled = std::make_shared<Posterior>(post->model_ptr(), post->likelihood_ptr(),
                                              GaussianPrior::isotropic(P, 1.0 / std::sqrt(alpha)), post->inputs(), post->targets());
    return LaplaceApproximation(scaled, theta, LaplaceParams{}).log_marginal_likelihood();
  };
  const double best = evidence(t.prior_precision_factor);
  EXPECT_NEAR(t.log_marginal_likelihood_after, best, 1e-8 * std::abs(best));
  EXPECT_NEAR(laplace.log_marginal_likelihood(), best, 1e-8 * std::abs(best));
  EXPECT_LT(evidence(0.95 * t.prior_precision_factor), best);
  EXPECT_LT(evidence(1.05 * t.prior_precision_factor), best);
  // The noise as a hyperparameter: the same alpha and sigma as tuning the fixed-noise posterior at
  // sigma0 = exp(log sigma) (checked against the closed-form evidence in the test below), and the
  // centre's log sigma moves there with its block of H: the Fisher information 2N plus the prior's.
  LaplaceApproximation with_noise(post, theta, LaplaceParams{});
  const LaplaceTuning tn = with_noise.tune(true);
  auto fixed = std::make_shared<Posterior>(post->model_ptr(), make_gaussian_likelihood(std::exp(theta[P])), GaussianPrior::isotropic(P, 1.0),
                                           post->inputs(), post->targets());
  LaplaceApproximation fixed_laplace(fixed, Vec(theta.head(P)), LaplaceParams{});
  const LaplaceTuning tf = fixed_laplace.tune(true);
  EXPECT_NEAR(tn.prior_precision_factor, tf.prior_precision_factor, 1e-9 * tf.prior_precision_factor);
  EXPECT_NEAR(tn.noise_sd, tf.noise_sd, 1e-9 * tf.noise_sd);
  EXPECT_NE(tn.noise_sd, std::exp(theta[P]));
  EXPECT_NEAR(with_noise.map()[P], std::log(tn.noise_sd), 1e-12);
  EXPECT_NEAR(with_noise.curvature()(P, P), 2.0 * 8 + 1.0 / 9.0, 1e-12);
  EXPECT_LT(max_relative(Mat(with_noise.curvature().topLeftCorner(P, P)), fixed_laplace.curvature()), 1e-9);
  // The exact Hessian couples the noise to the network: no tuning.
  LaplaceParams exact;
  exact.backend = CurvatureBackend::Exact;
  const Vec map = refine_map_newton(*post, theta, 50);
  try {
    LaplaceApproximation at_map(post, map, exact);
    at_map.tune(false);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {  // InputError, or not positive definite at this theta
    EXPECT_NE(std::string(e.what()).find("ggn"), std::string::npos) << e.what();
  }
}

TEST(Laplace, NotPositiveDefiniteGivesAdvice) {
  // A tanh network away from its MAP with a vague prior: the exact Hessian is indefinite.
  const auto post = tanh_sine_posterior(4, 100.0);
  Rng rng(3, 0);
  const Vec theta = 2.0 * rng.normal_vector(post->dim());
  LaplaceParams exact;
  exact.backend = CurvatureBackend::Exact;
  try {
    LaplaceApproximation laplace(post, theta, exact);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ggn"), std::string::npos) << e.what();
  }
  LaplaceParams ggn;
  ggn.backend = CurvatureBackend::GaussNewton;
  EXPECT_NO_THROW(LaplaceApproximation(post, theta, ggn));  // PSD + prior precision
}

TEST(Laplace, MemoryLimitIsCheckedBeforeFormingTheMatrix) {
  const auto blr = make_blr();
  LaplaceParams p;
  p.max_memory_bytes = 100;  // 3 x 3 x 3 x 8 = 216 bytes needed
  try {
    LaplaceApproximation laplace(blr.posterior, blr.mean, p);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("diag"), std::string::npos) << e.what();
  }
  p.structure = CurvatureStructure::Diagonal;
  EXPECT_NO_THROW(LaplaceApproximation(blr.posterior, blr.mean, p));
}

TEST(Laplace, TuningMaximisesTheExactEvidenceOverPriorPrecisionAndNoise) {
  const auto blr = make_blr();
  LaplaceApproximation laplace(blr.posterior, blr.mean, LaplaceParams{});
  const LaplaceTuning t = laplace.tune(true);
  EXPECT_GE(t.log_marginal_likelihood_after, t.log_marginal_likelihood_before);
  // Independent closed form of the Laplace evidence at the fixed MAP m* as a function of (alpha, sigma):
  // log N(y | Phi m*, sigma^2 I) + log N(m* | 0, diag(sd^2) / alpha) + (K/2) log 2 pi - (1/2) log det H.
  const Vec m = blr.mean;
  const auto laplace_evidence = [&](double alpha, double sigma) {
    const Vec r = blr.y - blr.Phi * m;
    const double n = static_cast<double>(r.size());
    const Vec prec = alpha * blr.prior_sd.array().square().inverse();
    const double log_lik = -0.5 * r.squaredNorm() / (sigma * sigma) - n * std::log(sigma) - 0.5 * n * std::log(2 * M_PI);
    const double log_prior = -0.5 * (m.array().square() * prec.array()).sum() + 0.5 * prec.array().log().sum() - 1.5 * std::log(2 * M_PI);
    Mat H = blr.Phi.transpose() * blr.Phi / (sigma * sigma);
    H.diagonal() += prec;
    return log_lik + log_prior + 1.5 * std::log(2 * M_PI) - 0.5 * std::log(H.determinant());
  };
  EXPECT_NEAR(t.log_marginal_likelihood_before, laplace_evidence(1.0, blr.sigma), 1e-8);
  const double best = laplace_evidence(t.prior_precision_factor, t.noise_sd);
  EXPECT_NEAR(t.log_marginal_likelihood_after, best, 1e-8);
  for (double f : {0.95, 1.05}) {
    EXPECT_LT(laplace_evidence(t.prior_precision_factor * f, t.noise_sd), best);
    EXPECT_LT(laplace_evidence(t.prior_precision_factor, t.noise_sd * f), best);
  }
  EXPECT_GT(t.noise_sd, 0.15);
  EXPECT_LT(t.noise_sd, 0.6);
}

TEST(Laplace, GlmPredictiveHasFunctionSpaceCovarianceJacobianSigmaJacobianTranspose) {
  // Immer et al. (2021): through the network linearised at theta*, draws theta ~ N(theta*, Sigma) give
  // outputs N(f(theta*, x), J Sigma J^T). Checked by Monte Carlo at inputs inside and far outside the data.
  const auto post = tanh_sine_posterior(8, 1.0);
  const auto model = post->model_ptr();
  Rng rng(5, 0);
  const Vec theta = model->initial_params(rng);
  LaplaceParams ggn;
  ggn.backend = CurvatureBackend::GaussNewton;
  const LaplaceApproximation laplace(post, theta, ggn);
  const auto& gaussian = dynamic_cast<const GaussianPosterior&>(*laplace.approximation());
  const LinearizedModel linearized(model, theta);
  Mat X_test(1, 3);
  X_test << -0.5, 0.1, 3.0;
  const Mat J = model->jacobian(theta, X_test);
  const Vec exact_variance = (J * gaussian.covariance() * J.transpose()).diagonal();
  const Index S = 4000;
  Rng sampler(6, 0);
  const PredictiveDraws draws = predict_draws(linearized, post->likelihood(), Draws::independent(gaussian.sample(sampler, S)), X_test);
  const Mat f_map = model->forward(theta, X_test);
  for (Index i = 0; i < 3; ++i) {
    double mean = 0, second = 0;
    for (const Mat& m : draws.means) mean += m(0, i) / static_cast<double>(S);
    for (const Mat& m : draws.means) second += (m(0, i) - mean) * (m(0, i) - mean) / static_cast<double>(S - 1);
    EXPECT_NEAR(mean, f_map(0, i), 4 * std::sqrt(exact_variance[i] / static_cast<double>(S))) << "input " << X_test(0, i);
    // The sample variance of S Gaussian draws has relative sd sqrt(2 / (S - 1)) = 2.2%.
    EXPECT_NEAR(second / exact_variance[i], 1.0, 4 * std::sqrt(2.0 / static_cast<double>(S - 1))) << "input " << X_test(0, i);
  }
}

}  // namespace
}  // namespace uqnn
