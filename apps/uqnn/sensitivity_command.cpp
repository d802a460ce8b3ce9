// `uqnn sensitivity`: VI (Bayes by Backprop) and the parameter sensitivities of seed 000 (eq. 17):
// writes sensitivity.csv/.json, sensitivity.png (histogram to the 99th percentile, variance
// captured vs number of parameters) and sensitivity_layers.png, plus the VI fit's usual outputs.
#include <iostream>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "uqnn/core/error.hpp"

namespace uqnn::cli {

Command add_sensitivity(CLI::App& app) {
  auto* c = app.add_subcommand("sensitivity", "fit VI and write the parameter sensitivities S_i^2 (Thiagarajan et al. eq. 17), N-hat per tau, and their figures");
  const auto flags = FitFlags::add(*c, {"method", "sensitivity_only"});
  return [c, flags]() {
    if (flags->help_requested()) {
      flags->print_help(std::cout, *c);
      return 0;
    }
    const FitConfig cfg = make_fit_config(
        flags->request({{"method", "vi-hmc"}, {"sensitivity_only", true}, {"out", "uqnn-sensitivity"}}));
    if (cfg.data.path.empty()) throw InputError("--data is required: a CSV file with a header row");
    return print_fit_report(cfg, run_fit(cfg));
  };
}

}  // namespace uqnn::cli
