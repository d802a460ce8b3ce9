// SGHMC: kernel formula (Chen et al. 2014's symplectic discretisation), momentum handling, reproducibility, and moments
// on a Gaussian (full batch) and a conjugate linear regression (minibatches).
#include <gtest/gtest.h>

#include <cmath>

#include "check_moments.hpp"
#include "targets.hpp"
#include "uqnn/mcmc/sgmcmc/sghmc.hpp"

namespace uqnn::sgmcmc {
namespace {

using testing::IndependentGaussian;

TEST(Sghmc, KernelIsChenEtAlUpdate) {
  SghmcParams params;
  params.schedule = StepSizeSchedule::constant(0.01);
  params.friction = 3.0;
  params.noise_estimate = 1.0;
  params.mass = (Vec(2) << 2.0, 0.5).finished();
  SghmcState state{(Vec(2) << 0.3, -1.2).finished(), (Vec(2) << 0.7, 0.1).finished()};
  const Vec grad = (Vec(2) << 2.0, 0.5).finished();
  const double h = 0.01;
  Rng rng(3), copy(3);
  const Vec moved = sghmc_move_position(state, h, params);
  // `grad` stands for the gradient at the moved position, which the kernel takes as given.
  const SghmcState next = sghmc_step(rng, state, moved, grad, h, params);
  const Vec eta = copy.normal_vector(2);
  for (Index i = 0; i < 2; ++i) {
    const double v = state.momentum[i] / params.mass[i];
    EXPECT_NEAR(moved[i], state.position[i] + h * v, 1e-15);
    EXPECT_EQ(next.position[i], moved[i]);
    EXPECT_NEAR(next.momentum[i], state.momentum[i] + h * grad[i] - h * 3.0 * v + std::sqrt(2 * (3.0 - 1.0) * h) * eta[i],
                1e-15);
  }
}

TEST(Sghmc, MomentumResamplingAndStats) {
  auto target = std::make_shared<IndependentGaussian>(Vec::Zero(3), Vec::Ones(3));
  SghmcParams params;
  params.schedule = StepSizeSchedule::constant(0.05);
  params.friction = 1.0;
  params.num_steps = 4;
  params.resample_momentum = true;
  params.mass = Vec::Constant(3, 4.0);
  SghmcSampler sampler(target, params);
  sampler.init(Vec::Ones(3));
  Rng rng(8), copy(8);
  const DrawStats s = sampler.transition(rng, true);
  EXPECT_EQ(s.n_leapfrog, 4);
  EXPECT_EQ(s.accept_prob, 1.0);
  EXPECT_TRUE(std::isnan(s.energy));
  EXPECT_EQ(sampler.iteration(), 4);
  // Reproduce the transition by hand: z ~ N(0, M), then 4 kernel steps, each gradient at the moved position.
  SghmcState state{Vec::Ones(3), copy.normal_vector(3) * 2.0};
  Vec g;
  for (int k = 0; k < 4; ++k) {
    Vec moved = sghmc_move_position(state, 0.05, params);
    target->log_density_and_grad(moved, g);
    state = sghmc_step(copy, state, std::move(moved), g, 0.05, params);
  }
  EXPECT_EQ(sampler.position(), state.position);
  EXPECT_EQ(sampler.momentum(), state.momentum);
  // Mass of the wrong size and a friction that makes the momentum decay factor negative are rejected.
  SghmcParams bad = params;
  bad.mass = Vec::Ones(2);
  EXPECT_THROW(SghmcSampler(target, bad), std::invalid_argument);
  bad = params;
  bad.friction = 100.0;  // 0.05 * 100 / 4 > 1
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = params;
  bad.noise_estimate = 2.0;  // > friction
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = params;
  bad.num_steps = 0;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}

TEST(Sghmc, SameSeedSameDraws) {
  auto lr = testing::make_linear_regression(60);
  SghmcParams params;
  params.schedule = StepSizeSchedule::constant(1e-3);
  params.friction = 20.0;
  params.batch_size = 16;
  auto run = [&](std::uint64_t stream) {
    SghmcSampler sampler(lr.posterior, params);
    sampler.init(lr.exact_mean);
    Rng rng(11, stream);
    Mat draws(3, 50);
    for (Index t = 0; t < 50; ++t) {
      sampler.transition(rng, false);
      draws.col(t) = sampler.position();
    }
    return draws;
  };
  EXPECT_EQ(run(0), run(0));
  EXPECT_NE(run(0), run(1));
}

// Gaussian N((1, -2), diag(1, 0.25)), exact gradient, h = 0.01, C = 2 (about critical damping):
// the discretised chain's stationary sd (linear recursion, exact) is within 1% of the truth.
TEST(Sghmc, GaussianFullBatchMoments) {
  const Vec mean = (Vec(2) << 1.0, -2.0).finished(), sd = (Vec(2) << 1.0, 0.5).finished();
  auto target = std::make_shared<IndependentGaussian>(mean, sd);
  const double h = 0.01, C = 2.0;
  SghmcParams params;
  params.schedule = StepSizeSchedule::constant(h);
  params.friction = C;
  const auto draws = testing::run_chains([&] { return std::make_unique<SghmcSampler>(target, params); },
                                         Vec::Zero(2), 4, 2000, 100000, 77);
  const Mat chain_cov =
      testing::sghmc_stationary_cov(Mat(target->precision().asDiagonal()), h, C, Mat::Zero(2, 2));
  testing::expect_moments(draws, mean, sd, chain_cov.diagonal().cwiseSqrt(), "sghmc gaussian");
}

// Conjugate linear regression, N = 200, batch 50, h = 5e-4, C = 50 (critical damping 2 sqrt(lambda)
// ~ 57): minibatch noise adds ~ h lambda_max(Cov g) / (2 C) ~ 1% to the variance; the exact
// stationary covariance of the discretised linear chain gives the allowed bias.
TEST(Sghmc, LinearRegressionMinibatchMoments) {
  auto lr = testing::make_linear_regression(200);
  const double h = 5e-4, C = 50.0;
  const Index n = 50;
  SghmcParams params;
  params.schedule = StepSizeSchedule::constant(h);
  params.friction = C;
  params.batch_size = n;
  const auto draws = testing::run_chains([&] { return std::make_unique<SghmcSampler>(lr.posterior, params); },
                                         lr.exact_mean, 4, 2000, 40000, 5);
  const Mat V = testing::minibatch_gradient_cov(*lr.posterior, lr.exact_mean, n);
  const Mat chain_cov = testing::sghmc_stationary_cov(lr.precision, h, C, V);
  testing::expect_moments(draws, lr.exact_mean, lr.exact_cov.diagonal().cwiseSqrt(),
                          chain_cov.diagonal().cwiseSqrt(), "sghmc linear regression");
}

}  // namespace
}  // namespace uqnn::sgmcmc
