// Flags of `uqnn fit --method vi-hmc` (seed 000). Each writes into FitConfig::method_options only
// when given, so the defaults live in one place (ViHmcParams, include/uqnn/hybrid/vi_hmc.hpp).
#include "commands.hpp"

namespace uqnn::cli {

void add_vi_hmc_options(CLI::App& c, FitConfig& cfg) {
  const auto set = [&cfg](const std::string& key) {
    return [&cfg, key](const std::string& value) { cfg.method_options[key] = value; };
  };
  c.add_option_function<double>("--tau", [&cfg](const double& v) { cfg.method_options["tau"] = v; },
                                 "vi-hmc: proportion of the first-order output variance kept (seed 000 eq. 18), in (0, 1]")
      ->default_str("0.9");
  c.add_option_function<std::string>("--sampler", set("sampler"), "vi-hmc: kernel on the sensitive subset: hmc | nuts")->default_str("hmc");
  c.add_option_function<std::string>("--subset", set("subset"), "vi-hmc: sensitive (the method) | random (same size, the control of Appendix E)")
      ->default_str("sensitive");
  c.add_option_function<std::string>("--path-length", set("path_length"),
                                     "vi-hmc hmc: paper (L = pi s / (2 eps), Appendix C) | fixed (--num-steps)")
      ->default_str("paper");
  c.add_option_function<std::string>("--spread", set("spread"), "vi-hmc: s = max | median of the VI spreads of the sampled parameters")->default_str("max");
  c.add_option_function<std::string>("--spread-measure", set("spread_measure"),
                                     "vi-hmc: sd (quarter period of the harmonic flow; default) | variance (the paper's code)")
      ->default_str("sd");
  c.add_option_function<double>("--init-spread", [&cfg](const double& v) { cfg.method_options["init_spread"] = v; },
                                "vi-hmc: chains start at mu + k sigma N(0, 1) of the VI posterior (0 = at the means)")
      ->default_str("0");
  c.add_option_function<int>("--max-leapfrog-steps", [&cfg](const int& v) { cfg.method_options["max_leapfrog_steps"] = v; },
                             "vi-hmc: cap of the path-length rule")
      ->default_str("1000");
}

}  // namespace uqnn::cli
