// Reloading a run directory (what `uqnn predict` and uqnn.load read): the training input range is
// read back, and a model.json with a field missing or malformed is an InputError naming the file
// and field, never another exception (fuzzing found `standardizer` missing and `input_dim` 0 ending in
// std::terminate).
#include "uqnn/services/fitted_model.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "uqnn/core/error.hpp"
#include "uqnn/data/synthetic.hpp"
#include "uqnn/services/fit.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

using testing::TempDir;

/// A small MAP run written into `dir`/run; returns its model.json.
nlohmann::json fit_into(const TempDir& dir) {
  const nlohmann::json options{{"method", "map"}, {"epochs", 20}, {"arch", "4"}, {"quiet", true},
                                {"figure", "none"}, {"out", (dir.path() / "run").string()}};
  FitRequest r;
  for (const auto& [name, value] : options.items()) r.given.push_back({name, value, "--" + name});
  FitConfig c = make_fit_config(r);
  c.data.dataset = sine_case_ii(20);
  run_fit(c);
  std::ifstream in(dir.path() / "run" / "model.json");
  return nlohmann::json::parse(in);
}

std::string load_error(const TempDir& dir, const nlohmann::json& model_json) {
  std::ofstream(dir.path() / "run" / "model.json") << model_json.dump();
  try {
    FittedModel::load(dir.path() / "run");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(FittedModel, ReadsTheTrainingInputRange) {
  TempDir dir;
  fit_into(dir);
  const FittedModel fitted = FittedModel::load(dir.path() / "run");
  const Dataset data = sine_case_ii(20);
  ASSERT_EQ(fitted.input_min().size(), 1u);
  EXPECT_EQ(fitted.input_min()[0], data.inputs.row(0).minCoeff());
  EXPECT_EQ(fitted.input_max()[0], data.inputs.row(0).maxCoeff());
}

TEST(FittedModel, MissingOrMalformedFieldsAreInputErrors) {
  TempDir dir;
  const nlohmann::json good = fit_into(dir);
  nlohmann::json j = good;
  j.erase("standardizer");
  EXPECT_NE(load_error(dir, j).find("model.json: field 'standardizer' is missing"), std::string::npos) << load_error(dir, j);
  j = good;
  j["input_range"]["min"] = {0.0, 1.0};
  EXPECT_NE(load_error(dir, j).find("field 'input_range' has 2 / 1 entries for 1 inputs"), std::string::npos) << load_error(dir, j);
  j = good;
  j["input_range"] = {{"max", {1.0}}};
  EXPECT_NE(load_error(dir, j).find("model.json: "), std::string::npos);
  j = good;
  j["format"] = nlohmann::json::object();  // fuzzing found this ending in std::terminate (a json type_error)
  EXPECT_NE(load_error(dir, j).find("model.json: field 'format' must be \"uqnn-fit\""), std::string::npos) << load_error(dir, j);
  j = good;
  j["model"]["input_dim"] = 0;  // a range check of the network (fuzzing found this ending in std::terminate)
  EXPECT_NE(load_error(dir, j).find("model.json: invalid model description: mlp input_dim must be >= 1"), std::string::npos)
      << load_error(dir, j);
  j = good;
  j["likelihood"] = {{"kind", "gaussian"}, {"sigma", -1.0}};
  EXPECT_NE(load_error(dir, j).find("model.json: invalid likelihood description: likelihood sigma must be"), std::string::npos)
      << load_error(dir, j);
  j = good;
  j.erase("input_range");  // a run written before the range was recorded
  EXPECT_EQ(load_error(dir, j), "");
}

}  // namespace
}  // namespace uqnn
