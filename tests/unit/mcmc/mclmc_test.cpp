// MCLMC: the integrator's energy error vanishes at second order (so the kinetic-energy formula and
// the dynamics agree), the momentum stays on the unit sphere, and the sampler at its defaults
// recovers hard Gaussians (scales 100x apart, correlation 0.98; an ill-conditioned regression)
// within Monte Carlo error at `--method mclmc`'s run lengths (MclmcRunDefaults; 1 failure in 60 runs
// over 30 seeds, the rate the 1% level allows), counts diverging steps and gives the same draws for
// any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "unit/mcmc/test_models.hpp"
#include "uqnn/mcmc/mclmc.hpp"
#include "uqnn/run/mclmc_sampler.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {
namespace {

Mat hard_covariance(Vec& mean) {
  // sds 100, 1 and 5; corr(x0, x1) = 0.98, corr(x0, x2) = -0.3, corr(x1, x2) = -0.2.
  mean.resize(3);
  mean << 50.0, -1.0, 3.0;
  Vec sd(3);
  sd << 100.0, 1.0, 5.0;
  Mat corr(3, 3);
  corr << 1.0, 0.98, -0.3, 0.98, 1.0, -0.2, -0.3, -0.2, 1.0;
  return sd.asDiagonal() * corr * sd.asDiagonal();
}

/// The total energy error of a trajectory of length 1 made of `steps` steps (no momentum refresh).
double trajectory_energy_error(const LogDensity& target, const Vec& start, int steps, int seed) {
  const Mclmc kernel(target);
  Rng rng(seed);
  MclmcState state = kernel.init(rng, start);
  MclmcParams params;
  params.step_size = 1.0 / steps;
  params.L = std::numeric_limits<double>::max();  // exp(-eps/L) = 1: the refresh leaves u alone
  double total = 0.0;
  for (int i = 0; i < steps; ++i) {
    MclmcStep s = kernel.step(rng, state, params);
    EXPECT_FALSE(s.info.is_divergent);
    EXPECT_NEAR(s.state.momentum.norm(), 1.0, 1e-12);
    total += s.info.energy_change;
    state = std::move(s.state);
  }
  return std::abs(total);
}

TEST(Mclmc, EnergyErrorVanishesAtSecondOrder) {
  Vec mean;
  const Mat cov = hard_covariance(mean);
  // In units of the smallest scale the trajectory of length 1 crosses a fair part of the target.
  const testing::GaussianDensity target(Vec::Zero(3), cov / 25.0);
  Vec start(3);
  start << 30.0, 0.1, -1.0;
  // The error of one trajectory is a signed total that can pass near 0 at one step size by
  // coincidence (one start direction of twelve gave 0.0017 at 40 steps and 0.0047 at 80), so the
  // order is read off the mean of |error| over twelve start directions.
  const auto mean_error = [&](int steps) {
    double sum = 0.0;
    for (int seed = 1; seed <= 12; ++seed) sum += trajectory_energy_error(target, start, steps, seed);
    return sum / 12.0;
  };
  const double e1 = mean_error(40), e2 = mean_error(80), e3 = mean_error(160);
  EXPECT_GT(e1, 1e-9) << "the discretisation has an energy error";
  // Halving eps divides the error by at least 3.5 (second order: 5.9 and 4.0 measured here); a kinetic
  // energy that did not match the dynamics would leave an error of order 1.
  EXPECT_GT(e1 / e2, 3.5) << e1 << " " << e2;
  EXPECT_GT(e2 / e3, 3.5) << e2 << " " << e3;
  EXPECT_LT(e3, 3e-3);
}

TEST(Mclmc, MomentumUpdateAlongTheGradientMatchesTheChangeOfLogDensity) {
  // u parallel to g: the momentum keeps its direction, and the kinetic energy changes by t |g|, the
  // change of log p over a move of length t along the gradient.
  Vec u = Vec::Zero(4), g = Vec::Zero(4);
  u[1] = 1.0;
  g[1] = 3.0;
  const double change = esh_momentum_update(u, g, 0.2);
  EXPECT_NEAR(change, 0.2 * 3.0, 1e-12);
  EXPECT_NEAR(u[1], 1.0, 1e-12);
  // No gradient: nothing changes.
  Vec v = Vec::Constant(4, 0.5);
  EXPECT_EQ(esh_momentum_update(v, Vec::Zero(4), 0.3), 0.0);
  EXPECT_EQ(v, Vec::Constant(4, 0.5));
}

RunResult run_mclmc_at_defaults(std::shared_ptr<const LogDensity> target, const Vec& start, double spread, std::uint64_t seed,
                       int threads = 2, MclmcConfig config = {}) {
  RunConfig run;
  run.num_chains = 4;
  run.num_threads = threads;
  run.num_warmup = MclmcRunDefaults::warmup;
  run.num_draws = MclmcRunDefaults::draws;
  run.thin = MclmcRunDefaults::thin;
  run.seed = seed;
  InitialPointFn init = [start, spread](int, Rng& rng) {
    Vec x = start;
    for (Index i = 0; i < x.size(); ++i) x[i] += spread * rng.uniform(-1.0, 1.0);
    return x;
  };
  return run_chains(run, make_mclmc_factory(std::move(target), config), init);
}

TEST(MclmcSampler, DefaultsRecoverACorrelatedGaussianWithScales100xApart) {
  Vec mean;
  const Mat cov = hard_covariance(mean);
  const auto target = std::make_shared<testing::GaussianDensity>(mean, cov);
  const RunResult run = run_mclmc_at_defaults(target, mean, 2.0, 11);
  testing::expect_matches_gaussian(run, mean, cov);
  EXPECT_EQ(run.num_divergent(), 0);
  EXPECT_NE(run.sampler_descriptions.front().find("preconditioner diagonal"), std::string::npos) << run.sampler_descriptions.front();
}

TEST(MclmcSampler, DefaultsRecoverAnIllConditionedLinearRegression) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  ASSERT_LT(target.covariance(0, 1) / std::sqrt(target.covariance(0, 0) * target.covariance(1, 1)), -0.9);
  const RunResult run = run_mclmc_at_defaults(target.posterior, target.mean, 0.05, 12);
  testing::expect_matches_gaussian(run, target.mean, target.covariance);
}

/// A unit Gaussian whose log density is NaN beyond |x_0| > 8: a too-long step diverges.
class FencedGaussian : public LogDensity {
 public:
  Index dim() const override { return 4; }
  double log_density(const Vec& x) const override {
    return std::abs(x[0]) > 8.0 ? std::numeric_limits<double>::quiet_NaN() : -0.5 * x.squaredNorm();
  }
  double log_density_and_grad(const Vec& x, Vec& grad) const override {
    grad = -x;
    return log_density(x);
  }
};

TEST(MclmcSampler, DivergingStepsAreCountedAndTheStepSizeShrinks) {
  MclmcConfig config;
  config.tuning.initial_step_size = 100.0;  // every first step leaves the fence
  // Chains start near (3, 0, 0, 0): the first step of length 100 runs down the gradient, past the
  // mode, and out of the fence.
  Vec start = Vec::Zero(4);
  start[0] = 3.0;
  const RunResult run = run_mclmc_at_defaults(std::make_shared<FencedGaussian>(), start, 0.5, 1, 2, config);
  for (const std::string& d : run.sampler_descriptions) {
    EXPECT_EQ(d.find(" 0 divergent warmup steps"), std::string::npos) << d;
  }
  // After warmup the chains sample the unit Gaussian (18 of seeds 1-20 pass the 1% test: seeds 4
  // and 5 give a variance of 0.92, 4.1 and 3.8 MCSE low. Over seeds 1-40 the variances average
  // 0.983, with the ziggurat's normals as with the polar method's: MCLMC's bias at the default
  // energy-variance target, about one MCSE here, which raises the failure rate above 1%).
  testing::expect_matches_gaussian(run, Vec::Zero(4), Mat::Identity(4, 4));
}

TEST(MclmcSampler, SameSeedSameDrawsForAnyThreadCount) {
  Vec mean;
  const auto target = std::make_shared<testing::GaussianDensity>(Vec::Zero(3), hard_covariance(mean));
  const RunResult one = run_mclmc_at_defaults(target, Vec::Zero(3), 1.0, 8, 1), two = run_mclmc_at_defaults(target, Vec::Zero(3), 1.0, 8, 2);
  for (int c = 0; c < 4; ++c) EXPECT_EQ(one.draws[static_cast<std::size_t>(c)], two.draws[static_cast<std::size_t>(c)]);
}

TEST(MclmcSampler, RejectsBadSettings) {
  MclmcConfig config;
  config.tuning.variance_fraction = 0.6;
  config.tuning.ess_fraction = 0.5;
  const auto target = std::make_shared<testing::GaussianDensity>(Vec::Zero(3), Mat::Identity(3, 3));
  EXPECT_THROW(make_mclmc_factory(target, config), std::invalid_argument);
  config = MclmcConfig{};
  config.tuning.energy_variance_start = 0;
  EXPECT_THROW(make_mclmc_factory(target, config), std::invalid_argument);
  config = MclmcConfig{};
  config.adapt = false;
  config.kernel.L = -1;
  EXPECT_THROW(make_mclmc_factory(target, config), std::invalid_argument);
  const auto one_dim = std::make_shared<testing::GaussianDensity>(Vec::Zero(1), Mat::Identity(1, 1));
  EXPECT_THROW(make_mclmc_factory(one_dim, MclmcConfig{}), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn
