// --out end to end: checked before the fit, written all-or-nothing, one run at a time; and predict's
// warning about inputs outside the training range.
#include <fmt/format.h>

#include <cmath>

#include "unit/cli/cli_fixture.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using OutputDirCli = testing::CliTest;

using testing::run_cli;

TEST_F(OutputDirCli, AnOutThatIsAFileIsAnErrorBeforeTheFitStarts) {
  write("run", "not a directory");
  const CliRun r = run_cli("demo --method map --epochs 5 --figure none --out " + (dir_ / "run").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--out '" + (dir_ / "run").string() + "' is a file, not a directory"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("uqnn fit:"), std::string::npos) << "no work before the check\n" << r.output;
}

TEST_F(OutputDirCli, ARerunReplacesThePreviousRunsFilesAndKeepsTheUsersOwn) {
  const std::string out = (dir_ / "run").string();
  // Adaptive Metropolis: an MCMC run (it writes diagnostics.json) that is quick under the sanitizers.
  CliRun r = run_cli("demo --quiet --method amcmc --chains 2 --warmup 50 --draws 50 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(dir_ / "run" / "diagnostics.json"));
  write("run/my_notes.txt", "mine");
  r = run_cli("demo --quiet --method map --epochs 20 --figure none --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json(dir_ / "run" / "model.json").at("method"), "map");
  EXPECT_FALSE(fs::exists(dir_ / "run" / "diagnostics.json")) << "the MCMC run's diagnostics would describe another run";
  EXPECT_FALSE(fs::exists(dir_ / "run" / "fit.png"));
  EXPECT_TRUE(fs::exists(dir_ / "run" / "my_notes.txt"));
  std::vector<std::string> beside;
  for (const auto& e : fs::directory_iterator(dir_)) beside.push_back(e.path().filename().string());
  EXPECT_EQ(beside, std::vector<std::string>{"run"}) << "no staging directory or lock file left";
}

TEST_F(OutputDirCli, ASecondRunIntoTheSameOutIsRefusedAndAKilledRunLeavesNothingHalf) {
  const fs::path out = dir_ / "run", log = dir_ / "first.log";
  const std::string first = std::string(UQNN_CLI_PATH) + " demo --method nuts --chains 1 --warmup 0 --draws 10000000 --thin 1000 --out " +
                            out.string() + " 2>" + log.string();
  const std::string second = std::string(UQNN_CLI_PATH) + " demo --quiet --method map --epochs 5 --figure none --out " + out.string();
  // The second run starts while the first samples; then the first is killed (no chance to write).
  const std::string output = testing::run_script(first + " & pid=$!; for i in $(seq 600); do grep -q \"init \" " + log.string() +
                                   " && break; sleep 0.1; done; " + second + "; echo second=$?; kill -KILL $pid; wait $pid; echo first=$?");
  EXPECT_NE(output.find("second=2"), std::string::npos) << output;
  EXPECT_NE(output.find("is in use by another uqnn run (process "), std::string::npos) << output;
  EXPECT_NE(output.find("first=137"), std::string::npos) << output;
  // A killed run publishes no result, only the chains' checkpoint that `--resume` continues from.
  EXPECT_FALSE(fs::exists(out / "model.json")) << "a killed run publishes nothing";
  EXPECT_FALSE(fs::exists(out / "draws.csv")) << "a killed run publishes nothing";
  EXPECT_TRUE(fs::exists(out / "checkpoint" / "fit.json"));
  // Its staging directory is cleaned up by the next run, which takes the lock the kernel released.
  const CliRun third = run_cli("demo --quiet --method map --epochs 5 --figure none --out " + out.string());
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_TRUE(fs::exists(out / "model.json"));
  std::vector<std::string> beside;
  for (const auto& e : fs::directory_iterator(dir_)) beside.push_back(e.path().filename().string());
  std::sort(beside.begin(), beside.end());
  EXPECT_EQ(beside, (std::vector<std::string>{"first.log", "run"}));
}

TEST_F(OutputDirCli, PredictWarnsAboutInputsOutsideTheTrainingRange) {
  std::string csv = "a,b,y\n";
  for (int i = 0; i < 30; ++i) csv += fmt::format("{},{},{}\n", -1 + 0.05 * i, std::sin(3.0 * i), 0.3 * i);
  write("data.csv", csv);
  const CliRun fit = run_cli("fit --quiet --method map --epochs 50 --arch 4 --figure none --data " + (dir_ / "data.csv").string() +
                         " --out " + (dir_ / "run").string());
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  write("new.csv", "a,b\n0,0\n2,0.5\n-3,9\n");
  CliRun predict = run_cli("predict --model " + (dir_ / "run").string() + " --data " + (dir_ / "new.csv").string() + " --out " +
                       (dir_ / "p.csv").string());
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  EXPECT_NE(predict.output.find("warning: 2 of 3 rows have inputs outside the training range ('a' in 2 rows (training range "
                                "[-1, 0.45]); 'b' in 1 row (training range"),
            std::string::npos)
      << predict.output;
  EXPECT_NE(predict.output.find("\"rows_outside_training_range\": 2"), std::string::npos) << predict.output;
  write("inside.csv", "a,b\n0,0\n0.4,0.5\n");
  predict = run_cli("predict --model " + (dir_ / "run").string() + " --data " + (dir_ / "inside.csv").string() + " --out " +
                (dir_ / "p2.csv").string());
  ASSERT_EQ(predict.exit_code, 0) << predict.output;
  EXPECT_EQ(predict.output.find("warning"), std::string::npos) << predict.output;
}

}  // namespace
}  // namespace uqnn
