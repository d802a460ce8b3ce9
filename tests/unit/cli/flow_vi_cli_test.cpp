// `uqnn fit --method vi --vi-family flow` end to end (issue 20, item 5): the RealNVP fit on a small
// regression writes every file, records the flow and its convergence, reloads in `uqnn predict`,
// and fits better than mean field at the same data; misuse is a clear error.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "unit/cli/cli_fixture.hpp"
#include "uqnn/io/csv.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

class FlowViCli : public testing::CliTest {
 protected:
  std::string flow_sine_csv() { return write_sine_csv(60); }
};

TEST_F(FlowViCli, FitsRecordsTheFlowAndReloads) {
  const std::string data = flow_sine_csv();
  const fs::path flow = dir_ / "flow", mean_field = dir_ / "mf";
  CliRun r = run_cli(fmt::format("fit --quiet --method vi --vi-family flow --vi-flow-epochs 1500 --arch 8 --activation tanh "
                                 "--data {} --out {}", data, flow.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"predictions.csv", "model.json", "draws.csv", "metrics.json", "fit.png", "history.png"})
    EXPECT_TRUE(fs::exists(flow / f)) << f;
  const auto metrics = json(flow / "metrics.json");
  EXPECT_EQ(metrics["info"]["family"], "flow");
  EXPECT_EQ(metrics["info"]["flow"]["coupling_layers"].get<int>(), 8);
  EXPECT_TRUE(metrics["info"]["optimizer"].contains("converged"));
  EXPECT_EQ(metrics["info"]["optimizer"]["iterations"].get<int>(), 1500);
  // Mean field with its 2000 default epochs, same network and data.
  r = run_cli(fmt::format("fit --quiet --method vi --arch 8 --activation tanh --data {} --out {}", data, mean_field.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double flow_rmse = metrics["splits"]["train"]["rmse"].get<double>();
  const double mf_rmse = json(mean_field / "metrics.json")["splits"]["train"]["rmse"].get<double>();
  std::printf("  train RMSE: flow %.3f, mean field %.3f (noise sd ~0.07, sd of y ~0.7)\n", flow_rmse, mf_rmse);
  EXPECT_LT(flow_rmse, 0.2);
  EXPECT_LT(flow_rmse, mf_rmse);

  r = run_cli("predict --model " + flow.string() + " --data " + data + " --out " + (dir_ / "p.csv").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_csv(dir_ / "p.csv").num_rows(), 60);
}

TEST_F(FlowViCli, MisuseIsAClearError) {
  const std::string data = " --data " + flow_sine_csv() + " --out " + (dir_ / "o").string();
  CliRun r = run_cli("fit --quiet --method vi --vi-family flow --vi-flow-lr-decay 0" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--vi-flow-lr-decay"), std::string::npos) << r.output;
  r = run_cli("fit --quiet --method vi --vi-family normalizing" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--vi-family"), std::string::npos) << r.output;
  r = run_cli("fit --quiet --method vi-hmc --vi-family flow --epochs 20 --chains 1 --warmup 10 --draws 10" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("vi-hmc's subspace comes from a mean-field fit"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace uqnn
