// `uqnn fit --method mclmc` and `--method mile` end to end on a small regression: the tuned step
// size and L reach metrics.json, MILE runs one MCLMC chain per ensemble member with the held-out
// monitor's files, and bad settings are clear errors.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "unit/cli/cli_fixture.hpp"
#include "uqnn/run/mclmc_sampler.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

class MclmcCli : public testing::CliTest {
 protected:
  std::string sine_csv() { return write_sine_csv(80); }
};

TEST_F(MclmcCli, FitsASineAndReportsItsTuning) {
  const fs::path out = dir_ / "mclmc";
  const CliRun r = run_cli(fmt::format("fit --quiet --data {} --arch 10 --epochs 300 --noise 0.1 --test-fraction 0.25 --method mclmc "
                                       "--chains 2 --warmup 600 --draws 400 --thin 1 --out {}",
                                       sine_csv(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto metrics = json(out / "metrics.json");
  // The network fits the sine: the test RMSE is near the noise level (sd of y is ~0.7).
  EXPECT_LT(metrics.at("splits").at("test").at("rmse").get<double>(), 0.25) << metrics.dump(1);
  EXPECT_EQ(metrics.at("num_draws").get<int>(), 800);
  const std::string tuned = metrics.at("info").dump();
  EXPECT_NE(tuned.find("mclmc: step size"), std::string::npos) << tuned;
  EXPECT_NE(tuned.find("preconditioner diagonal"), std::string::npos) << tuned;
  EXPECT_TRUE(fs::exists(out / "draws.csv"));
  EXPECT_TRUE(fs::exists(out / "fit.png"));
}

TEST_F(MclmcCli, RunsTenThousandStepsThinnedByTenByDefault) {
  const fs::path out = dir_ / "defaults";
  const CliRun r = run_cli(fmt::format("fit --quiet --data {} --arch 2 --epochs 50 --noise 0.1 --method mclmc --chains 1 "
                                       "--figure none --out {}",
                                       sine_csv(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto metrics = json(out / "metrics.json");
  const auto& info = metrics.at("info");
  EXPECT_EQ(info.at("warmup").get<long>(), MclmcRunDefaults::warmup);
  EXPECT_EQ(info.at("thin").get<long>(), MclmcRunDefaults::thin);
  EXPECT_EQ(info.at("draws_per_chain").get<long>(), MclmcRunDefaults::draws / MclmcRunDefaults::thin);
}

TEST_F(MclmcCli, MileRunsOneTunedChainPerMemberWithTheHeldOutMonitor) {
  const fs::path out = dir_ / "mile";
  const CliRun r = run_cli(fmt::format("fit --quiet --data {} --arch 10 --noise 0.1 --test-fraction 0.2 --valid-fraction 0.1 "
                                       "--method mile --members 3 --epochs 200 --warmup 500 --draws 200 --thin 2 --out {}",
                                       sine_csv(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto metrics = json(out / "metrics.json");
  const auto& info = metrics.at("info");
  EXPECT_EQ(info.at("sampler"), "mclmc");
  EXPECT_EQ(info.at("chains").get<int>(), 3);
  EXPECT_EQ(info.at("draws_per_chain").get<int>(), 100);  // 200 steps thinned by 2
  EXPECT_EQ(info.at("tuned").size(), 3u);
  // MILE's configuration, not BlackJAX's: no preconditioner.
  EXPECT_NE(info.at("tuned").at(0).get<std::string>().find("preconditioner identity"), std::string::npos) << info.dump();
  EXPECT_LT(metrics.at("splits").at("test").at("rmse").get<double>(), 0.25) << metrics.dump(1);
  EXPECT_TRUE(fs::exists(out / "dei_chains.json"));
  // The members were trained with MILE's optimiser, recorded with the run's settings.
  const auto model = json(out / "model.json");
  EXPECT_NE(model.dump().find("adamw"), std::string::npos);
}

TEST_F(MclmcCli, BadSettingsAreClearErrors) {
  const std::string data = sine_csv();
  CliRun r = run_cli(fmt::format("fit --data {} --method mclmc --no-adapt --step-size 0.1 --out {}", data, (dir_ / "a").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--no-adapt needs both --step-size and --mclmc-length"), std::string::npos) << r.output;
  r = run_cli(fmt::format("fit --data {} --method mclmc --mclmc-variance-fraction 0.6 --mclmc-ess-fraction 0.5 --out {}", data,
                          (dir_ / "b").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("must be < 1"), std::string::npos) << r.output;
  r = run_cli(fmt::format("fit --data {} --method mclmc --mclmc-energy-variance -1 --out {}", data, (dir_ / "c").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--mclmc-energy-variance"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace uqnn
