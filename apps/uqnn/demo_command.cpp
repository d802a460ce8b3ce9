#include <iostream>

#include "commands.hpp"
#include "uqnn/data/synthetic.hpp"

namespace uqnn::cli {

Command add_demo(CLI::App& app) {
  auto* c = app.add_subcommand(
      "demo", "fit the embedded sine case II data of seed 000 (20 points, 1-10-10-1 tanh network, NUTS by default); no input files needed");
  auto cfg = std::make_shared<FitConfig>();
  auto arch = std::make_shared<std::string>("10,10");
  auto noise = std::make_shared<std::string>("0.05");
  cfg->out_dir = "uqnn-demo";
  cfg->progress = true;
  cfg->training.epochs = 6000;
  // The main job: a posterior by NUTS (4 chains, each started from its own MAP fit). Short runs
  // suffice in function space here; `--method map` gives the point estimate alone.
  cfg->method = "nuts";
  cfg->mcmc.warmup = 300;
  cfg->mcmc.draws = 300;
  add_fit_options(*c, *cfg, *arch, *noise);
  return [cfg, arch, noise]() {
    finish_fit_config(*cfg, *arch, *noise);
    // Settings that suit this data set where the general defaults do not: the stochastic-gradient
    // samplers have no automatic step size (1e-6 is stable here; 1e-5 makes SGLD diverge), and the
    // exact Hessian at a MAP of this small-noise posterior is indefinite, so Laplace uses the GGN; and
    // 121 of its 141 directions keep the prior's variance, which wrecks a network evaluated at sampled
    // weights (bands of +-20), so Laplace predicts through the linearised network (GLM predictive).
    const bool stochastic_gradient = cfg->method == "sgld" || cfg->method == "sghmc" || cfg->method == "psgld" ||
                                     cfg->method == "fsgld" || cfg->method == "fsghmc";
    if (stochastic_gradient && cfg->mcmc.step_size == 0.0) cfg->mcmc.step_size = 1e-6;
    if (cfg->method == "laplace" && !cfg->method_options.contains("laplace_curvature")) cfg->method_options["laplace_curvature"] = "ggn";
    if (cfg->method == "laplace" && !cfg->method_options.contains("laplace_predictive")) cfg->method_options["laplace_predictive"] = "glm";
    cfg->data.dataset = sine_case_ii(20, 0.05);
    std::cout << "uqnn demo: y = 4 sin(4x) + 5 sin(-12x + pi/2) + N(0, 0.05^2) on 20 points in [-1,-0.2] U [0.2,1]\n";
    print_fit_report(*cfg, run_fit(*cfg));
    return 0;
  };
}

}  // namespace uqnn::cli
