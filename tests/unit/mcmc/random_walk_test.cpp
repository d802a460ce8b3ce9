// Random-walk Metropolis at its defaults (those of `uqnn fit --method rwm`) on a hard Gaussian
// (scales 100x apart, correlation 0.9) and on conjugate linear regression: moments within Monte
// Carlo error; warmup learns the scales and the acceptance rate reaches its target.
#include <gtest/gtest.h>

#include "unit/mcmc/test_models.hpp"
#include "uqnn/mcmc/random_walk.hpp"

namespace uqnn {
namespace {

using testing::expect_matches_gaussian;

/// The run `uqnn fit --method rwm` makes: 4 chains, 4000 warmup, 20000 draws thinned by 5.
RunResult run_rwm(std::shared_ptr<const LogDensity> target, const Vec& start, RandomWalkParams params = {}) {
  RunConfig run;
  run.num_warmup = 4000;
  run.num_draws = 20000;
  run.thin = 5;
  run.seed = 7;
  const SamplerFactory factory = [target, params]() { return std::make_unique<RandomWalkChainSampler>(target, params); };
  return run_chains(run, factory, start);
}

TEST(RandomWalkMetropolis, HardGaussianAtTheDefaults) {
  Vec mean(3), sd(3);
  mean << 5.0, -0.2, 1.0;
  sd << 10.0, 0.1, 1.0;  // 100x apart
  Mat corr = Mat::Identity(3, 3);
  corr(0, 1) = corr(1, 0) = 0.9;
  corr(1, 2) = corr(2, 1) = -0.3;
  corr(0, 2) = corr(2, 0) = -0.2;
  const Mat cov = sd.asDiagonal() * corr * sd.asDiagonal();
  ASSERT_EQ(Eigen::LLT<Mat>(cov).info(), Eigen::Success) << "the target must be a Gaussian";
  auto target = std::make_shared<testing::GaussianDensity>(mean, cov);
  const RunResult r = run_rwm(target, Vec::Zero(3));
  expect_matches_gaussian(r, mean, cov);
  // The acceptance rate of the kept draws is near the target, 0.234.
  double accept = 0;
  long n = 0;
  for (const auto& chain : r.stats)
    for (const DrawStats& s : chain) accept += s.accept_prob, ++n;
  EXPECT_NEAR(accept / static_cast<double>(n), 0.234, 0.05);
}

TEST(RandomWalkMetropolis, ConjugateLinearRegression) {
  const auto blr = testing::linear_regression();
  const RunResult r = run_rwm(blr.posterior, Vec::Zero(3));
  expect_matches_gaussian(r, blr.mean, blr.covariance);
}

// A proposal where the density is not finite is a counted rejection: the chain stays put.
TEST(RandomWalkMetropolis, NonFiniteProposalIsACountedRejection) {
  struct HalfLine : LogDensity {
    Index dim() const override { return 1; }
    double log_density_and_grad(const Vec& x, Vec& g) const override {
      g = Vec::Constant(1, -1.0);
      return x[0] > 0 ? -x[0] : -std::numeric_limits<double>::infinity();
    }
  };
  HalfLine density;
  RandomWalkKernel kernel(density);
  const RandomWalkState start = kernel.init(Vec::Constant(1, 1e-3));
  Rng rng(3, 0);
  int divergent = 0;
  for (int i = 0; i < 200; ++i) {
    const RandomWalkStep s = kernel.step(rng, start, 1.0, Vec::Ones(1));
    if (s.info.is_divergent) {
      ++divergent;
      EXPECT_EQ(s.state.position, start.position);
      EXPECT_FALSE(s.info.accepted);
    }
  }
  EXPECT_GT(divergent, 50);  // about half the proposals land at x <= 0
}

TEST(RandomWalkMetropolis, RejectsBadParameters) {
  RandomWalkParams p;
  p.target_accept = 1.0;
  EXPECT_THROW(p.validate(2), std::invalid_argument);
  p = RandomWalkParams{};
  p.scales = Vec::Ones(3);
  EXPECT_THROW(p.validate(2), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn
