// Adaptive Metropolis: the kernel exactly as seed 001 (below), and the sampler's defaults on hard
// targets (the end of the file). Seed 001: Sigma_t = gamma 2.4^2 / K (C_t + 1e-8 I) from the
// running covariance of the history, set at t0 and refreshed every t_adapt steps; the default
// initial proposal is the diagonal gamma 2.4^2 / K I; Cholesky with a clear fallback.
#include <gtest/gtest.h>

#include "test_models.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/adaptive_metropolis.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {
namespace {

/// Seed 001's schedule as the schedule tests run it: t0 = 50, t_adapt = 30 (updates at t = 50, 80,
/// 110), from the correlated Gaussian's mean, keeping the chain's history w_0..w_t.
struct ScheduledChain {
  std::shared_ptr<testing::GaussianDensity> target = testing::correlated_gaussian();
  AdaptiveMetropolis am{*target};
  AdaptiveMetropolisParams params;
  AdaptiveMetropolisState state;
  Rng rng{1};
  Mat history;  ///< one column per iteration, w_0 first

  explicit ScheduledChain(bool diagonal) {
    params.t0 = 50;
    params.t_adapt = 30;
    params.diagonal = diagonal;
    state = am.init(target->mean(), params);
    history = state.position;
  }
  /// One iteration; its position joins the history.
  AdaptiveMetropolisStep step() {
    AdaptiveMetropolisStep step = am.step(rng, state, params);
    state = step.state;
    history.conservativeResize(Eigen::NoChange, history.cols() + 1);
    history.col(history.cols() - 1) = state.position;
    return step;
  }
  /// gamma 2.4^2 / K, the proposal's scale on the history's covariance.
  double scale() const { return params.gamma * 2.4 * 2.4 / 3.0; }
};

TEST(McmcAdaptiveMetropolis, ProposalFollowsSeed001Schedule) {
  ScheduledChain chain(false);
  const double scale = chain.scale();
  Mat sigma = chain.state.proposal_cholesky * chain.state.proposal_cholesky.transpose();
  EXPECT_LT((sigma - scale * Mat::Identity(3, 3)).norm(), 1e-14);  // a diagonal, not 0.01 added everywhere
  for (long t = 1; t <= 120; ++t) {
    const Mat before = chain.state.proposal_cholesky;
    const AdaptiveMetropolisStep step = chain.step();
    const AdaptiveMetropolisState& s = chain.state;
    const bool expected_update = t == 50 || t == 80 || t == 110;
    EXPECT_EQ(step.info.covariance_updated, expected_update) << t;
    if (!expected_update) {
      EXPECT_TRUE(before == s.proposal_cholesky) << t;
      continue;
    }
    // Sigma_t = gamma 2.4^2 / K (C_t + 1e-8 I), C_t the sample covariance of w_0..w_t.
    const Vec mean = chain.history.rowwise().mean();
    const Mat centred = chain.history.colwise() - mean;
    const Mat c = centred * centred.transpose() / static_cast<double>(t);
    sigma = s.proposal_cholesky * s.proposal_cholesky.transpose();
    EXPECT_LT((sigma - scale * (c + 1e-8 * Mat::Identity(3, 3))).norm(), 1e-12 * (1.0 + sigma.norm())) << t;
    EXPECT_LT((history_covariance(s) - c).norm(), 1e-12);
  }
  // Frozen: statistics update, Sigma does not.
  chain.params.adapt = false;
  const Mat frozen = chain.state.proposal_cholesky;
  for (int i = 0; i < 100; ++i) chain.state = chain.am.step(chain.rng, chain.state, chain.params).state;
  EXPECT_TRUE(frozen == chain.state.proposal_cholesky);
  EXPECT_EQ(chain.state.history_count, 221);
}

// The same schedule with a diagonal proposal: K numbers where the dense one keeps K x K. Sigma_t
// is gamma 2.4^2 / K (diag C_t + 1e-8), C_t's diagonal the history's sample variances.
TEST(McmcAdaptiveMetropolis, ADiagonalProposalFollowsTheScheduleWithTheHistorysVariances) {
  ScheduledChain chain(true);
  const double scale = chain.scale();
  ASSERT_EQ(chain.state.proposal_cholesky.cols(), 1);
  EXPECT_LT((chain.state.proposal_cholesky.col(0).array() - std::sqrt(scale)).abs().maxCoeff(), 1e-15);
  for (long t = 1; t <= 120; ++t) {
    const Vec before = chain.state.position;
    const AdaptiveMetropolisStep step = chain.step();
    const AdaptiveMetropolisState& s = chain.state;
    if (step.info.is_accepted) {  // the move is the proposal's sds times independent normals
      EXPECT_GT((s.position - before).cwiseAbs().minCoeff(), 0.0) << t;
    }
    if (t != 50 && t != 80 && t != 110) continue;
    EXPECT_TRUE(step.info.covariance_updated) << t;
    const Vec mean = chain.history.rowwise().mean();
    const Vec variance = (chain.history.colwise() - mean).rowwise().squaredNorm() / static_cast<double>(t);
    ASSERT_EQ(history_covariance(s).cols(), 1);
    EXPECT_LT((history_covariance(s).col(0) - variance).norm(), 1e-12) << t;
    const Vec sd = (scale * (variance.array() + 1e-8)).sqrt();
    EXPECT_LT((s.proposal_cholesky.col(0) - sd).norm(), 1e-12 * (1.0 + sd.norm())) << t;
  }
}

TEST(McmcAdaptiveMetropolis, CholeskyFallbackAndValidation) {
  bool fallback = true;
  Mat spd(2, 2);
  spd << 2.0, 0.5, 0.5, 1.0;
  Mat l = robust_cholesky(spd, &fallback);
  EXPECT_FALSE(fallback);
  EXPECT_LT((l * l.transpose() - spd).norm(), 1e-14);
  // Singular (a chain stuck on a line): jitter makes it positive definite.
  Mat singular(2, 2);
  singular << 1.0, 1.0, 1.0, 1.0;
  l = robust_cholesky(singular, &fallback);
  EXPECT_TRUE(fallback);
  EXPECT_TRUE(l.allFinite());
  EXPECT_LT((l * l.transpose() - singular).norm(), 1e-3);
  // Hopelessly indefinite: the diagonal fallback.
  Mat indefinite(2, 2);
  indefinite << 1.0, 5.0, 5.0, 1.0;
  l = robust_cholesky(indefinite, &fallback);
  EXPECT_TRUE(fallback);
  EXPECT_TRUE(l.isDiagonal());
  EXPECT_NEAR(l(0, 0), 1.0, 1e-14);
  AdaptiveMetropolisParams p;
  p.gamma = 0.0;
  EXPECT_THROW(p.validate(2), std::invalid_argument);
  p = AdaptiveMetropolisParams{};
  p.t_adapt = 0;
  EXPECT_THROW(p.validate(2), std::invalid_argument);
  p = AdaptiveMetropolisParams{};
  p.initial_covariance = indefinite;
  try {
    p.validate(2);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("initial_covariance"), std::string::npos);
  }
  const auto target = testing::correlated_gaussian();
  AdaptiveMetropolis am(*target);
  EXPECT_THROW(am.init(Vec::Zero(2), AdaptiveMetropolisParams{}), InputError);
}


// ---------------------------------------------------------------- the defaults on hard targets
// What `uqnn fit --method amcmc` and uqnn.sample(method="amcmc") run: 4 chains x (5000 warmup +
// 1000 draws), the windowed adaptation from the curvature at the start.
RunResult run_amcmc_at_defaults(std::shared_ptr<const LogDensity> target, const Vec& start, double spread, std::uint64_t seed) {
  return testing::run_at_defaults(std::move(target), AdaptiveMetropolisConfig{}, start, spread, seed, "amcmc");
}

TEST(McmcAdaptiveMetropolis, DefaultsRecoverACorrelatedGaussianWithScales100xApart) {
  const auto target = testing::hard_gaussian();
  // Chains start up to 2 sds from the mean in every coordinate, as from rough MAP fits.
  const RunResult run = run_amcmc_at_defaults(target, target->mean(), 2.0, 11);
  // (spread 2 is in units of the smallest sd; the curvature is the same everywhere for a Gaussian)
  testing::expect_matches_gaussian(run, target->mean(), target->covariance());
}

TEST(McmcAdaptiveMetropolis, DefaultsRecoverAnIllConditionedLinearRegression) {
  // y = w1 x1 + w2 x2 + w3 x3 + w4 x4 + b + N(0, 0.3^2) with x2 = x1 + small noise: w1 and w2 are
  // strongly negatively correlated a posteriori; prior N(0, 3^2); 5 parameters.
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  const Mat& covariance = target.covariance;
  const Vec& mean = target.mean;
  const double correlation = covariance(0, 1) / std::sqrt(covariance(0, 0) * covariance(1, 1));
  ASSERT_LT(correlation, -0.9);  // the hard part
  const Vec sds = covariance.diagonal().cwiseSqrt();
  ASSERT_GT(sds.maxCoeff() / sds.minCoeff(), 20.0);
  const RunResult run = run_amcmc_at_defaults(target.posterior, mean, 0.05, 12);
  testing::expect_matches_gaussian(run, mean, covariance);
}

// A diagonal proposal (--am-covariance diagonal, and the default above kAmDenseMaxDim parameters,
// where a dense one costs K^2 per step and gigabytes) at the defaults on coordinates whose sds are
// 100x apart, over three seeds: it must be exact. It cannot follow strong correlations, and is not
// tested on them: on the ill-conditioned regression (w1, w2 correlated at -0.96) its ESS at the
// defaults is about 100 of 20,000 draws, at the edge of the MCSE guard of expect_matches_gaussian
// (a sanitizer build's rounding put it 0.3% over). Below 1000 parameters the default proposal is
// dense, and the dense one is tested on that regression above.
TEST(McmcAdaptiveMetropolis, ADiagonalProposalAtTheDefaultsRecoversScales100xApart) {
  Vec mean(3), sd(3);
  mean << 50.0, -1.0, 3.0;
  sd << 100.0, 1.0, 5.0;
  Mat corr = Mat::Identity(3, 3);
  corr(0, 2) = corr(2, 0) = -0.3;
  const Mat covariance = sd.asDiagonal() * corr * sd.asDiagonal();
  AdaptiveMetropolisConfig diagonal;
  diagonal.covariance = AmCovariance::Diagonal;
  const auto target = std::make_shared<testing::GaussianDensity>(mean, covariance);
  for (const std::uint64_t seed : {21, 22, 23})
    testing::expect_matches_gaussian(testing::run_at_defaults(target, diagonal, mean, 2.0, seed, "amcmc"), mean, covariance);
}

TEST(McmcAdaptiveMetropolis, AboveAThousandParametersTheProposalIsDiagonalAndCostsOrderK) {
  for (const Index dim : {kAmDenseMaxDim, kAmDenseMaxDim + 1}) {
    // Variances 0.01 to 100: sds 100x apart.
    const Vec variances = Vec::LinSpaced(dim, 0.01, 100.0);
    const auto target = std::make_shared<testing::GaussianDensity>(Vec::Zero(dim), Mat(variances.asDiagonal()));
    const bool diagonal = dim > kAmDenseMaxDim;
    // The curvature start's 2 K gradients are spent above 1000 parameters only when warmup is
    // longer: with 100 warmup iterations the 1001-parameter chain starts from gamma 2.4^2 / K I.
    for (const Index warmup : {Index{100}, 2 * dim}) {
      AdaptiveMetropolisSampler sampler(target, AdaptiveMetropolisConfig{});
      sampler.init(Vec::Constant(dim, 0.01));
      sampler.begin_warmup(warmup);
      const Mat& factor = sampler.state().proposal_cholesky;
      EXPECT_EQ(factor.cols(), diagonal ? 1 : dim) << dim;
      EXPECT_EQ(sampler.state().history_m2.cols(), diagonal ? 1 : dim) << dim;
      EXPECT_NE(sampler.describe().find(diagonal ? "diagonal" : "dense"), std::string::npos) << sampler.describe();
      const Vec sds = diagonal ? Vec(factor.col(0)) : Vec(factor.rowwise().norm());
      const double unit = 2.4 * 2.4 / static_cast<double>(dim);
      if (diagonal && warmup < 2 * dim) {
        EXPECT_LT((sds.array() / std::sqrt(0.1 * unit) - 1.0).abs().maxCoeff(), 1e-12);
      } else {  // 2.4^2 / K times the inverse curvature: the target's own variances
        EXPECT_LT((sds.array() / (unit * variances.array()).sqrt() - 1.0).abs().maxCoeff(), 1e-4) << dim << " " << warmup;
      }
      Rng rng(3);
      for (int t = 0; t < 100; ++t) EXPECT_TRUE(std::isfinite(sampler.transition(rng, true).lp));
    }
  }
}

}  // namespace
}  // namespace uqnn
