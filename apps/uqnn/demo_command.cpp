#include <iostream>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "uqnn/data/synthetic.hpp"

namespace uqnn::cli {

namespace {

/// The demo's own defaults: the main job is a posterior by NUTS (4 chains, each started from its
/// own MAP fit); short runs suffice in function space here. Where the general defaults do not suit
/// this data set: the stochastic-gradient samplers have no automatic step size (1e-6 is stable here;
/// 1e-5 makes SGLD diverge).
nlohmann::json demo_preset(const std::string& method) {
  nlohmann::json preset = {{"method", "nuts"}, {"out", "uqnn-demo"}, {"noise", 0.05}, {"epochs", 6000}, {"warmup", 300}, {"draws", 300}};
  if (method == "sgld" || method == "sghmc" || method == "psgld" || method == "fsgld" || method == "fsghmc") preset["step_size"] = 1e-6;
  return preset;
}

}  // namespace

Command add_demo(CLI::App& app) {
  auto* c = app.add_subcommand(
      "demo", "fit the embedded sine case II data of Thiagarajan et al. (20 points, 1-10-10-1 tanh network, NUTS by default); no input files needed");
  std::set<std::string> no_data;
  for (const OptionGroup& g : all_option_groups())
    if (g.name == "data")
      for (const auto& o : g.options) no_data.insert(o.name);
  const auto flags = FitFlags::add(*c, no_data);
  return [c, flags]() {
    if (flags->help_requested()) {
      flags->print_help(std::cout, *c);
      return 0;
    }
    // The method first (given, or the demo's NUTS), then the demo's defaults for it.
    const std::string method = make_fit_config(flags->request(demo_preset("nuts"))).method;
    FitConfig cfg = make_fit_config(flags->request(demo_preset(method)));
    cfg.data.dataset = sine_case_ii(20, 0.05);
    std::cout << "uqnn demo: y = 4 sin(4x) + 5 sin(-12x + pi/2) + N(0, 0.05^2) on 20 points in [-1,-0.2] U [0.2,1]\n";
    return print_fit_report(cfg, run_fit(cfg));
  };
}

}  // namespace uqnn::cli
