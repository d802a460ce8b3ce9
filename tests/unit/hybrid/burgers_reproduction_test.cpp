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

}  // namespace
}  // namespace uqnn
