// Draws of large models in draws.npy (--draws-format): the same values as draws.csv, bitwise; the
// same predictions; a stopped run's file complete; a damaged file an error with exit code 2.
#include <fmt/format.h>

#include <fstream>

#include "unit/cli/cli_fixture.hpp"
#include "unit/io/temp_dir.hpp"
#include "uqnn/data/image_arrays.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/io/npy_row_writer.hpp"
#include "uqnn/services/fit_output.hpp"
#include "uqnn/services/fitted_model.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;
using DrawsNpyCli = testing::CliTest;

/// An SGLD fit of the demo problem (2 chains) with `format`, into dir/name.
fs::path fit_demo(const fs::path& dir, const std::string& name, const std::string& format) {
  const fs::path out = dir / name;
  const CliRun r = run_cli("demo --quiet --figure none --method sgld --chains 2 --draws 15 --thin 1 --warmup 10 --seed 4 --draws-format " + format +
                           " --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return out;
}

// The values of draws.npy are draws.csv's bit for bit, by chain, and `uqnn predict` on the two runs
// writes the same file.
TEST_F(DrawsNpyCli, ARunsDrawsInNpyAreTheCsvRunsBitwiseAndPredictTheSame) {
  const fs::path csv = fit_demo(dir_, "csv", "csv"), npy = fit_demo(dir_, "npy", "npy");
  ASSERT_TRUE(fs::exists(npy / "draws.npy"));
  ASSERT_TRUE(fs::exists(npy / "draws_stats.csv"));
  EXPECT_FALSE(fs::exists(npy / "draws.csv"));
  EXPECT_EQ(json(npy / "model.json").at("draws_file"), "draws.npy");
  EXPECT_EQ(json(csv / "model.json").at("draws_file"), "draws.csv");  // auto: csv below 100,000 parameters
  const FittedModel a = FittedModel::load(csv), b = FittedModel::load(npy);
  ASSERT_EQ(a.draws().num_chains(), 2);
  ASSERT_EQ(b.draws().num_chains(), a.draws().num_chains());
  for (Index c = 0; c < a.draws().num_chains(); ++c) {
    EXPECT_EQ(b.draws().chain(c).id, a.draws().chain(c).id);
    ASSERT_EQ(b.draws().chain(c).values.rows(), 15);
    EXPECT_TRUE(b.draws().chain(c).values == a.draws().chain(c).values) << "chain " << c;
  }
  // The file itself, by the .npy reader of image data (what numpy.load sees): [draws, K], chain after chain.
  const NdArray raw = read_npy(npy / "draws.npy");
  ASSERT_EQ(raw.shape, (std::vector<Index>{30, a.draws().dim()}));
  for (Index s = 0; s < 30; ++s)
    for (Index k = 0; k < raw.shape[1]; ++k)
      ASSERT_EQ(raw.values[static_cast<std::size_t>(s * raw.shape[1] + k)], a.draws().draw(s)(k)) << s << "," << k;
  // The statistics file: draws.csv without the parameters.
  const CsvTable stats = read_csv(npy / "draws_stats.csv"), with_parameters = read_csv(csv / "draws.csv");
  ASSERT_EQ(stats.num_rows(), 30);
  EXPECT_TRUE(stats.values == with_parameters.values.leftCols(stats.num_columns()));
  EXPECT_EQ(testing::TempDir::read(npy / "predictions.csv"), testing::TempDir::read(csv / "predictions.csv"));

  write("x.csv", "x\n-1.5\n-0.2\n0.4\n2.5\n");
  for (const fs::path& run : {csv, npy}) {
    const CliRun p = run_cli("predict --model " + run.string() + " --data " + (dir_ / "x.csv").string() + " --out " +
                             (dir_ / (run.filename().string() + "_p.csv")).string());
    EXPECT_EQ(p.exit_code, 0) << p.output;
  }
  EXPECT_EQ(testing::TempDir::read(dir_ / "npy_p.csv"), testing::TempDir::read(dir_ / "csv_p.csv"));
  EXPECT_FALSE(testing::TempDir::read(dir_ / "npy_p.csv").empty());
}

// The other readers of a run's draws take draws.npy as they take draws.csv: `uqnn merge` of --part
// runs (whose merged run writes draws.npy again), `uqnn evaluate --model` of the merged run, and
// --dei-init from it give the same draws and the same files.
TEST_F(DrawsNpyCli, MergeEvaluateAndDeiInitReadAnNpyRunAsTheyReadItsCsvTwin) {
  const std::string data = write_sine_csv(30);
  for (const std::string format : {"csv", "npy"}) {
    for (int k = 1; k <= 2; ++k) {
      const CliRun r = run_cli(fmt::format("fit --quiet --figure none --data {} --method nuts --arch 4 --chains 2 --warmup 20 --draws 12 --seed 3 "
                                           "--part {}/2 --draws-format {} --out {}",
                                           data, k, format, (dir_ / fmt::format("{}_part{}", format, k)).string()));
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    const fs::path merged = dir_ / (format + "_merged");
    CliRun r = run_cli(fmt::format("merge --quiet {} {} --out {}", (dir_ / (format + "_part1")).string(), (dir_ / (format + "_part2")).string(),
                                   merged.string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(fs::exists(merged / ("draws." + format))) << format;
    r = run_cli(fmt::format("evaluate --model {} --data {} --no-figures --out {}", merged.string(), data, (dir_ / (format + "_evaluation")).string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_cli(fmt::format("fit --quiet --figure none --data {} --method dei-nuts --dei-start given --dei-init {} --arch 4 --warmup 5 --draws 5 "
                            "--seed 2 --out {}",
                            data, merged.string(), (dir_ / (format + "_dei")).string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const FittedModel csv = FittedModel::load(dir_ / "csv_merged"), npy = FittedModel::load(dir_ / "npy_merged");
  ASSERT_EQ(csv.draws().num_chains(), 2);
  ASSERT_EQ(npy.draws().num_chains(), 2);
  for (Index c = 0; c < 2; ++c) EXPECT_TRUE(npy.draws().chain(c).values == csv.draws().chain(c).values) << "chain " << c;
  EXPECT_EQ(testing::TempDir::read(dir_ / "npy_merged" / "predictions.csv"), testing::TempDir::read(dir_ / "csv_merged" / "predictions.csv"));
  auto scores = [&](const std::string& format) {
    nlohmann::json m = json(dir_ / (format + "_evaluation") / "metrics.json");
    m.erase("source");  // the run's directory
    return m;
  };
  EXPECT_EQ(scores("npy"), scores("csv"));
  EXPECT_EQ(scores("npy").at("num_draws"), 24);
  EXPECT_EQ(testing::TempDir::read(dir_ / "npy_dei" / "draws.csv"), testing::TempDir::read(dir_ / "csv_dei" / "draws.csv"));
  EXPECT_EQ(json(dir_ / "npy_dei" / "dei_chains.json"), json(dir_ / "csv_dei" / "dei_chains.json"));
}

// auto writes npy above 100,000 parameters; a format that is not one is exit code 2 with the valid names.
TEST_F(DrawsNpyCli, AutoPicksNpyAboveTheThresholdAndAnUnknownFormatIsExit2) {
  EXPECT_EQ(draws_file_name("auto", 100000), "draws.csv");
  EXPECT_EQ(draws_file_name("auto", 100001), "draws.npy");
  EXPECT_EQ(draws_file_name("csv", 10000000), "draws.csv");
  EXPECT_EQ(draws_file_name("npy", 3), "draws.npy");
  const CliRun r = run_cli("demo --quiet --figure none --method sgld --draws 5 --warmup 0 --draws-format parquet --out " + (dir_ / "x").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--draws-format"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("npy"), std::string::npos) << r.output;
}

// SIGTERM mid-run: the run writes the draws made so far, draws.npy's header says how many, and the
// run reads back.
TEST_F(DrawsNpyCli, ASignalLeavesAValidDrawsNpyWithTheDrawsMadeSoFar) {
  const fs::path out = dir_ / "stopped", log = dir_ / "stopped.log";
  const std::string fit = std::string(UQNN_CLI_PATH) + " demo --figure none --method sgld --chain-init random --chains 2 --threads 1 "
                          "--warmup 0 --draws 100000000 --thin 2000 --draws-format npy --out " + out.string() + " 2>" + log.string();
  const std::string script = fit + " & pid=$!; for i in $(seq 600); do grep -q \"init random\" " + log.string() +
                             " && break; sleep 0.1; done; sleep 1; kill -TERM $pid; wait $pid; echo exit=$?; cat " + log.string();
  const std::string output = testing::run_script(script);
  EXPECT_NE(output.find("exit=143"), std::string::npos) << output;
  ASSERT_TRUE(fs::exists(out / "draws.npy")) << output;
  EXPECT_FALSE(fs::exists(atomic_temp_path(out / "draws.npy")));
  const long num_draws = json(out / "metrics.json").at("num_draws").get<long>();
  EXPECT_GT(num_draws, 0);
  const NdArray raw = read_npy(out / "draws.npy");
  ASSERT_EQ(raw.shape.size(), 2u);
  EXPECT_EQ(raw.shape[0], num_draws);
  EXPECT_EQ(read_csv(out / "draws_stats.csv").num_rows(), num_draws);
  const FittedModel f = FittedModel::load(out);
  EXPECT_EQ(f.draws().size(), num_draws);
}

// A damaged draws.npy (cut short, a header that disagrees with the length, another dtype, another
// K, its statistics file missing or of other length) is an error naming the file and what is wrong, exit code 2.
TEST_F(DrawsNpyCli, ADamagedDrawsNpyIsAnErrorNamingTheFileAndExits2) {
  const fs::path good = fit_demo(dir_, "good", "npy");
  write("x.csv", "x\n0.5\n");
  const std::string bytes = testing::TempDir::read(good / "draws.npy");
  const auto header = [&](const std::string& from, const std::string& to) {
    std::string b = bytes;
    const auto at = b.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    b.replace(at, from.size(), to + std::string(from.size() - to.size(), ' '));
    return b;
  };
  const Index K = static_cast<Index>((bytes.size() - NpyRowWriter::kHeaderBytes) / 8 / 30);
  const std::string shape = fmt::format("(30, {})", K);
  // K + 1, or K - 1 where K + 1 has another number of digits: the header keeps its length.
  std::string another_k = fmt::format("(30, {})", K + 1);
  if (another_k.size() != shape.size()) another_k = fmt::format("(30, {})", K - 1);
  struct Case {
    std::string name, contents, expected;
  };
  const std::vector<Case> cases = {
      {"cut short by one value", bytes.substr(0, bytes.size() - 8), "truncated"},
      {"cut in the header", bytes.substr(0, 40), "truncated"},
      {"a header of more rows", header(shape, fmt::format("(31, {})", K)), "truncated"},
      {"a header of fewer rows", header(shape, fmt::format("(29, {})", K)), "damaged"},
      {"float32", header("'<f8'", "'<f4'"), "float64"},
      {"another K", header(shape, another_k), "is not [draws,"},
      {"not a .npy file", "chain,draw\n0,0\n", "not a .npy file"},
  };
  for (const Case& c : cases) {
    const fs::path run = dir_ / "bad";
    fs::remove_all(run);
    fs::copy(good, run, fs::copy_options::recursive);
    std::ofstream(run / "draws.npy", std::ios::binary | std::ios::trunc) << c.contents;
    const CliRun r = run_cli("predict --model " + run.string() + " --data " + (dir_ / "x.csv").string() + " --out " + (dir_ / "p.csv").string());
    EXPECT_EQ(r.exit_code, 2) << c.name << "\n" << r.output;
    EXPECT_NE(r.output.find("draws.npy"), std::string::npos) << c.name << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.name << "\n" << r.output;
  }
  const fs::path run = dir_ / "no_stats";
  fs::copy(good, run, fs::copy_options::recursive);
  fs::remove(run / "draws_stats.csv");
  CliRun r = run_cli("predict --model " + run.string() + " --data " + (dir_ / "x.csv").string() + " --out " + (dir_ / "p.csv").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("draws_stats.csv is missing"), std::string::npos) << r.output;
  const std::string stats = testing::TempDir::read(good / "draws_stats.csv");
  std::ofstream(run / "draws_stats.csv", std::ios::binary) << stats.substr(0, stats.rfind('\n', stats.size() - 2) + 1);
  r = run_cli("predict --model " + run.string() + " --data " + (dir_ / "x.csv").string() + " --out " + (dir_ / "p.csv").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("30 draws, its chains file"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace uqnn
