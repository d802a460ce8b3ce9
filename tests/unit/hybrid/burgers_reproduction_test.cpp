// The Burgers DeepONet reproduction (seed 000 section 4.2.1) in a reduced configuration: the
// paper's 172,401-parameter network, 12 training functions on an 11 x 11 grid, short minibatch MAP
// and VI, VI-HMC at two tau and full-space HMC. Checks the pipeline end to end; the numbers come from examples/vi_hmc/vi_hmc_burgers.
#include <gtest/gtest.h>

#include "../../../examples/vi_hmc/burgers_deeponet.hpp"

namespace uqnn {
namespace {

TEST(BurgersReproduction, ReducedConfigurationRunsEndToEnd) {
  examples::BurgersConfig cfg;
  cfg.num_train = 12;
  cfg.num_test = 4;
  cfg.train_stride = 10;
  cfg.test_stride = 10;
  // 1,452 data values are too few against the N(0, 0.1^2) prior on 172,401 weights at the paper's
  // likelihood sd 1 (the MAP stays near 0): a sharper likelihood lets this short run fit something.
  cfg.noise_sd = 0.1;
  cfg.batch_functions = 4;  // minibatches of 4 functions x 60 of the 121 grid points
  cfg.batch_points = 60;
  cfg.map_epochs = 150;
  cfg.vi_epochs = 30;
  cfg.sensitivity_pairs = 32;
  cfg.taus = {0.9, 0.3};
  cfg.fixed_step_warmup = 1;
  cfg.fixed_step_draws = 2;
  cfg.max_leapfrog_steps = 10;
  cfg.find_step_iterations = 10;
  cfg.predictive_draws = 2;
  cfg.figures = false;
  const auto dir = std::filesystem::temp_directory_path() / ("uqnn_burgers_" + std::to_string(::getpid()));
  const examples::BurgersReport r = examples::run_burgers_reproduction(cfg, dir);
  std::filesystem::remove_all(dir);
  std::printf("%s", r.table.c_str());
  EXPECT_EQ(r.num_params, 172401);  // Table A.3 (the paper's count)
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_GT(r.rows[0].num_kept, r.rows[1].num_kept);  // eq. 18: fewer parameters for a smaller tau
  EXPECT_LT(r.rows[0].num_kept, r.num_params);
  ASSERT_TRUE(r.full_space.has_value());  // Table 2's full-space HMC row
  EXPECT_EQ(r.full_space->num_kept, r.num_params);
  EXPECT_GT(r.full_space->step_for_80, 0.0);
  for (const auto& row : r.rows) {
    EXPECT_GT(row.step_for_80, 0.0);
    EXPECT_GE(row.accept_fixed, 0.0);
    EXPECT_LE(row.accept_fixed, 1.0);
    EXPECT_TRUE(std::isfinite(row.relative_l2));
  }
  // Better than predicting zero everywhere (relative L2 = 1) after even this short training.
  EXPECT_LT(r.map_relative_l2, 1.0);
  EXPECT_LT(r.vi_relative_l2, 1.0);
}

// The training likelihood of the example: all grid points drawn = the posterior's full-grid
// log-likelihood and gradient; fewer points = an unbiased estimate (mean over many draws within
// 4 standard errors of the full value).
TEST(BurgersReproduction, MinibatchLikelihoodIsUnbiasedForTheFullGrid) {
  DeepOnetSpec spec;
  spec.branch_input = 3;
  spec.trunk_input = 2;
  spec.branch_hidden = {4};
  spec.trunk_hidden = {4};
  spec.latent = 3;
  const DeepOnet pairs(spec);
  Rng rng(5);
  const Mat grid = Mat::NullaryExpr(2, 6, [&] { return rng.normal(); });
  const Mat u = Mat::NullaryExpr(3, 4, [&] { return rng.normal(); });
  const Mat y = Mat::NullaryExpr(6, 4, [&] { return rng.normal(); });
  const Vec theta = pairs.initial_params(rng);
  const Posterior post(std::make_shared<DeepOnet>(pairs.with_query_grid(grid)), make_gaussian_likelihood(0.7),
                       GaussianPrior::isotropic(pairs.num_params(), 1.0), u, y);
  const IndexVec rows{3, 1};
  Vec full_grad = Vec::Zero(theta.size());
  const double full = post.log_likelihood(theta, gather_columns(u, rows), gather_columns(y, rows), &full_grad);

  const examples::BurgersMinibatchLikelihood all(pairs, grid, u, y, 0.7, 6, 1);
  Vec grad = Vec::Zero(theta.size());
  EXPECT_NEAR(all(theta, rows, &grad), full, 1e-10 * std::abs(full));
  EXPECT_LT((grad - full_grad).norm(), 1e-10 * full_grad.norm());

  const examples::BurgersMinibatchLikelihood two(pairs, grid, u, y, 0.7, 2, 2);
  const int n = 20000;
  double sum = 0, sum_sq = 0;
  for (int k = 0; k < n; ++k) {
    const double v = two(theta, rows, nullptr);
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / n, standard_error = std::sqrt((sum_sq / n - mean * mean) / n);
  EXPECT_GT(standard_error, 0.0);
  EXPECT_NEAR(mean, full, 4 * standard_error);
}

}  // namespace
}  // namespace uqnn
