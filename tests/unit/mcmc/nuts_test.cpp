// NUTS: simulation-based calibration, trajectory lengths that stop at the U-turn, tree depth and
// per-transition statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "test_models.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/mcmc/nuts.hpp"

namespace uqnn {
namespace {

/// Straight-line regression y_i = a + b x_i + N(0, 0.5^2) at x = 0, 0.5, ..., 2 with prior
/// (a, b) ~ N(0, I): a small model with a correlated posterior (corr(a, b) ~ -0.8).
class LineModel : public LogDensity {
 public:
  explicit LineModel(Vec y) : y_(std::move(y)) {}
  static Vec inputs() { return Vec::LinSpaced(5, 0.0, 2.0); }
  Index dim() const override { return 2; }
  double log_density_and_grad(const Vec& t, Vec& g) const override {
    const Vec x = inputs();
    const Vec r = (y_.array() - t[0] - t[1] * x.array()).matrix();
    const double s2 = 0.25;
    g.resize(2);
    g[0] = r.sum() / s2 - t[0];
    g[1] = r.dot(x) / s2 - t[1];
    return -0.5 * r.squaredNorm() / s2 - 0.5 * t.squaredNorm();
  }

 private:
  Vec y_;
};

TEST(NutsSbc, RanksOfTheTruthAreUniform) {
  // Simulation-based calibration (Talts et al. 2018): theta* ~ prior, y ~ p(y | theta*), 99
  // thinned NUTS draws from p(theta | y); the rank of theta*_k among them is uniform on 0..99 for
  // a correct sampler. 10 bins of 10 ranks, chi-square with 9 df at level 0.001 per coordinate.
  const int replications = 200;
  const int bins = 10;
  std::vector<std::vector<int>> counts(2, std::vector<int>(bins, 0));
  Rng data_rng(2024);
  RunConfig config;
  config.num_chains = 1;
  config.num_threads = 1;
  config.num_warmup = 200;
  config.num_draws = 396;
  config.thin = 4;
  long divergent = 0;
  for (int rep = 0; rep < replications; ++rep) {
    const Vec truth = data_rng.normal_vector(2);
    Vec y = (truth[0] + truth[1] * LineModel::inputs().array()).matrix();
    for (Index i = 0; i < y.size(); ++i) y[i] += 0.5 * data_rng.normal();
    auto density = std::make_shared<LineModel>(y);
    config.seed = 1000 + static_cast<std::uint64_t>(rep);
    const RunResult r = run_chains(config, make_sampler_factory(density, NutsConfig{}), truth);
    ASSERT_EQ(r.draws[0].rows(), 99);
    divergent += r.num_divergent();
    for (int k = 0; k < 2; ++k) {
      const int rank = static_cast<int>((r.draws[0].col(k).array() < truth[k]).count());
      ++counts[static_cast<std::size_t>(k)][static_cast<std::size_t>(rank * bins / 100)];
    }
  }
  const double expected = static_cast<double>(replications) / bins;
  const double chi2_critical = 27.877;  // chi-square 9 df, 0.999 quantile
  for (int k = 0; k < 2; ++k) {
    double chi2 = 0.0;
    std::string hist;
    for (int c : counts[static_cast<std::size_t>(k)]) {
      chi2 += (c - expected) * (c - expected) / expected;
      hist += std::to_string(c) + " ";
    }
    std::printf("  SBC coordinate %d: chi2 %.2f (critical %.2f), bins %s\n", k, chi2, chi2_critical, hist.c_str());
    EXPECT_LT(chi2, chi2_critical) << "coordinate " << k << " bins " << hist;
  }
  EXPECT_EQ(divergent, 0);
}

TEST(NutsTrajectory, StopsAtTheUTurn) {
  // On N(0, I_d) with the unit metric every trajectory is a rotation with period 2 pi; the
  // no-U-turn criterion stops it after about half a period, pi / eps leapfrog steps, rounded to
  // the binary tree (at most 2^(depth)). Without a working criterion trajectories run to the
  // maximum depth or loop around several times.
  for (Index d : {1, 10}) {
    auto target = std::make_shared<testing::GaussianDensity>(Vec::Zero(d), Mat::Identity(d, d));
    Nuts nuts(*target);
    NutsParams params;
    params.step_size = 0.1;  // pi / eps ~ 31 steps
    Rng rng(9);
    GradientState s = nuts.init(Vec::Constant(d, 0.5));
    double steps = 0.0;
    int max_steps = 0;
    const int n = 2000;
    for (int i = 0; i < n; ++i) {
      NutsStep step = nuts.step(rng, s, params);
      s = step.state;
      steps += step.info.num_leapfrog_steps;
      max_steps = std::max(max_steps, step.info.num_leapfrog_steps);
      ASSERT_LE(step.info.num_leapfrog_steps, (1 << step.info.tree_depth) - 1 + (1 << step.info.tree_depth));
      ASSERT_GE(step.info.accept_prob, 0.0);
      ASSERT_LE(step.info.accept_prob, 1.0);
    }
    std::printf("  N(0, I_%ld), eps 0.1: mean n_leapfrog %.1f, max %d (half period %.0f)\n", static_cast<long>(d),
                steps / n, max_steps, std::numbers::pi / 0.1);
    EXPECT_GT(steps / n, 0.5 * std::numbers::pi / 0.1);
    EXPECT_LT(steps / n, 2.0 * std::numbers::pi / 0.1);
    EXPECT_LE(max_steps, 127);
  }
}

TEST(NutsTrajectory, MaxTreeDepthAndStatistics) {
  auto target = std::make_shared<testing::GaussianDensity>(Vec::Zero(2), Mat::Identity(2, 2));
  Nuts nuts(*target);
  NutsParams params;
  params.step_size = 0.01;  // needs ~300 steps to turn
  params.max_depth = 4;
  Rng rng(10);
  GradientState s = nuts.init(Vec::Constant(2, 0.3));
  for (int i = 0; i < 50; ++i) {
    NutsStep step = nuts.step(rng, s, params);
    EXPECT_EQ(step.info.tree_depth, 4);
    EXPECT_EQ(step.info.num_leapfrog_steps, 15);
    EXPECT_GT(step.info.accept_prob, 0.99);
    EXPECT_FALSE(step.info.is_divergent);
    EXPECT_TRUE(std::isfinite(step.info.energy));
    s = step.state;
  }
}

}  // namespace
}  // namespace uqnn
