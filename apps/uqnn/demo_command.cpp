#include <iostream>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "uqnn/services/demo_data.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn::cli {

namespace {

/// The demo's data: noise sd 0.3 on a curve of amplitude 9. With Thiagarajan et al.'s 0.05 the
/// posterior is so stiff that 300 draws of NUTS do not mix within the chains (lp__ drifts, chain-wise
/// R-hat 1.1-1.3), and even 1000 draws leave lp__'s bulk ESS below 100 per chain (docs/usage.md).
constexpr double kDemoNoise = 0.3;

/// The demo's own defaults: the main job is a posterior by NUTS (4 chains, each started from its
/// own MAP fit) under the fan-in prior (weights N(0, 1 / fan_in), Neal 1996): with N(0, 1) on every
/// weight the units of the second and third layers have funnels (a unit whose outgoing weight is
/// near 0 leaves its incoming weights to the prior) where NUTS diverges a few times per run. Each
/// method adds what it needs on these 20 points (MethodSpec::demo_preset, in its own file); a null
/// value there removes a shared setting.
nlohmann::json demo_preset(const std::string& method) {
  nlohmann::json preset = {{"method", "nuts"}, {"out", "uqnn-demo"}, {"noise", kDemoNoise}, {"prior", "fan-in"}};
  for (const auto& [name, value] : find_method(method).demo_preset.items()) {
    if (value.is_null())
      preset.erase(name);
    else
      preset[name] = value;
  }
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
    cfg.data.dataset = demo_dataset(20, kDemoNoise);
    std::cout << "uqnn demo: y = 4 sin(4x) + 5 sin(-12x + pi/2) + N(0, 0.3^2) on 20 points in [-1,-0.2] U [0.2,1]\n";
    return print_fit_report(cfg, run_fit(cfg));
  };
}

}  // namespace uqnn::cli
