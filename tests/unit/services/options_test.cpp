// The option declarations (services/options.hpp) and the doors generated from them: every option
// round-trips from its CLI text and from TOML to the same value, defaults are the same through every
// door, and every bad value is an InputError that names the option as the user wrote it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "unit/cli/cli_fixture.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/hybrid/dei_mcmc.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliTest;
using testing::run_cli;

/// A valid value of `o` that is not its default: its CLI text and its TOML text.
struct Sample {
  std::string cli, toml;
};

Sample non_default(const OptionSpec& o, const fs::path& existing_file) {
  const auto number = [&o](bool integer) {
    double v = o.minimum ? *o.minimum + (integer ? 1.0 : 0.5) : 2.0;
    if (o.maximum && v >= *o.maximum) v = o.minimum ? 0.5 * (*o.minimum + *o.maximum) : *o.maximum - 0.5;
    if (!o.default_value.is_null() && o.default_value.is_number() && v == o.default_value.get<double>()) v = integer ? v + 1 : v * 0.75;
    return v;
  };
  switch (o.type) {
    case OptionType::Flag: {
      const bool v = !o.default_value.get<bool>();
      return {v ? "true" : "false", v ? "true" : "false"};
    }
    case OptionType::Integer: {
      const auto v = static_cast<long long>(number(true));
      return {std::to_string(v), std::to_string(v)};
    }
    case OptionType::Real: {
      const std::string v = fmt::format("{}", number(false));
      return {v, v.find_first_of(".e") == std::string::npos ? v + ".0" : v};
    }
    case OptionType::Choice:
      for (const auto& c : o.choices)
        if (c != o.default_value.get<std::string>()) return {c, "\"" + c + "\""};
      return {o.choices.front(), "\"" + o.choices.front() + "\""};
    case OptionType::IntegerList: return {"7,5", "[7, 5]"};
    case OptionType::TextList: return {"a,b", "[\"a\", \"b\"]"};
    case OptionType::Path:
    case OptionType::Text: return {existing_file.string(), "\"" + existing_file.string() + "\""};
  }
  return {};
}

/// A registered method that reads option `name` (fit-level options: "map").
/// A method that reads option `name` through the group called `group` (mclmc and mile declare the
/// same options in their own groups, with their own defaults); "map" for the fit's own groups.
std::string method_reading(const std::string& name, const std::string& group) {
  for (const MethodSpec* m : registered_methods())
    for (const OptionGroup* g : m->groups)
      if (g->name == group && g->find(name)) return m->name;
  return "map";
}

class Options : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("uqnn_options_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "file.csv") << "x,y\n1,2\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(OptionRegistry, EveryMethodSaysWhatItIsAndAnOptionNameHasOneType) {
  ASSERT_FALSE(registered_methods().empty());
  for (const MethodSpec* m : registered_methods()) {
    EXPECT_FALSE(m->summary.empty()) << m->name;
    EXPECT_FALSE(m->reference.empty()) << m->name;
    EXPECT_TRUE(m->run || m->sampler) << m->name;
    // A method whose run keeps draws of chains or samples says how many (the memory estimate).
    EXPECT_EQ(static_cast<bool>(m->kept_draws), m->family != MethodFamily::PointEstimate) << m->name;
    // Its demo preset names only options it reads.
    std::set<std::string> reads;
    for (const OptionGroup& g : fit_option_groups(m->name))
      for (const OptionSpec& o : g.options) reads.insert(o.name);
    for (const auto& [name, value] : m->demo_preset.items()) EXPECT_TRUE(reads.count(name)) << m->name << " demo preset: " << name;
  }
  std::map<std::string, OptionType> type_of;
  std::size_t count = 0;
  for (const OptionGroup& g : all_option_groups())
    for (const OptionSpec& o : g.options) {
      ++count;
      EXPECT_FALSE(o.help.empty()) << o.name;
      const auto [it, fresh] = type_of.emplace(o.name, o.type);
      // One CLI flag per name: every group declaring it must agree on its type.
      EXPECT_TRUE(fresh || it->second == o.type || (o.type == OptionType::Choice) == (it->second == OptionType::Choice))
          << o.name << " has two types";
    }
  EXPECT_GT(count, 120u);
  EXPECT_THROW(find_method("no-such-method"), InputError);
}

TEST_F(Options, EveryOptionRoundTripsFromItsCliTextAndFromToml) {
  std::size_t checked = 0;
  for (const OptionGroup& g : all_option_groups())
    for (const OptionSpec& o : g.options) {
      if (o.name == "method") continue;  // the method is chosen below
      SCOPED_TRACE(o.name);
      // --part's text is "k/n", checked against the method (tests/unit/run/scale_out_test.cpp).
      // Texts of a set form get a value of that form.
      const Sample v = o.name == "part"               ? Sample{"1/2", "\"1/2\""}
                       : o.name == "checkpoint_every" ? Sample{"10m", "\"10m\""}
                                                      : non_default(o, dir_ / "file.csv");
      const std::string method = o.name == "part" ? "nuts" : method_reading(o.name, g.name);  // map runs whole
      const nlohmann::json from_cli = o.parse_text(v.cli, o.flag());
      // The CLI door: text -> value -> config.
      FitRequest cli;
      cli.given = {{"method", method, "--method"}, {o.name, from_cli, o.flag()}};
      // An option read only with another's value (--classes with --likelihood categorical) gets it.
      std::string also;
      if (!o.only_when_option.empty()) {
        cli.given.push_back({o.only_when_option, o.only_when_values.front(), "--" + o.only_when_option});
        also = o.only_when_option + " = \"" + o.only_when_values.front() + "\"\n";
      }
      // A range's lower end (--vi-rho-init-lower) below its upper end.
      if (!o.at_most_option.empty()) {
        cli.given.push_back({o.at_most_option, 1e9, "--" + o.at_most_option});
        also += o.at_most_option + " = 1e9\n";
      }
      // Calibration rows and a conformal method come together, and RAPS sets need a classifier.
      bool has_companion = false;
      const auto add_companion = [&](const std::string& name, const nlohmann::json& value) {
        cli.given.push_back({name, value, "--" + name});
        also += name + " = " + value.dump() + "\n";
        has_companion = true;
      };
      if (o.name == "calibration_fraction" || o.name == "calibration_indices") add_companion("conformal", "split");
      if (o.name == "conformal" || o.only_when_option == "conformal") add_companion("calibration_fraction", 0.2);
      if (o.only_when_option == "conformal" && o.only_when_values.front() == "raps") {
        add_companion("likelihood", "categorical");
        add_companion("classes", 3);
      }
      const FitConfig a = make_fit_config(cli);
      // The TOML door: the same option in a file.
      const fs::path toml = dir_ / "fit.toml";
      std::ofstream(toml) << "method = \"" << method << "\"\n" << also << o.name << " = " << v.toml << "\n";
      FitRequest file;
      file.given = read_toml_options(toml);
      const FitConfig b = make_fit_config(file);
      const auto& sa = a.record.at("settings").at(o.name);
      const auto& sb = b.record.at("settings").at(o.name);
      EXPECT_EQ(sa, sb) << o.name << ": CLI '" << v.cli << "' vs TOML '" << v.toml << "'";
      // ... and it is not the default, so the option really reached the config.
      nlohmann::json defaults_of = {{"method", method}};
      if (!o.only_when_option.empty()) defaults_of[o.only_when_option] = o.only_when_values.front();
      if (!o.at_most_option.empty()) defaults_of[o.at_most_option] = 1e9;
      // (The recorded default is the declared one, OptionDefaults below; a companion alone may not be a valid fit.)
      EXPECT_NE(sa, has_companion ? o.default_value : fit_config_from_options(defaults_of).record.at("settings").at(o.name))
          << o.name;
      ++checked;
    }
  EXPECT_GT(checked, 120u);
}

TEST(OptionDefaults, AreTheSameThroughEveryDoorAndMatchTheLibrary) {
  for (const std::string& method : method_names()) {
    const FitConfig cfg = fit_config_from_options({{"method", method}});
    for (const OptionGroup& g : fit_option_groups(method))
      for (const OptionSpec& o : g.options)
        if (o.name != "method") { EXPECT_EQ(cfg.record.at("settings").at(o.name), o.default_value) << method << " " << o.name; }
  }
  // Defaults come from the library's own structs: DEI-MCMC trains seed 003's ensemble.
  const FitConfig dei = fit_config_from_options({{"method", "dei-nuts"}});
  const EnsembleParams e = DeiMcmcParams::default_ensemble();
  EXPECT_EQ(dei.training.epochs, e.training.epochs);
  EXPECT_EQ(dei.training.optimizer.weight_decay, e.training.optimizer.weight_decay);
  EXPECT_EQ(dei.method_settings.at("warmup"), DeiMcmcParams{}.warmup);
  EXPECT_EQ(fit_config_from_options({{"method", "map"}}).training.epochs, TrainParams{}.epochs);
  EXPECT_EQ(fit_config_from_options({{"method", "ens"}}).method_settings.at("ens_members"), EnsembleParams{}.members);
}

TEST_F(Options, BadValuesAreErrorsNamingTheOptionAndItsValidValues) {
  const auto message = [](const nlohmann::json& options) {
    try {
      fit_config_from_options(options);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"method", "ens"}, {"ens_members", 0}}).find("ens_members: 0 is invalid: it must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(message({{"method", "nuts"}, {"metric", "full"}}).find("one of: diag, dense, fisher-diag, low-rank, unit"), std::string::npos);
  EXPECT_NE(message({{"method", "nuts"}, {"num_steps", 5}}).find("num_steps: does not apply to --method nuts; it is an option of hmc"),
            std::string::npos);
  EXPECT_NE(message({{"method", "map"}, {"no_such", 1}}).find("no_such: there is no such option"), std::string::npos);
  EXPECT_NE(message({{"method", "slice-of-cake"}}).find("--method 'slice-of-cake' is not known"), std::string::npos);
  EXPECT_NE(message({{"method", "map"}, {"noise", -1.0}}).find("noise: -1.0 is invalid: it must be a finite number > 0"),
            std::string::npos);
  EXPECT_NE(message({{"method", "map"}, {"epochs", 2.5}}).find("epochs: 2.5 is invalid: it must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(message({{"method", "map"}, {"arch", "10,x"}}).find("arch: '10,x' is invalid"), std::string::npos);
  // TOML: the file, line and column of the value.
  std::ofstream(dir_ / "bad.toml") << "method = \"ens\"\n\nens_members = \"many\"\n";
  FitRequest r;
  r.given = read_toml_options(dir_ / "bad.toml");
  try {
    make_fit_config(r);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml:3:15: ens_members: \"many\" is invalid: it must be an integer >= 1"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(dir_ / "syntax.toml") << "method = \n";
  EXPECT_THROW(read_toml_options(dir_ / "syntax.toml"), InputError);
}

class OptionsCli : public CliTest {};

TEST_F(OptionsCli, HelpIsGroupedAndPerMethod) {
  const auto all = run_cli("fit --help");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  for (const char* heading : {"Data:", "Model:", "Likelihood and prior:", "Training", "NUTS (nuts):", "SWAG (swag):"})
    EXPECT_NE(all.output.find(heading), std::string::npos) << heading << "\n" << all.output;
  const auto nuts = run_cli("fit --method nuts --help");
  EXPECT_EQ(nuts.exit_code, 0);
  EXPECT_NE(nuts.output.find("--max-depth INT"), std::string::npos) << nuts.output;
  EXPECT_NE(nuts.output.find("--warmup INT"), std::string::npos);
  EXPECT_EQ(nuts.output.find("--ens-members"), std::string::npos) << "nuts does not read --ens-members";
  EXPECT_EQ(nuts.output.find("--num-steps"), std::string::npos);
}

TEST_F(OptionsCli, UsageErrorsExitTwoAndConfigFilesAndModelJsonRecordTheSettings) {
  EXPECT_EQ(run_cli("fit --no-such-flag").exit_code, 2);
  EXPECT_EQ(run_cli("fit --method nuts --max-depth 0").exit_code, 2);
  write("d.csv", "x,y\n0,0\n1,1\n2,4\n3,9\n4,16\n");
  write("fit.toml", "[training]\nepochs = 30\n[model]\narch = [3]\n");
  const auto ok = run_cli("fit --data " + (dir_ / "d.csv").string() + " --config " + (dir_ / "fit.toml").string() +
                          " --epochs 40 --figure none --quiet --out " + (dir_ / "out").string());
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const auto model = json(dir_ / "out" / "model.json");
  const auto& settings = model.at("settings").at("settings");
  EXPECT_EQ(settings.at("epochs"), 40) << "the command line wins over the config file";
  EXPECT_EQ(settings.at("arch"), nlohmann::json::array({3}));
  EXPECT_EQ(settings.at("lr"), 0.01);
  EXPECT_NE(model.at("settings").at("invocation").at("command").get<std::string>().find("--epochs 40"), std::string::npos);
  EXPECT_NE(model.at("settings").at("invocation").at("config").get<std::string>().find("fit.toml"), std::string::npos);
}

}  // namespace
}  // namespace uqnn
