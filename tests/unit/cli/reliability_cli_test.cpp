// Regression tests of the reliability probe: aborts, hangs, unbounded reads, data loss, files left
// behind, silent conflicts and messages that named internals (docs/reliability.md).
#include <fmt/format.h>
#include <sys/stat.h>

#include <map>

#include "unit/cli/cli_fixture.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;
using ReliabilityCli = testing::CliTest;

/// Every file under `dir` with its contents (directories as "<dir>"): "exactly as it was".
std::map<std::string, std::string> reliability_snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    if (e.is_directory()) {
      files[rel] = "<dir>";
    } else {
      std::ifstream in(e.path(), std::ios::binary);
      files[rel] = std::string(std::istreambuf_iterator<char>(in), {});
    }
  }
  return files;
}

bool output_has(const CliRun& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

/// `uqnn ARGS` under a 60 s kill: a hang shows as exit 137, not as a stuck test.
CliRun run_cli_bounded(const std::string& args) { return testing::run_command("timeout -s KILL 60 " + std::string(UQNN_CLI_PATH) + " " + args); }

class Reliability : public ReliabilityCli {
 protected:
  std::string fit(const std::string& rest) {
    return fmt::format("fit --quiet --figure none --data {} --out {} {}", write_sine_csv(20), (dir_ / "out").string(), rest);
  }
};

// --- aborts -------------------------------------------------------------------------------------

TEST_F(Reliability, ABooleanFlagGivenAValueIsCheckedNeverAnAbort) {
  for (const std::string flag : {"--quiet=maybe", "--standardize=maybe", "--quiet=99999999999999999999", "--no-quiet=99999999999999999999",
                                 "--standardize=2", "--no-standardize=maybe"}) {
    const CliRun r = run_cli(fit("--method map --epochs 2 " + flag));
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.output;
    EXPECT_TRUE(output_has(r, flag.substr(0, flag.find('=')))) << flag << "\n" << r.output;
    EXPECT_FALSE(output_has(r, "terminate")) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "out")) << flag;
  }
  // The valid spellings still work.
  const CliRun r = run_cli(fmt::format("fit --figure none --data {} --out {} --method map --epochs 2 --standardize=false --quiet=true",
                                       write_sine_csv(20), (dir_ / "out").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(json(dir_ / "out" / "model.json")["settings"]["settings"]["standardize"].get<bool>());
}

// --- hang ---------------------------------------------------------------------------------------

TEST_F(Reliability, AFifoOrADeviceIsRefusedWithoutBeingOpened) {
  const fs::path fifo = dir_ / "pipe.csv";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  CliRun r = run_cli_bounded(fmt::format("fit --quiet --data {} --out {}", fifo.string(), (dir_ / "out").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;  // was a hang in open(2) that SIGTERM could not end
  EXPECT_TRUE(output_has(r, "--data: " + fifo.string() + " is a FIFO (named pipe), not a file")) << r.output;
  r = run_cli_bounded(fmt::format("fit --quiet --data {} --config {} --out {}", write_sine_csv(20), fifo.string(), (dir_ / "out").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "--config " + fifo.string() + ": is not a regular file")) << r.output;
  r = run_cli_bounded("diagnose " + fifo.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, fifo.string() + ": is a FIFO (named pipe), not a file")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// --- unbounded memory ---------------------------------------------------------------------------

TEST_F(Reliability, DiagnoseRefusesADeviceAndBoundsItsLines) {
  if (!fs::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  CliRun r = run_cli_bounded("diagnose /dev/zero");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // grew without limit
  EXPECT_TRUE(output_has(r, "/dev/zero: is a device, not a file")) << r.output;
  {
    std::ofstream out(dir_ / "long.csv", std::ios::binary);
    const std::string block(std::size_t{1} << 20, '1');
    for (int i = 0; i < 65; ++i) out << block;
  }
  r = run_cli_bounded("diagnose " + (dir_ / "long.csv").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, (dir_ / "long.csv").string() + ":1: line longer than 64 MiB")) << r.output;
}

// --- data loss: merge ---------------------------------------------------------------------------

class MergeReliability : public Reliability {
 protected:
  void make_parts() {
    const std::string data = write_sine_csv(20);
    for (int k = 1; k <= 2; ++k) {
      const CliRun r = run_cli(fmt::format("fit --quiet --figure none --data {} --method amcmc --arch 2 --chains 2 --warmup 20 --draws 20 "
                                           "--part {}/2 --out {}",
                                           data, k, (dir_ / fmt::format("p{}", k)).string()));
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }
};

TEST_F(MergeReliability, AnOutputDirectoryThatIsAPartIsRefusedAndThePartKept) {
  make_parts();
  const auto before = reliability_snapshot(dir_);
  const std::string p1 = (dir_ / "p1").string(), p2 = (dir_ / "p2").string();
  CliRun r = run_cli(fmt::format("merge --quiet {} {} {}", p1, p1, p2));  // the older form: OUT first
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, p1 + " is the directory of a part")) << r.output;
  r = run_cli(fmt::format("merge --quiet {} {} --out {}", p1, p2, p1));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "the output directory " + p1 + " is also a part")) << r.output;
  r = run_cli(fmt::format("merge --quiet {} {} --out {}/.", p1, p2, p2));  // the same directory by another name
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(reliability_snapshot(dir_), before) << "a part was replaced";
  // --out DIR, as the README says, and the older positional form.
  r = run_cli(fmt::format("merge --quiet {} {} --out {}", p1, p2, (dir_ / "run").string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json(dir_ / "run" / "metrics.json")["info"]["chains"], 2);
  r = run_cli(fmt::format("merge --quiet {} {} {}", (dir_ / "run2").string(), p2, p1));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(reliability_snapshot(dir_ / "run2").at("draws.csv"), reliability_snapshot(dir_ / "run").at("draws.csv"));
  r = run_cli(fmt::format("merge --quiet {}", p1));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "--out DIR is required")) << r.output;
}

TEST_F(Reliability, MergeHelpIsFormattedLikeTheOtherCommands) {
  const CliRun r = run_cli("merge --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(output_has(r, "uqnn merge PART_DIR... --out DIR")) << r.output;
  EXPECT_TRUE(output_has(r, "--out TEXT")) << r.output;
  EXPECT_FALSE(output_has(r, "out TEXT REQUIRED")) << r.output;
}

// --- files left behind --------------------------------------------------------------------------

/// Runs `args` three times: into a missing --out, into the --out of a finished run, and into one
/// holding a stopped run's checkpoint; each must be refused (exit 2) or fail, and leave it as it was.
void expect_nothing_left(const fs::path& dir, const std::string& data, const std::string& args,
                         const std::string& message, const std::string& good_data = "") {
  SCOPED_TRACE(args);
  const fs::path out = dir / "out";
  fs::remove_all(out);
  const auto base = reliability_snapshot(dir);
  const std::string command = fmt::format("fit --quiet --figure none --data {} --out {} {}", data, out.string(), args);
  CliRun r = run_cli(command);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, message)) << r.output;
  EXPECT_EQ(reliability_snapshot(dir), base) << "a refused run left files (checkpoint/, staging)";
  // A finished run's directory.
  r = run_cli(fmt::format("fit --quiet --figure none --data {} --out {} --method map --epochs 2", good_data.empty() ? data : good_data,
                          out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto before = reliability_snapshot(dir);
  r = run_cli(command);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(reliability_snapshot(dir), before) << "the previous run's directory changed";
  // A stopped run's checkpoint (its state for --resume) survives a refused fresh run.
  fs::create_directories(out / "checkpoint");
  std::ofstream(out / "checkpoint" / "fit.json") << "{\"the\": \"previous run's\"}";
  std::ofstream(out / "checkpoint" / "chain-0.state") << "state";
  before = reliability_snapshot(dir);
  r = run_cli(command);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(reliability_snapshot(dir), before) << "the stopped run's checkpoint was replaced";
  fs::remove_all(out);
}

TEST_F(Reliability, ARefusedRunLeavesTheOutputDirectoryAsItWas) {
  const std::string data = write_sine_csv(20);
  const std::string chains = "--arch 2 --chains 2 --warmup 5 ";
  expect_nothing_left(dir_, data, "--method fsgld " + chains + "--draws 5", "--step-size is required");
  expect_nothing_left(dir_, data, "--method nuts " + chains + "--draws 0", "--draws");
  expect_nothing_left(dir_, data, "--method nuts " + chains + "--draws 5 --part 3/4", "--part");
  expect_nothing_left(dir_, data, "--method vi --epochs 2 --vi-rho-init-lower -3 --vi-rho-init-upper -4",
                      "--vi-rho-init-lower -3 is above --vi-rho-init-upper -4");
  // A header that is not UTF-8 (Latin-1 "é").
  write("latin1.csv", "x\xe9,y\n0,1\n1,2\n2,3\n3,4\n4,5\n");
  expect_nothing_left(dir_, (dir_ / "latin1.csv").string(), "--method nuts " + chains + "--draws 5",
                      "latin1.csv:1: header: the 1st column name is not UTF-8", data);
}

// --- silent conflicts ---------------------------------------------------------------------------

TEST_F(Reliability, ConflictingOptionsAreRefusedNamingBoth) {
  write("valid.csv", "x,y\n0,1\n1,2\n");
  const std::string valid = (dir_ / "valid.csv").string();
  // Each pair: the flags after `--method map --epochs 2`, and what the refusal must say ("" = exit 2 only).
  const std::vector<std::pair<std::string, std::string>> conflicts = {
      {"--valid " + valid + " --valid-fraction 0.2", "--valid and --valid-fraction cannot be given together"},
      {"--standardize --no-standardize", "--standardize and --no-standardize contradict each other"},
      {"--no-standardize --standardize", ""},
      {"--epochs 3", "--epochs is given 2 times: give it once"},
      {"--quiet", "--quiet is given 2 times"},
      {"--classes 3", "--classes: is read only with --likelihood categorical, not with the default --likelihood gaussian"},
      {"--test-fraction 0.6 --valid-fraction 0.5", "--valid-fraction 0.5 and --test-fraction 0.6 leave no training rows"}};
  CliRun r;
  for (const auto& [flags, message] : conflicts) {
    r = run_cli(fit("--method map --epochs 2 " + flags));
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.output;
    if (!message.empty()) EXPECT_TRUE(output_has(r, message)) << flags << ": " << r.output;
  }
  EXPECT_FALSE(output_has(r, "train_fraction")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(Reliability, ATomlFileIsARegularFileWithEachOptionOnceInAKnownTable) {
  write("dup.toml", "epochs = 3\n[training]\nepochs = 4\n");
  CliRun r = run_cli(fit("--method map --config " + (dir_ / "dup.toml").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "dup.toml:3:10: epochs: is given twice in this file (also at " + (dir_ / "dup.toml").string() + ":1:10)")) << r.output;
  write("foo.toml", "[foo]\nepochs = 4\n");
  r = run_cli(fit("--method map --config " + (dir_ / "foo.toml").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "[foo] is not an option group")) << r.output;
  write("wrong.toml", "[model]\nepochs = 4\n");
  r = run_cli(fit("--method map --config " + (dir_ / "wrong.toml").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "epochs: is not an option of [model] (it is in [training]")) << r.output;
  r = run_cli(fit("--method map --config " + dir_.string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "is not a regular file (a directory)")) << r.output;
  if (fs::exists("/dev/zero")) {
    r = run_cli_bounded(fit("--method map --config /dev/zero"));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(output_has(r, "--config /dev/zero: is not a regular file")) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  // The command line wins over the file, whatever the order on the line.
  write("fit.toml", "[training]\nepochs = 4\n");
  r = run_cli(fit("--epochs 3 --method map --config " + (dir_ / "fit.toml").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(json(dir_ / "out" / "model.json")["settings"]["settings"]["epochs"], 3);
}

// --- model.json ---------------------------------------------------------------------------------

TEST_F(Reliability, AModelJsonOfUncheckedSizesOrTypesIsAnInputError) {
  const std::string data = write_sine_csv(20);
  CliRun r = run_cli(fmt::format("fit --quiet --figure none --data {} --method map --epochs 2 --arch 3 --out {}", data, (dir_ / "run").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json good = json(dir_ / "run" / "model.json");
  const auto predict_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    std::ofstream(dir_ / "run" / "model.json") << j.dump();
    return run_cli_bounded(fmt::format("predict --model {} --data {} --out {}", (dir_ / "run").string(), data, (dir_ / "p.csv").string()));
  };
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases{
      {[](nlohmann::json& j) { j["model"]["hidden"] = {1e9, 10}; }, "model.hidden[0]: 1000000000.0 is invalid: it must be a whole number in [0, 1e+06]"},
      {[](nlohmann::json& j) { j["model"]["input_dim"] = 1e12; }, "model.input_dim: 1000000000000.0 is invalid"},
      {[](nlohmann::json& j) { j["model"]["input_dim"] = 6.5; }, "model.input_dim: 6.5 is invalid"},
      {[](nlohmann::json& j) { j["model"]["hidden"] = {100000, 100000}; }, "a network of 1e+10 parameters"},
      {[](nlohmann::json& j) { j["num_draws"] = -1; }, "num_draws: -1 is invalid"},
      {[](nlohmann::json& j) { j.erase("model"); }, "field 'model' is missing"},
  };
  for (const Case& c : cases) {
    r = predict_with(c.edit);
    EXPECT_EQ(r.exit_code, 2) << c.message << "\n" << r.output;
    EXPECT_TRUE(output_has(r, c.message)) << r.output;
    EXPECT_FALSE(output_has(r, "json.exception")) << r.output;
  }
  fs::remove(dir_ / "run" / "model.json");
  fs::create_directory(dir_ / "run" / "model.json");
  r = run_cli_bounded(fmt::format("predict --model {} --data {} --out {}", (dir_ / "run").string(), data, (dir_ / "p.csv").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "model.json: is a directory, not a file")) << r.output;
  EXPECT_FALSE(output_has(r, "basic_filebuf")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "p.csv"));
}

// --- messages -----------------------------------------------------------------------------------

TEST_F(Reliability, MessagesNameTheOptionAsTyped) {
  CliRun r = run_cli(fit("--method vi --epochs 2 --vi-rho-init-lower -3 --vi-rho-init-upper -4"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "--vi-rho-init-lower -3 is above --vi-rho-init-upper -4")) << r.output;
  EXPECT_FALSE(output_has(r, "rho_init_lower")) << r.output;
  for (const std::string value : {"nan", "inf", "-inf", "0x10", "1e999", " 1", "1 "}) {
    r = run_cli(fit("--method map --epochs 2 --lr '" + value + "'"));
    EXPECT_EQ(r.exit_code, 2) << value << "\n" << r.output;
    EXPECT_TRUE(output_has(r, "--lr: '" + value + "' is invalid: it must be a finite number > 0")) << r.output;
    EXPECT_FALSE(output_has(r, "null")) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(Reliability, AnUnknownCommandIsAnErrorEvenWithHelp) {
  for (const std::string args : {"evalute --help", "evalute", ""}) {
    const CliRun r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(output_has(r, args.empty() ? "give a command: one of fit, predict" : "'evalute' is not a uqnn command: the commands are fit, predict"))
        << r.output;
  }
  EXPECT_EQ(run_cli("--help").exit_code, 0);
  EXPECT_EQ(run_cli("fit --help").exit_code, 0);
}

// --- runtime failures ---------------------------------------------------------------------------

TEST_F(Reliability, TrainingThatDivergesExitsThree) {
  // By the failure's type (DivergenceError), for each training loop that can diverge.
  for (const std::string method : {"--method map --optimizer adam --epochs 5 --lr 1e308", "--method vi --epochs 5 --lr 1e308",
                                   "--method swag --swag-lr 1e308"}) {
    const CliRun r = run_cli(fit(method));
    EXPECT_EQ(r.exit_code, 3) << method << "\n" << r.output;  // was 1, the code of an internal failure
    EXPECT_TRUE(output_has(r, "diverged")) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "out" / "model.json"));
  }
}

// --- the rest -----------------------------------------------------------------------------------

TEST_F(Reliability, ATableWithFarMoreColumnsThanRowsIsRefused) {
  std::string header = "c0", row1 = "0", row2 = "1";
  for (int j = 1; j < 20000; ++j) {
    header += fmt::format(",c{}", j);
    row1 += ",0";
    row2 += ",1";
  }
  write("wide.csv", header + "\n" + row1 + "\n" + row2 + "\n");
  const CliRun r = run_cli_bounded(fmt::format("fit --quiet --figure none --data {} --method map --epochs 2 --out {}",
                                           (dir_ / "wide.csv").string(), (dir_ / "out").string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(output_has(r, "19999 input columns for 2 rows")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

}  // namespace
}  // namespace uqnn
