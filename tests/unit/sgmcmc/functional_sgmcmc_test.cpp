// fSGLD / fSGHMC (seed 002) on the linear model f(x) = w.x + b, where the functional prior is
// exactly a weight prior: with the kernel k(x, x') = s^2 (1 + x.x') and d + 1 measurement points
// whose design [x; 1] is invertible, f(X_M) = Xt^T theta has prior N(0, s^2 Xt^T Xt), so
//     log P0(f(X_M; theta)) = -theta^T theta / (2 s^2) + const (the constant depends on X_M),
// the same gradient as the weight prior N(0, s^2 I). fSGLD and fSGHMC must then sample the exact
// conjugate posterior of Bayesian linear regression, with X_M redrawn at every step.
#include <gtest/gtest.h>

#include <cmath>

#include "check_moments.hpp"
#include "targets.hpp"
#include "uqnn/mcmc/sgmcmc/functional_sgmcmc.hpp"
#include "uqnn/prob/functional_posterior.hpp"

namespace uqnn::sgmcmc {
namespace {

/// The functional posterior of testing::make_linear_regression: linear kernel with s^2 =
/// prior_sd^2, 3 measurement points uniform in [-2, 2]^2 redrawn at every call, no jitter.
std::shared_ptr<FunctionalPosterior> linear_functional_posterior(const testing::SgLinearRegression& lr, double prior_sd) {
  GpHyperparameters h;
  h.signal_variance = prior_sd * prior_sd;
  h.length_scales = Vec::Ones(1);
  const FunctionalPrior prior(lr.posterior->model_ptr(), GaussianProcess(GpKernel::Linear, h), 0.0);
  MeasurementParams mp;
  mp.num_data_points = 0;
  mp.num_box_points = 3;
  mp.box_lower = Vec::Constant(2, -2.0);
  mp.box_upper = Vec::Constant(2, 2.0);
  return std::make_shared<FunctionalPosterior>(lr.posterior, prior, MeasurementSampler(lr.posterior->inputs(), mp), 1);
}

// The identity itself: the gradient equals the weight posterior's for fresh measurement sets, and
// log-density differences between two thetas agree (the constant cancels).
TEST(FunctionalSgmcmc, LinearModelFunctionalPriorIsWeightPrior) {
  const auto lr = testing::make_linear_regression(200, 0.5, 1.5);
  const auto target = linear_functional_posterior(lr, 1.5);
  Rng rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const Vec a = lr.exact_mean + rng.normal_vector(3), b = lr.exact_mean + rng.normal_vector(3);
    Vec ga, gb, wa, wb;
    Rng r(static_cast<std::uint64_t>(trial));
    const double fa = target->randomized_log_density_and_grad(r, a, nullptr, ga);
    Rng r_same(static_cast<std::uint64_t>(trial));  // the same measurement set for b
    const double fb = target->randomized_log_density_and_grad(r_same, b, nullptr, gb);
    const double pa = lr.posterior->log_density_and_grad(a, wa), pb = lr.posterior->log_density_and_grad(b, wb);
    EXPECT_LT((ga - wa).norm(), 1e-8 * wa.norm()) << "trial " << trial;
    EXPECT_NEAR(fa - fb, pa - pb, 1e-8 * (1 + std::abs(pa - pb)));
  }
}

// fSGLD with minibatches of 5 of 10 points, noise sd 1 and prior sd 0.5, so the prior carries
// ~30% of the posterior precision (a missing or wrong functional prior moves the mean by many
// MCSE); h = 1e-3 (h lambda / 2 < 1%). The allowed bias is the exact stationary covariance of the
// discretised chain with the minibatch-gradient covariance at the posterior mean (the functional
// prior's gradient is exact, so the noise is the weight posterior's).
TEST(FunctionalSgmcmc, FsgldSamplesExactConjugatePosterior) {
  const auto lr = testing::make_linear_regression(10, 1.0, 0.5);
  const auto target = linear_functional_posterior(lr, 0.5);
  const double h = 1e-3;
  const Index n = 5;
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(h);
  params.batch_size = n;
  const auto draws = testing::run_chains([&] { return make_fsgld_sampler(target, params); }, lr.exact_mean, 4, 2000, 50000, 17);
  const Mat V = testing::minibatch_gradient_cov(*lr.posterior, lr.exact_mean, n);
  const Mat chain_cov = testing::sgld_stationary_cov(lr.precision, h, V);
  testing::expect_moments(draws, lr.exact_mean, lr.exact_cov.diagonal().cwiseSqrt(), chain_cov.diagonal().cwiseSqrt(),
                          "fsgld linear regression");
}

// fSGHMC on the same target (Chen et al. 2014's discretisation, h = 5e-3, friction 5).
TEST(FunctionalSgmcmc, FsghmcSamplesExactConjugatePosterior) {
  const auto lr = testing::make_linear_regression(10, 1.0, 0.5);
  const auto target = linear_functional_posterior(lr, 0.5);
  const double h = 5e-3, C = 5.0;
  const Index n = 5;
  SghmcParams params;
  params.schedule = StepSizeSchedule::constant(h);
  params.friction = C;
  params.batch_size = n;
  const auto draws = testing::run_chains([&] { return make_fsghmc_sampler(target, params); }, lr.exact_mean, 4, 2000, 50000, 23);
  const Mat V = testing::minibatch_gradient_cov(*lr.posterior, lr.exact_mean, n);
  const Mat chain_cov = testing::sghmc_stationary_cov(lr.precision, h, C, V);
  testing::expect_moments(draws, lr.exact_mean, lr.exact_cov.diagonal().cwiseSqrt(), chain_cov.diagonal().cwiseSqrt(),
                          "fsghmc linear regression");
}

// Same seed, same draws; the measurement points come from the chain's stream.
TEST(FunctionalSgmcmc, SameSeedSameDraws) {
  const auto lr = testing::make_linear_regression(50);
  const auto target = linear_functional_posterior(lr, 1.0);
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(1e-4);
  params.batch_size = 10;
  const auto a = testing::run_chains([&] { return make_fsgld_sampler(target, params); }, lr.exact_mean, 2, 10, 50, 4);
  const auto b = testing::run_chains([&] { return make_fsgld_sampler(target, params); }, lr.exact_mean, 2, 10, 50, 4);
  for (std::size_t k = 0; k < a.size(); ++k) EXPECT_EQ(a[k], b[k]);
}

}  // namespace
}  // namespace uqnn::sgmcmc
