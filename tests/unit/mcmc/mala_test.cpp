// MALA at the defaults `uqnn fit --method mala` runs (Stan's warmup: step size to 0.574 and a
// diagonal metric).
#include <gtest/gtest.h>

#include "test_models.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {
namespace {

TEST(MalaSampler, DefaultsRecoverAGaussianWithScales1000xApart) {
  // sds 100, 0.1 and 5, correlations 0.5, -0.3, 0.2. With the unit metric (seed 001's MALA) the
  // step size is set by the 0.1 coordinate and the sd-100 one does not move in 2000 iterations.
  Vec mean(3), sd(3);
  mean << 50.0, -1.0, 3.0;
  sd << 100.0, 0.1, 5.0;
  Mat corr(3, 3);
  corr << 1.0, 0.5, -0.3, 0.5, 1.0, 0.2, -0.3, 0.2, 1.0;
  const Mat covariance = sd.asDiagonal() * corr * sd.asDiagonal();
  const auto target = std::make_shared<testing::GaussianDensity>(mean, covariance);
  const RunResult run = testing::run_at_defaults(target, MalaConfig{}, mean, 0.2, 21);
  testing::expect_matches_gaussian(run, mean, covariance);
  EXPECT_NE(run.sampler_descriptions.front().find("metric=diag"), std::string::npos) << run.sampler_descriptions.front();
}

// Not tested here, because MALA at its defaults fails them: the hard Gaussian with correlation 0.98
// (testing::hard_gaussian) and the ill-conditioned regression (correlation -0.96). A diagonal
// metric leaves a condition number near 100 there, and 4 x 1000 MALA draws give a bulk ESS below
// 100 (MCSE above 0.1 sd). Adaptive Metropolis passes both at its defaults (its dense proposal).

TEST(MalaSampler, NoAdaptationKeepsTheUnitMetricAndTheGivenStep) {
  // seed 001's MALA: --no-adapt --step-size E.
  MalaConfig config;
  config.kernel.step_size = 0.3;
  config.warmup.adapt_step_size = false;
  config.warmup.metric = MetricAdaptation::None;
  const auto target = testing::correlated_gaussian();
  MalaSampler sampler(target, config);
  Rng rng(3);
  sampler.init(target->mean());
  sampler.begin_warmup(200);
  for (int i = 0; i < 200; ++i) sampler.transition(rng, true);
  EXPECT_EQ(sampler.params().step_size, 0.3);
  const Vec d = std::get<DiagonalMetric>(sampler.params().metric).inverse_metric;
  EXPECT_TRUE(d.size() == 0 || d.isOnes()) << d.transpose();
}

}  // namespace
}  // namespace uqnn
