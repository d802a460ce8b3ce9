// `uqnn compare` scores every method as `uqnn evaluate` scores a fit (services/evaluate.hpp's
// evaluate_fitted) on the same rows as its agreement with a reference: compare.json, compare.md and
// reference.json carry them. The numbers must be those `uqnn evaluate --model` writes for the same
// fit and rows.
#include "uqnn/services/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "uqnn/services/evaluate.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

using testing::TempDir;

nlohmann::json read_compare_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::string read_compare_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CompareConfig compare_config(const std::filesystem::path& data, const std::filesystem::path& out, const std::string& reference) {
  CompareConfig c;
  const nlohmann::json options{{"data", data.string()}, {"out", out.string()}, {"arch", "8"},       {"epochs", 200},
                                {"ens_members", 3},     {"test_fraction", 0.3}, {"quiet", true}, {"figure", "none"},
                                {"idata_extras", "never"}};
  for (const auto& [name, value] : options.items()) c.request.given.push_back({name, value, "--" + name});
  c.methods = {"map", "ens"};
  c.reference = reference;
  return c;
}

TEST(CompareEvaluation, EachMethodCarriesUqnnEvaluatesMetricsOnTheTestRows) {
  TempDir dir;
  std::mt19937_64 engine(12);
  std::normal_distribution<double> z;
  {
    std::ofstream csv(dir.path() / "d.csv");
    csv << "x,y\n";
    for (int i = 0; i < 60; ++i) {
      const double x = -2 + 4.0 * i / 59;
      csv << x << ',' << std::sin(2 * x) + (0.1 + 0.2 * std::abs(x)) * z(engine) << '\n';
    }
  }
  // A first comparison gives the reference run directory of the second (a long NUTS run in use).
  run_compare(compare_config(dir.path() / "d.csv", dir.path() / "first", ""));
  const std::string first_md = read_compare_text(dir.path() / "first" / "compare.md");
  EXPECT_NE(first_md.find("| method | RMSE | NLL | CRPS | coverage 90% | coverage 95% |"), std::string::npos) << first_md;
  const std::filesystem::path out = dir.path() / "second";
  const CompareReport report = run_compare(compare_config(dir.path() / "d.csv", out, (dir.path() / "first" / "ens").string()));
  const nlohmann::json table = read_compare_json(out / "compare.json");

  for (const std::string method : {"map", "ens"}) {
    // The test rows of the fit, from its predictions.csv, scored by `uqnn evaluate --model`.
    std::ifstream in(out / method / "predictions.csv");
    std::string line;
    std::getline(in, line);
    std::ofstream test(dir.path() / (method + "_test.csv"));
    test << "x,y\n";
    Index rows = 0;
    while (std::getline(in, line))
      if (line.substr(line.rfind(',') + 1) == "test") {
        std::stringstream fields(line);
        std::string x, y;
        std::getline(fields, x, ',');
        std::getline(fields, y, ',');
        test << x << ',' << y << '\n';
        ++rows;
      }
    test.close();
    ASSERT_EQ(rows, 18);
    EvaluateConfig e;
    e.model_dir = out / method;
    e.data = dir.path() / (method + "_test.csv");
    e.out = dir.path() / (method + "_evaluation");
    e.figures = false;
    const nlohmann::json expected = run_evaluate(e).metrics;
    const nlohmann::json& got = table.at(method).at("evaluation");
    EXPECT_EQ(got.at("n").get<Index>(), rows) << method;
    EXPECT_EQ(got.at("rows"), "test");
    for (const char* key : {"rmse", "mae", "nll", "crps"})
      EXPECT_NEAR(got.at(key).get<double>(), expected.at(key).get<double>(), 1e-12 * (1 + std::abs(expected.at(key).get<double>())))
          << method << ' ' << key;
    for (const char* level : {"0.9", "0.95"})
      EXPECT_DOUBLE_EQ(got.at("intervals").at(level).at("coverage").get<double>(),
                       expected.at("intervals").at(level).at("coverage").get<double>())
          << method << ' ' << level;
    // reference.json: the agreement and the evaluation side by side.
    const nlohmann::json reference = read_compare_json(out / "reference.json").at("methods").at(method);
    EXPECT_TRUE(reference.contains("wasserstein1")) << method;
    EXPECT_DOUBLE_EQ(reference.at("evaluation").at("crps").get<double>(), expected.at("crps").get<double>()) << method;
  }
  const std::string md = read_compare_text(out / "compare.md");
  EXPECT_NE(md.find("| method | mean 1-Wasserstein | median sd ratio | mean sd ratio | RMSE | NLL | CRPS | coverage 90% | coverage 95% |"),
            std::string::npos)
      << md;
  EXPECT_EQ(report.failed.size(), 0u);
}

}  // namespace
}  // namespace uqnn
