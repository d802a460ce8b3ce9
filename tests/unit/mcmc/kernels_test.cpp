// Statistical validity of every kernel (DESIGN testing ladder, step 3): a correlated 3-D Gaussian and
// conjugate Bayesian linear regression, posterior means, variances and one covariance within
// Bonferroni-corrected MCSE bounds. Fixed seeds; each case runs in well under a second in Release.
#include <gtest/gtest.h>

#include "test_models.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {
namespace {

using testing::correlated_gaussian;
using testing::expect_matches_gaussian;
using testing::linear_regression;

struct KernelCase {
  std::string name;
  SamplerConfig config;
  long num_warmup, num_draws;
};

std::vector<KernelCase> kernel_cases() {
  std::vector<KernelCase> cases;
  cases.push_back({"NutsDiag", NutsConfig{}, 500, 1000});
  NutsConfig dense;
  dense.warmup.metric = MetricAdaptation::Dense;
  cases.push_back({"NutsDense", dense, 500, 1000});
  NutsConfig fisher_diagonal, low_rank;
  fisher_diagonal.warmup.metric = MetricAdaptation::FisherDiagonal;
  low_rank.warmup.metric = MetricAdaptation::LowRank;
  cases.push_back({"NutsFisherDiag", fisher_diagonal, 500, 1000});
  cases.push_back({"NutsLowRank", low_rank, 500, 1000});
  HmcConfig hmc;
  hmc.kernel.num_leapfrog_steps = 8;
  hmc.kernel.step_size_jitter = 0.1;
  hmc.kernel.jitter_path_length = true;
  cases.push_back({"HmcDiagJitter", hmc, 500, 1500});
  // Without any jitter, HMC with a fixed path length is near-periodic along directions where the
  // adapted metric whitens the target (the regression's x2 slope), and its MCSE blows up; step-size
  // jitter alone is enough to break the periodicity.
  HmcConfig hmc_step_jitter;
  hmc_step_jitter.kernel.num_leapfrog_steps = 10;
  hmc_step_jitter.kernel.step_size_jitter = 0.2;
  cases.push_back({"HmcDiagStepJitter", hmc_step_jitter, 500, 1000});
  // A dense metric makes a Gaussian target isotropic, where a fixed path length eps L near pi
  // is not ergodic (x -> -x); path-length jitter is what HMC needs there (Neal 2011, sec. 5.4.2.2).
  HmcConfig hmc_dense;
  hmc_dense.kernel.num_leapfrog_steps = 5;
  hmc_dense.kernel.jitter_path_length = true;
  hmc_dense.warmup.metric = MetricAdaptation::Dense;
  cases.push_back({"HmcDense", hmc_dense, 500, 1000});
  cases.push_back({"Mala", MalaConfig{}, 1000, 6000});
  MalaConfig mala_low_rank;
  mala_low_rank.warmup.metric = MetricAdaptation::LowRank;
  cases.push_back({"MalaLowRank", mala_low_rank, 1000, 6000});
  AdaptiveMetropolisConfig am;
  am.kernel.t_adapt = 250;
  cases.push_back({"AdaptiveMetropolis", am, 3000, 15000});
  return cases;
}

void PrintTo(const KernelCase& c, std::ostream* os) { *os << c.name; }

class McmcKernel : public ::testing::TestWithParam<KernelCase> {};

RunResult run(const KernelCase& c, std::shared_ptr<const LogDensity> density, const Vec& start, std::uint64_t seed) {
  RunConfig config;
  config.num_chains = 4;
  config.num_threads = 2;
  config.num_warmup = c.num_warmup;
  config.num_draws = c.num_draws;
  config.seed = seed;
  // Overdispersed starts around `start` drawn from each chain's own stream.
  InitialPointFn init = [start](int, Rng& rng) {
    Vec x = start;
    for (Index i = 0; i < x.size(); ++i) x[i] += rng.uniform(-1.0, 1.0);
    return x;
  };
  return run_chains(config, make_sampler_factory(std::move(density), c.config), init);
}

TEST_P(McmcKernel, CorrelatedGaussian) {
  const auto target = correlated_gaussian();
  const RunResult result = run(GetParam(), target, target->mean(), 11);
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(result.num_divergent(), 0);
  const double worst = expect_matches_gaussian(result, target->mean(), target->covariance());
  RecordProperty("worst_error_over_mcse", std::to_string(worst));
  std::printf("  [%s gaussian] worst |err|/mcse %.2f, ess_bulk(x0) %.0f, %s\n", GetParam().name.c_str(), worst,
              diagnostics::ess_bulk(result.coordinate(0)), result.sampler_descriptions[0].c_str());
}

TEST_P(McmcKernel, ConjugateLinearRegression) {
  const auto model = linear_regression();
  // The closed form is the posterior's mode: its gradient vanishes there.
  Vec grad(3);
  model.posterior->log_density_and_grad(model.mean, grad);
  ASSERT_LT(grad.norm(), 1e-8);
  const RunResult result = run(GetParam(), model.posterior, model.mean, 12);
  EXPECT_EQ(result.num_divergent(), 0);
  const double worst = expect_matches_gaussian(result, model.mean, model.covariance);
  std::printf("  [%s regression] worst |err|/mcse %.2f, ess_bulk(x0) %.0f, corr(w1,b) %.2f\n",
              GetParam().name.c_str(), worst, diagnostics::ess_bulk(result.coordinate(0)),
              model.covariance(0, 2) / std::sqrt(model.covariance(0, 0) * model.covariance(2, 2)));
}

// NUTS on a network evaluated in float32 (the DEI example's default) still samples the exact
// posterior: the sampler integrates in double and sums the log density in double, so float
// rounding of the outputs and gradient (~1e-7 relative) leaves no bias visible at MCSE scale.
TEST(McmcKernelFloat32, NutsMatchesTheConjugatePosterior) {
  const auto model = linear_regression(7, Precision::Float32);
  ASSERT_EQ(model.posterior->model().precision(), Precision::Float32);
  Vec grad(3);
  model.posterior->log_density_and_grad(model.mean, grad);
  EXPECT_LT(grad.norm(), 1e-3) << "the closed-form mode, up to float rounding of the gradient";
  EXPECT_GT(grad.norm(), 0.0) << "exactly zero: the float path did not run";
  const RunResult result = run(KernelCase{"NutsFloat32", NutsConfig{}, 500, 1000}, model.posterior, model.mean, 12);
  EXPECT_EQ(result.num_divergent(), 0);
  const double worst = expect_matches_gaussian(result, model.mean, model.covariance);
  std::printf("  [NutsFloat32 regression] worst |err|/mcse %.2f\n", worst);
}

INSTANTIATE_TEST_SUITE_P(All, McmcKernel, ::testing::ValuesIn(kernel_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace uqnn
