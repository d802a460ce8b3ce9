// `uqnn sensitivity`: VI (Bayes by Backprop) and the parameter sensitivities of seed 000 (eq. 17):
// writes sensitivity.csv/.json, sensitivity.png (histogram to the 99th percentile, variance
// captured vs number of parameters) and sensitivity_layers.png, plus the VI fit's usual outputs.
#include "commands.hpp"

namespace uqnn::cli {

Command add_sensitivity(CLI::App& app) {
  auto* c = app.add_subcommand("sensitivity", "fit VI and write the parameter sensitivities S_i^2 (seed 000 eq. 17), N-hat per tau, and their figures");
  c->set_config("--config", "", "TOML file with any of these options");
  auto cfg = std::make_shared<FitConfig>();
  auto arch = std::make_shared<std::string>("10,10");
  auto noise = std::make_shared<std::string>();
  auto targets = std::make_shared<std::vector<std::string>>();
  cfg->progress = true;
  cfg->out_dir = "uqnn-sensitivity";
  c->add_option("--data", cfg->data.path, "CSV file with a header row")->required()->check(CLI::ExistingFile);
  c->add_option("--target", *targets, "target column(s) (default: the last column)");
  c->add_flag("!--no-standardize", cfg->data.standardize, "do not standardise inputs and targets");
  add_fit_options(*c, *cfg, *arch, *noise);
  return [cfg, arch, noise, targets]() {
    finish_fit_config(*cfg, *arch, *noise);
    cfg->data.targets = *targets;
    cfg->method = "vi-hmc";
    cfg->method_options["sensitivity_only"] = true;
    print_fit_report(*cfg, run_fit(*cfg));
    return 0;
  };
}

}  // namespace uqnn::cli
