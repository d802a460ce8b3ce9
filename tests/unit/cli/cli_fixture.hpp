#pragma once
// The `uqnn` executable run as a user would (a shell command line), and a test fixture with a fresh
// directory per test: shared by the CLI tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "uqnn/io/csv.hpp"

namespace uqnn::testing {

struct CliRun {
  int exit_code;
  std::string output;  // stdout and stderr
};

/// Runs a shell command line and collects its output (stdout and stderr) and exit code.
inline CliRun run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe)) output += buffer.data();
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// Runs `uqnn ARGS` (UQNN_CLI_PATH, set by CMake) and collects its output and exit code.
inline CliRun run_cli(const std::string& args) { return run_command(std::string(UQNN_CLI_PATH) + " " + args); }

/// Reads a predictions CSV of `uqnn fit` or `uqnn predict`: it ends with a text column `split`, so
/// the numeric columns before it are parsed.
inline CsvTable read_predictions(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line)) text += line.substr(0, line.rfind(',')) + "\n";
  return parse_csv(text, path.string());
}

/// Runs `script` with `sh -c` (it must not hold single quotes): for tests that start `uqnn` in the
/// background and send it signals.
inline std::string run_script(const std::string& script) { return run_command("sh -c '" + script + "'").output; }

/// A fresh temporary directory `dir_` per test (named after the process and the test), removed after.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    // One directory level: a parameterised test's names hold '/' ("Methods/ClassificationCliMethod",
    // "FitsMushroom.../vi"), which would leave the parents behind.
    std::string name = "uqnn_cli_" + std::to_string(::getpid()) + "_" + test->test_suite_name() + "_" + test->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  /// Writes sine.csv: y = sin(3x) + 0.1 sin(37 i) (deterministic noise) at `rows` points of [-1, 1];
  /// returns its path.
  std::string write_sine_csv(int rows) {
    std::string csv = "x,y\n";
    for (int i = 0; i < rows; ++i) {
      const double x = -1.0 + 2.0 * i / (rows - 1.0);
      csv += fmt::format("{},{}\n", x, std::sin(3.0 * x) + 0.1 * std::sin(37.0 * i));
    }
    write("sine.csv", csv);
    return (dir_ / "sine.csv").string();
  }
  static nlohmann::json json(const std::filesystem::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
  }
  std::filesystem::path dir_;
};

}  // namespace uqnn::testing
