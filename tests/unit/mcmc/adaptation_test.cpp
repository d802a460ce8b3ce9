// Warmup (DESIGN testing ladder, step 1): dual averaging reaches its target, Stan's window
// schedule, Welford estimators, the regularised metric, find_step_size, and NUTS's and MALA's
// warmup reaching their target acceptance.
#include <gtest/gtest.h>

#include <cmath>

#include "test_models.hpp"
#include "uqnn/adaptation/dual_averaging.hpp"
#include "uqnn/adaptation/stan_warmup.hpp"
#include "uqnn/adaptation/step_size.hpp"
#include "uqnn/adaptation/welford.hpp"
#include "uqnn/adaptation/window_adaptation.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {
namespace {

TEST(McmcDualAveraging, ReachesTargetOnAKnownAcceptanceCurve) {
  // Acceptance a(eps) = exp(-eps): the target 0.8 is reached at eps* = -log 0.8.
  for (double target : {0.6, 0.8, 0.95}) {
    DualAveraging da({target, 0.05, 10.0, 0.75});
    da.restart(1.0);
    double eps = 1.0;
    for (int i = 0; i < 3000; ++i) eps = da.update(std::exp(-eps));
    // The acceptance at the averaged step size is the target.
    EXPECT_NEAR(std::exp(-da.final_step_size()), target, 0.005) << target;
  }
  // With noisy acceptance statistics (a(eps) + U(-0.2, 0.2), clipped to [0, 1]).
  Rng rng(1);
  DualAveraging da;
  da.restart(0.01);
  double eps = 0.01;
  for (int i = 0; i < 5000; ++i) eps = da.update(std::clamp(std::exp(-eps) + rng.uniform(-0.2, 0.2), 0.0, 1.0));
  EXPECT_NEAR(da.final_step_size(), -std::log(0.8), 0.03);
}

TEST(McmcDualAveraging, FirstStepsMatchHandComputation) {
  // mu = log(10 * 0.5); t = 1: eta = 1/11, s_bar = (0.8 - 0.3)/11, x = mu - s_bar / 0.05, x_bar = x.
  DualAveraging da;
  da.restart(0.5);
  const double mu = std::log(5.0);
  const double s1 = 0.5 / 11.0;
  EXPECT_NEAR(da.update(0.3), std::exp(mu - s1 / 0.05), 1e-12);
  EXPECT_NEAR(da.final_step_size(), std::exp(mu - s1 / 0.05), 1e-12);
  // t = 2 with accept 1.7 (clipped to 1).
  const double s2 = (1.0 - 1.0 / 12.0) * s1 + (0.8 - 1.0) / 12.0;
  const double x2 = mu - s2 * std::sqrt(2.0) / 0.05;
  EXPECT_NEAR(da.update(1.7), std::exp(x2), 1e-12);
  const double w = std::pow(2.0, -0.75);
  EXPECT_NEAR(da.final_step_size(), std::exp((1 - w) * (mu - s1 / 0.05) + w * x2), 1e-12);
  EXPECT_THROW(DualAveraging({1.0, 0.05, 10, 0.75}), std::invalid_argument);
  EXPECT_THROW(DualAveraging({0.8, 0.05, 10, 0.4}), std::invalid_argument);
}

TEST(McmcWindowSchedule, MatchesStanFor1000And100Warmup) {
  // Stan's defaults for 1000 warmup: buffers 75 / 50, windows 25, 50, 100, 200, 500.
  const WindowSchedule s1000(1000);
  const std::vector<AdaptationWindow> expected1000{{75, 100}, {100, 150}, {150, 250}, {250, 450}, {450, 950}};
  EXPECT_EQ(s1000.windows(), expected1000);
  EXPECT_EQ(s1000.init_buffer(), 75);
  EXPECT_EQ(s1000.term_buffer(), 50);
  EXPECT_TRUE(s1000.note().empty());
  EXPECT_FALSE(s1000.in_window(74));
  EXPECT_TRUE(s1000.in_window(75));
  EXPECT_TRUE(s1000.ends_window(99));
  EXPECT_TRUE(s1000.ends_window(949));
  EXPECT_FALSE(s1000.in_window(950));
  // 100 warmup (< 75 + 25 + 50): Stan shrinks to 15% / 75% / 10%: one window [15, 90).
  const WindowSchedule s100(100);
  EXPECT_EQ(s100.init_buffer(), 15);
  EXPECT_EQ(s100.term_buffer(), 10);
  EXPECT_EQ(s100.base_window(), 75);
  EXPECT_EQ(s100.windows(), (std::vector<AdaptationWindow>{{15, 90}}));
  EXPECT_FALSE(s100.note().empty());
  // Boundary cases: 150 fits exactly; 200 and 500 (Stan's last window absorbs the remainder).
  EXPECT_EQ(WindowSchedule(150).windows(), (std::vector<AdaptationWindow>{{75, 100}}));
  EXPECT_EQ(WindowSchedule(200).windows(), (std::vector<AdaptationWindow>{{75, 100}, {100, 150}}));
  EXPECT_EQ(WindowSchedule(500).windows(),
            (std::vector<AdaptationWindow>{{75, 100}, {100, 150}, {150, 250}, {250, 450}}));
  // 2000 warmup: 25, 50, 100, 200, 400, 1100.
  EXPECT_EQ(WindowSchedule(2000).windows(),
            (std::vector<AdaptationWindow>{{75, 100}, {100, 150}, {150, 250}, {250, 450}, {450, 850}, {850, 1950}}));
  EXPECT_FALSE(WindowSchedule(19).adapts_metric());
  EXPECT_TRUE(WindowSchedule(20).adapts_metric());
  EXPECT_THROW(WindowSchedule(100, {75, 50, 0}), std::invalid_argument);
}

TEST(McmcWelford, MatchesTwoPassEstimatesAndStanRegularisation) {
  Rng rng(2);
  Mat x(3, 50);
  for (Index i = 0; i < x.size(); ++i) x.data()[i] = 5.0 + rng.normal();
  WelfordVariance var(3);
  WelfordCovariance cov(3);
  for (Index j = 0; j < x.cols(); ++j) {
    var.add(x.col(j));
    cov.add(x.col(j));
  }
  const Vec mean = x.rowwise().mean();
  const Mat centred = x.colwise() - mean;
  const Mat expected = centred * centred.transpose() / 49.0;
  EXPECT_LT((cov.covariance() - expected).norm(), 1e-12);
  EXPECT_LT((var.variance() - expected.diagonal()).norm(), 1e-12);
  EXPECT_EQ(var.count(), 50);
  const Vec reg = regularize_variance(var.variance(), 50);
  EXPECT_NEAR(reg[1], 50.0 / 55.0 * expected(1, 1) + 1e-3 * 5.0 / 55.0, 1e-14);
  const Mat regc = regularize_covariance(cov.covariance(), 50);
  EXPECT_NEAR(regc(0, 1), 50.0 / 55.0 * expected(0, 1), 1e-14);
  EXPECT_NEAR(regc(2, 2), 50.0 / 55.0 * expected(2, 2) + 1e-3 * 5.0 / 55.0, 1e-14);
}

/// A 100-D Gaussian with independent coordinates of sd 0.5 .. 2. Dual averaging makes the
/// acceptance averaged over its iterates equal the target; the acceptance at the averaged step size
/// exp(x_bar) equals it too only where a(eps) is smooth, as in higher dimensions. In 2-3-D the
/// curve has a cliff at the leapfrog stability limit and the final step size overshoots the target
/// acceptance (accept 0.92 for target 0.8 on the 3-D test Gaussian), as Stan users see too.
std::shared_ptr<testing::GaussianDensity> gaussian_100d() {
  const Index d = 100;
  Vec sd = Vec::LinSpaced(d, 0.5, 2.0);
  return std::make_shared<testing::GaussianDensity>(Vec::Zero(d), Mat(sd.array().square().matrix().asDiagonal()));
}

TEST(McmcStepSize, FindStepSizeGivesTargetAcceptance) {
  const auto target = gaussian_100d();
  for (double accept : {0.65, 0.8, 0.9}) {
    FindStepSizeOptions options;
    options.num_iterations = 1000;
    options.seed = 3;
    const FindStepSizeResult found = find_step_size(*target, target->mean(), accept, options);
    // Run HMC with the step size it found: the mean acceptance is the target.
    Hmc hmc(*target);
    HmcParams params;
    params.step_size = found.step_size;
    params.num_leapfrog_steps = options.num_leapfrog_steps;
    Rng rng(4);
    GradientState s = hmc.init(found.position);
    double sum = 0.0;
    const int n = 4000;
    for (int i = 0; i < n; ++i) {
      HmcStep step = hmc.step(rng, s, params);
      sum += step.info.accept_prob;
      s = step.state;
    }
    std::printf("  find_step_size target %.2f: step size %.4f (heuristic %.4f), accept during DA %.3f, HMC mean accept %.3f\n", accept, found.step_size, found.initial_step_size, found.mean_accept_stat, sum / n);
    EXPECT_NEAR(sum / n, accept, 0.04) << "step size " << found.step_size;
  }
}

TEST(McmcStepSize, StanHeuristicBracketsAcceptance) {
  const auto target = testing::correlated_gaussian();
  Rng rng(5);
  const Metric unit = make_unit_metric(3);
  const double from_small = initial_step_size(*target, unit, target->mean(), 1e-4, rng);
  const double from_large = initial_step_size(*target, unit, target->mean(), 50.0, rng);
  // Doubling from below stops at the first eps whose one-step acceptance falls under 0.8 and
  // halving from above at the first whose acceptance exceeds 0.8: both land within a few doublings
  // of the conditional scale of the target (its smallest sd ~0.26).
  EXPECT_GT(from_small, 0.05);
  EXPECT_LT(from_small, 4.0);
  EXPECT_GT(from_large, 0.05);
  EXPECT_LT(from_large, 4.0);
}

/// Runs one chain with `config` and returns the mean accept_prob after warmup.
double mean_accept_after_warmup(const SamplerConfig& config, std::shared_ptr<const LogDensity> density,
                                const Vec& start, long num_warmup, long num_draws, std::uint64_t seed = 21) {
  RunConfig rc;
  rc.num_chains = 4;
  rc.num_threads = 2;
  rc.num_warmup = num_warmup;
  rc.num_draws = num_draws;
  rc.seed = seed;
  const RunResult r = run_chains(rc, make_sampler_factory(std::move(density), config), start);
  return r.statistic([](const DrawStats& s) { return s.accept_prob; }).mean();
}

TEST(McmcWarmup, NutsAndMalaReachTheirTargetAcceptance) {
  const auto target = gaussian_100d();
  // Dual averaging restarts after the last metric window, and x_bar lags its iterates, so with
  // Stan's 50-iteration terminal buffer the final acceptance lands a little above the target
  // (0.86 for 0.8 here; Stan behaves the same). A longer terminal buffer converges to the target,
  // still with a small upward bias at low targets (x_bar averages log step sizes: Jensen). Measured
  // over seeds 21-28 (gcc 12): 0.721 +- 0.006 for 0.7, 0.814 +- 0.005 for 0.8, 0.901 +- 0.003 for
  // 0.9 (mean +- sd of one seed's 4 chains). One seed alone can sit 2 sd out, and compilers'
  // rounding differs: the mean of 4 seeds is tested, within [target - 0.01, target + 0.03].
  for (double accept : {0.7, 0.8, 0.9}) {
    NutsConfig nuts;
    nuts.warmup.dual_averaging.target_accept = accept;
    nuts.warmup.windows.term_buffer = 600;
    double got = 0.0;
    for (std::uint64_t seed : {21, 22, 23, 24}) got += mean_accept_after_warmup(nuts, target, target->mean(), 1600, 1000, seed) / 4;
    std::printf("  NUTS target %.2f (term buffer 600): mean accept_prob %.3f over 4 seeds\n", accept, got);
    EXPECT_GT(got, accept - 0.01);
    EXPECT_LT(got, accept + 0.03);
  }
  {
    const double got = mean_accept_after_warmup(NutsConfig{}, target, target->mean(), 1000, 1000);
    std::printf("  NUTS target 0.80 (Stan's defaults): mean accept_prob %.3f\n", got);
    EXPECT_GT(got, 0.78);
    EXPECT_LT(got, 0.9);
  }
  // MALA adapts in the same Stan warmup, toward 0.574. With the metric fixed, dual averaging runs
  // over the whole warmup without restarts and reaches the target.
  MalaConfig mala;
  mala.warmup.metric = MetricAdaptation::None;
  double got = mean_accept_after_warmup(mala, target, target->mean(), 2000, 4000);
  std::printf("  MALA target 0.574 (step size only): mean accept %.3f\n", got);
  EXPECT_NEAR(got, 0.574, 0.04);
  // With the 50-iteration terminal buffer the acceptance lands above the target, as NUTS's does.
  got = mean_accept_after_warmup(MalaConfig{}, target, target->mean(), 1000, 1000);
  std::printf("  MALA target 0.574 (Stan's windows): mean accept %.3f\n", got);
  EXPECT_GT(got, 0.55);
  EXPECT_LT(got, 0.8);
}

TEST(McmcWarmup, DiagonalMetricLearnsThePosteriorVariances) {
  const auto target = testing::correlated_gaussian();
  auto sampler = std::make_unique<NutsSampler>(target, NutsConfig{});
  Rng rng(8);
  sampler->init(target->mean());
  sampler->begin_warmup(1000);
  for (int i = 0; i < 1000; ++i) sampler->transition(rng, true);
  const Vec learnt = std::get<DiagonalMetric>(sampler->params().metric).inverse_metric;
  const Vec truth = target->covariance().diagonal();
  for (Index i = 0; i < 3; ++i) EXPECT_NEAR(learnt[i] / truth[i], 1.0, 0.3) << i;
}

}  // namespace
}  // namespace uqnn
