// Slice sampling (Neal 2003) at its defaults on a hard Gaussian (scales 100x apart, correlation
// 0.9) and on conjugate linear regression: moments within Monte Carlo error.
#include <gtest/gtest.h>

#include "unit/mcmc/test_models.hpp"
#include "uqnn/mcmc/slice.hpp"

namespace uqnn {
namespace {

using testing::expect_matches_gaussian;

RunResult run_slice(std::shared_ptr<const LogDensity> target, const Vec& start, long draws) {
  RunConfig run;  // the driver's defaults: 4 chains, 1000 warmup
  run.num_draws = draws;
  run.seed = 11;
  const SamplerFactory factory = [target]() { return std::make_unique<SliceChainSampler>(target, SliceParams{}); };
  return run_chains(run, factory, start);
}

TEST(SliceSampler, HardGaussianAtTheDefaults) {
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
  const RunResult r = run_slice(target, Vec::Zero(3), 4000);
  expect_matches_gaussian(r, mean, cov);
  // Warmup found widths on each coordinate's own scale.
  EXPECT_NE(r.sampler_descriptions.front().find("slice: widths"), std::string::npos);
}

TEST(SliceSampler, ConjugateLinearRegression) {
  const auto blr = testing::linear_regression();
  const RunResult r = run_slice(blr.posterior, Vec::Zero(3), 2000);
  expect_matches_gaussian(r, blr.mean, blr.covariance);
}

TEST(SliceSampler, RejectsBadParameters) {
  SliceParams p;
  p.initial_width = 0;
  EXPECT_THROW(p.validate(2), std::invalid_argument);
  p = SliceParams{};
  p.max_steps_out = 0;
  EXPECT_THROW(p.validate(2), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn
