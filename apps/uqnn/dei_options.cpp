// Flags of `uqnn fit --method dei-nuts` (seed 003 DEI-MCMC; the runner is
// src/services/method_dei.cpp). Values go to FitConfig::method_options only when given. For
// dei-nuts the shared flags --warmup, --epochs and --weight-decay default to seed 003's values
// (100 warmup steps, App. C.4; 5000 epochs and weight decay 1e-2, App. D) unless given.
#include "commands.hpp"

namespace uqnn::cli {

void add_dei_options(CLI::App& c, FitConfig& cfg) {
  c.add_option_function<Index>("--members", [&cfg](const Index& v) { cfg.method_options["members"] = v; },
                               "dei-nuts: ensemble members M = NUTS chains")
      ->default_str("12");
  c.add_option_function<std::string>("--dei-start", [&cfg](const std::string& v) { cfg.method_options["dei_start"] = v; },
                                     "dei-nuts: chain starts: ensemble (DEI-MCMC) | prior (cold start) | given (--dei-init)")
      ->check(CLI::IsMember({"ensemble", "prior", "given"}))
      ->default_str("ensemble");
  c.add_option_function<std::string>("--dei-init", [&cfg](const std::string& v) { cfg.method_options["dei_init"] = v; },
                                     "dei-nuts with --dei-start given: networks to start from: the output directory of an "
                                     "earlier fit on the same data and model (e.g. --method map or ens) or its draws.csv; "
                                     "one chain per network, or --members chains cycling through them");
  c.add_option_function<Index>("--lppd-window", [&cfg](const Index& v) { cfg.method_options["lppd_window"] = v; },
                               "dei-nuts: window of the LPPD stopping rule (seed 003 eq. 9)")
      ->default_str("100");
  c.add_option_function<double>("--lppd-epsilon", [&cfg](const double& v) { cfg.method_options["lppd_epsilon"] = v; },
                                "dei-nuts: epsilon of the LPPD stopping rule (seed 003 eq. 9)")
      ->default_str("0.001");
  c.add_option_function<Index>("--lppd-min-draws", [&cfg](const Index& v) { cfg.method_options["lppd_min_draws"] = v; },
                               "dei-nuts: with --stop-converged, never stop a chain before this many draws")
      ->default_str("0");
  c.add_flag_function("--stop-converged", [&cfg](std::int64_t n) { cfg.method_options["stop_converged"] = n > 0; },
                      "dei-nuts: end a chain once its held-out LPPD has converged (eq. 9)");
  c.add_flag_function("--drop-dying", [&cfg](std::int64_t n) { cfg.method_options["drop_dying"] = n > 0; },
                      "dei-nuts: drop chains whose held-out RMSE is worse than a linear model's (always counted)");
  c.parse_complete_callback([&c, &cfg]() {
    if (cfg.method != "dei-nuts") return;
    if (c.count("--warmup") == 0) cfg.mcmc.warmup = 100;
    if (c.count("--epochs") == 0) cfg.training.epochs = 5000;
    if (c.count("--weight-decay") == 0) cfg.training.optimizer.weight_decay = 1e-2;
  });
}

}  // namespace uqnn::cli
