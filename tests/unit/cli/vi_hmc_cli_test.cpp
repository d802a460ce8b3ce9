// `uqnn fit/demo --method vi-hmc` and `uqnn sensitivity` end to end: report files, figures, the
// sampled subset size in metrics.json, and a clear error for a bad --tau.
#include <cmath>

#include "unit/cli/cli_fixture.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using ViHmcCli = testing::CliTest;

using testing::run_cli;

TEST_F(ViHmcCli, DemoWithViHmcNutsWritesTheSensitivityReportAndSamplesTheSubset) {
  const auto [code, output] = run_cli("demo --quiet --method vi-hmc --tau 0.75 --sampler nuts --epochs 1500 --warmup 100 --draws 60 --chains 2 --out " +
                                  (dir_ / "d").string());
  ASSERT_EQ(code, 0) << output;
  for (const char* f : {"sensitivity.csv", "sensitivity.json", "sensitivity.png", "sensitivity_layers.png", "metrics.json", "posterior.nc"})
    EXPECT_TRUE(fs::exists(dir_ / "d" / f)) << f;
  const auto s = json(dir_ / "d" / "sensitivity.json");
  EXPECT_EQ(s["num_params"].get<int>(), 141);
  const auto m = json(dir_ / "d" / "metrics.json");
  const auto& info = m["info"];
  const int kept = info["num_kept"].get<int>();
  EXPECT_GE(kept, 1);
  EXPECT_LT(kept, 141);
  EXPECT_EQ(info["num_sampled"].get<int>(), kept);  // fixed noise: no extras
  EXPECT_TRUE(info["subspace_gradient"].get<bool>());
}

TEST_F(ViHmcCli, SensitivityCommandAndBadTau) {
  std::string csv = "x,y\n";
  for (int i = 0; i < 30; ++i) {
    const double x = -1 + 2.0 * i / 29;
    csv += std::to_string(x) + "," + std::to_string(std::sin(3 * x)) + "\n";
  }
  write("data.csv", csv);
  const auto [code, output] = run_cli("sensitivity --quiet --data " + (dir_ / "data.csv").string() + " --arch 8 --epochs 300 --noise 0.1 --out " +
                                  (dir_ / "s").string());
  ASSERT_EQ(code, 0) << output;
  EXPECT_TRUE(fs::exists(dir_ / "s" / "sensitivity.csv"));
  EXPECT_TRUE(fs::exists(dir_ / "s" / "sensitivity.png"));
  const auto bad = run_cli("fit --quiet --method vi-hmc --tau 1.5 --data " + (dir_ / "data.csv").string() + " --epochs 50 --noise 0.1 --out " +
                       (dir_ / "b").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("tau"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace uqnn
