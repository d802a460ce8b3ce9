#include <iostream>

#include "commands.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/services/compare.hpp"

namespace uqnn::cli {

Command add_compare(CLI::App& app) {
  auto* c = app.add_subcommand("compare", "fit several methods on one data set; write their bands side by side and a metrics table");
  c->set_config("--config", "", "TOML file with any of these options (keys = long option names without --)");
  auto cfg = std::make_shared<CompareConfig>();
  auto methods = std::make_shared<std::vector<std::string>>();
  auto arch = std::make_shared<std::string>("10,10");
  auto noise = std::make_shared<std::string>();
  auto targets = std::make_shared<std::vector<std::string>>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto& base = cfg->base;
  base.out_dir = "uqnn-compare";
  base.progress = true;
  c->add_option("--data", base.data.path, "CSV file with a header row")->required()->check(CLI::ExistingFile);
  c->add_option("--methods", *methods, "methods to compare, comma separated (e.g. map,ens,vi,laplace,swag)")->required()->delimiter(',');
  c->add_option("--target", *targets, "target column(s) (default: the last column)");
  c->add_option("--inputs", *inputs, "input columns (default: all but the targets)")->delimiter(',');
  c->add_flag("!--no-standardize", base.data.standardize, "do not standardise inputs and targets");
  c->add_option("--valid-fraction", base.data.validation_fraction, "fraction of rows held out for validation")->capture_default_str();
  c->add_option("--test-fraction", base.data.test_fraction, "fraction of rows held out for testing")->capture_default_str();
  c->add_option("--split-seed", base.data.split_seed, "seed of the random split")->capture_default_str();
  add_fit_options(*c, base, *arch, *noise);
  return [cfg, methods, arch, noise, targets, inputs]() {
    finish_fit_config(cfg->base, *arch, *noise);
    cfg->base.data.targets = *targets;
    cfg->base.data.inputs = *inputs;
    cfg->methods = *methods;
    const CompareReport report = run_compare(*cfg);
    std::cout << "uqnn compare:\n";
    for (const auto& [method, row] : report.table.items()) {
      std::cout << "  " << method << ": " << row.at("num_draws") << " draws, " << row.at("seconds") << " s";
      if (row.contains("splits") && row.at("splits").contains("train")) {
        const auto& t = row.at("splits").at("train");
        std::cout << ", train rmse " << t.value("rmse", 0.0) << " nll " << t.value("nll", 0.0);
      }
      std::cout << '\n';
    }
    std::cout << "  wrote:";
    for (const auto& f : report.files) std::cout << ' ' << f.string();
    std::cout << '\n';
    return 0;
  };
}

}  // namespace uqnn::cli
