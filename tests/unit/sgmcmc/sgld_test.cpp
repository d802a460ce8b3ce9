// SGLD: kernel formula, draw statistics, reproducibility, and moments on a Gaussian (full batch)
// and on a conjugate linear regression (minibatches) against the exact posterior.
#include <gtest/gtest.h>

#include <cmath>

#include "check_moments.hpp"
#include "targets.hpp"
#include "uqnn/mcmc/sgmcmc/sgld.hpp"

namespace uqnn::sgmcmc {
namespace {

using testing::IndependentGaussian;

TEST(Sgld, KernelIsSeed002Update) {
  const Vec theta = (Vec(2) << 0.3, -1.2).finished();
  const Vec grad = (Vec(2) << 2.0, 0.5).finished();
  const double h = 0.01;
  Rng rng(3), copy(3);
  const Vec next = sgld_step(rng, theta, grad, h);
  const Vec xi = copy.normal_vector(2);
  // w_{t+1} = w_t + eps g + sqrt(2 eps) xi  (seed 002 eq. 1 with g = -grad U~).
  EXPECT_NEAR(next[0], 0.3 + h * 2.0 + std::sqrt(2 * h) * xi[0], 1e-15);
  EXPECT_NEAR(next[1], -1.2 + h * 0.5 + std::sqrt(2 * h) * xi[1], 1e-15);
}

TEST(Sgld, DrawStatsAndSchedule) {
  auto target = std::make_shared<IndependentGaussian>(Vec::Zero(2), Vec::Ones(2));
  SgldParams params;
  params.schedule = StepSizeSchedule::step_decay(0.1, 0.5, 2);
  SgldSampler sampler(target, params);
  EXPECT_THROW(sampler.transition(*std::make_unique<Rng>(1), false), std::logic_error);
  const Vec start = (Vec(2) << 1.0, 2.0).finished();
  sampler.init(start);
  Rng rng(1);
  const double expected_steps[] = {0.1, 0.1, 0.05, 0.05, 0.025};
  for (double h : expected_steps) {
    const Vec before = sampler.position();
    const DrawStats s = sampler.transition(rng, false);
    EXPECT_DOUBLE_EQ(s.step_size, h);
    EXPECT_EQ(s.accept_prob, 1.0);
    EXPECT_EQ(s.n_leapfrog, 1);
    EXPECT_EQ(s.tree_depth, 0);
    EXPECT_FALSE(s.is_divergent);
    EXPECT_TRUE(std::isnan(s.energy));
    EXPECT_DOUBLE_EQ(s.lp, target->log_density(before));  // lp_every = 0: estimate at the previous draw
  }
  EXPECT_EQ(sampler.iteration(), 5);
  EXPECT_NE(sampler.describe().find("step_decay"), std::string::npos);
  EXPECT_THROW(sampler.init(Vec::Zero(3)), std::invalid_argument);
}

TEST(Sgld, LpEveryReportsExactLogDensity) {
  auto lr = testing::make_linear_regression(40);
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(1e-4);
  params.batch_size = 8;
  params.lp_every = 3;
  SgldSampler sampler(lr.posterior, params);
  sampler.init(lr.exact_mean);
  Rng rng(2);
  for (int t = 1; t <= 9; ++t) {
    const DrawStats s = sampler.transition(rng, false);
    if (t % 3 == 0) EXPECT_DOUBLE_EQ(s.lp, lr.posterior->log_density(sampler.position()));
    else EXPECT_TRUE(std::isnan(s.lp));
  }
}

TEST(Sgld, LpFirstPutsTheExactValuesOnTheKeptDrawsOnly) {
  // A fit with burn-in 4 and thin 3 keeps transitions 5, 8, 11, ...; with --sg-lp-every 2 the
  // exact full-data lp__ (a pass over all rows) falls on every other kept draw: 5, 11, 17. None in
  // burn-in, none on draws that are thrown away.
  auto lr = testing::make_linear_regression(40);
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(1e-4);
  params.batch_size = 8;
  params.lp_every = 2 * 3;
  params.lp_first = 4 + 1;
  SgldSampler sampler(lr.posterior, params);
  sampler.init(lr.exact_mean);
  Rng rng(2);
  for (int t = 1; t <= 18; ++t) {
    const DrawStats s = sampler.transition(rng, t <= 4);
    if (t == 5 || t == 11 || t == 17) EXPECT_DOUBLE_EQ(s.lp, lr.posterior->log_density(sampler.position())) << t;
    else EXPECT_TRUE(std::isnan(s.lp)) << t;
  }
}

TEST(Sgld, SameSeedSameDraws) {
  auto lr = testing::make_linear_regression(60);
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(1e-4);
  params.batch_size = 16;
  auto run = [&](std::uint64_t seed, std::uint64_t stream) {
    SgldSampler sampler(lr.posterior, params);
    sampler.init(lr.exact_mean);
    Rng rng(seed, stream);
    Mat draws(3, 50);
    for (Index t = 0; t < 50; ++t) {
      sampler.transition(rng, false);
      draws.col(t) = sampler.position();
    }
    return draws;
  };
  EXPECT_EQ(run(11, 0), run(11, 0));
  EXPECT_NE(run(11, 0), run(11, 1));
  EXPECT_NE(run(11, 0), run(12, 0));
}

TEST(Sgld, NonFiniteGradientIsDivergentNotException) {
  class Broken : public LogDensity {
   public:
    Index dim() const override { return 1; }
    double log_density_and_grad(const Vec& theta, Vec& grad) const override {
      grad = Vec::Constant(1, theta[0] > 0.5 ? std::nan("") : -theta[0]);
      return -0.5 * theta[0] * theta[0];
    }
  };
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(0.5);
  SgldSampler sampler(std::make_shared<Broken>(), params);
  sampler.init(Vec::Constant(1, 0.0));
  Rng rng(4);
  bool saw = false;
  for (int t = 0; t < 200 && !saw; ++t) {
    const Vec before = sampler.position();
    const DrawStats s = sampler.transition(rng, false);
    if (s.is_divergent) {
      saw = true;
      EXPECT_EQ(s.accept_prob, 0.0);
      EXPECT_EQ(sampler.position(), before);
    }
  }
  EXPECT_TRUE(saw);
}

TEST(Sgld, ValidateNamesParameter) {
  SgldParams p;
  p.batch_size = -1;
  EXPECT_THROW(p.validate(), std::invalid_argument);
  p.batch_size = 0;
  p.lp_every = -2;
  EXPECT_THROW(p.validate(), std::invalid_argument);
}

// Gaussian N((1, -2), diag(1, 0.25)), exact gradient, h = 0.005: the discretised chain's stationary
// sd is sd / sqrt(1 - h lambda / 2) (0.1% and 0.5% above the truth); 4 chains x 100000 draws give
// ESS ~ 1000-4000 per coordinate, so sd tolerances are ~5% and mean tolerances ~0.1 sd.
TEST(Sgld, GaussianFullBatchMoments) {
  const Vec mean = (Vec(2) << 1.0, -2.0).finished(), sd = (Vec(2) << 1.0, 0.5).finished();
  auto target = std::make_shared<IndependentGaussian>(mean, sd);
  const double h = 0.005;
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(h);
  const auto draws = testing::run_chains([&] { return std::make_unique<SgldSampler>(target, params); },
                                         Vec::Zero(2), 4, 2000, 100000, 2024);
  const Mat chain_cov = testing::sgld_stationary_cov(Mat(target->precision().asDiagonal()), h, Mat::Zero(2, 2));
  testing::expect_moments(draws, mean, sd, chain_cov.diagonal().cwiseSqrt(), "sgld gaussian");
}

// Conjugate linear regression, N = 200, batch 50, h = 1e-5: posterior precision eigenvalues ~800,
// so h lambda / 2 ~ 0.4%; the minibatch-gradient noise adds ~ h lambda_max(Cov g) / 2 ~ 1% to the
// variance. The exact stationary covariance of the discretised chain (with Cov g at the posterior
// mean) gives the bias allowed; 4 chains x 60000 draws give ESS ~ 1000 per coordinate.
TEST(Sgld, LinearRegressionMinibatchMoments) {
  auto lr = testing::make_linear_regression(200);
  const double h = 1e-5;
  const Index n = 50;
  SgldParams params;
  params.schedule = StepSizeSchedule::constant(h);
  params.batch_size = n;
  const auto draws = testing::run_chains([&] { return std::make_unique<SgldSampler>(lr.posterior, params); },
                                         lr.exact_mean, 4, 2000, 60000, 99);
  const Mat V = testing::minibatch_gradient_cov(*lr.posterior, lr.exact_mean, n);
  const Mat chain_cov = testing::sgld_stationary_cov(lr.precision, h, V);
  testing::expect_moments(draws, lr.exact_mean, lr.exact_cov.diagonal().cwiseSqrt(),
                          chain_cov.diagonal().cwiseSqrt(), "sgld linear regression");
}

}  // namespace
}  // namespace uqnn::sgmcmc
