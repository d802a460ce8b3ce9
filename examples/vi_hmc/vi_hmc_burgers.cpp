// Seed 000 section 4.2.1 / Appendix E: Bayesian DeepONet for Burgers' equation, VI then VI-HMC at
// tau in {0.9, 0.75, 0.5, 0.3} and full-space HMC. Writes into OUT (default vi-hmc-burgers/):
// sensitivity report and figures, best_worst.png (Fig. 10), results.md (Tables 2 / E.5 and the
// relative L2 errors), trained_network.bin (MAP and VI parameters, ~4 MB).
// Usage: vi_hmc_burgers [OUT] [--quick] [--functions N] [--map-epochs N] [--vi-epochs N]
//                       [--batch FUNCTIONS POINTS] [--map-lr LR] [--prior-sd SD]
//                       [--reuse-training] [--no-full-hmc] [--stop-after-training]
// Default: ~32 min wall / ~17 min CPU on 2 loaded cores (README, "Burgers DeepONet").
#include <CLI/CLI.hpp>

#include <iostream>
#include <vector>

#include "burgers_deeponet.hpp"

using namespace uqnn;
using namespace uqnn::examples;

int main(int argc, char** argv) {
  std::filesystem::path out = "vi-hmc-burgers";
  BurgersConfig cfg;
  bool quick = false, no_full_hmc = false;
  long functions = 0, map_epochs = 0, vi_epochs = 0;
  std::vector<long> batch;
  double map_lr = 0, prior_sd = 0;
  CLI::App app("vi_hmc_burgers: the Bayesian DeepONet of Thiagarajan et al. 2025 for Burgers' equation (VI, VI-HMC, "
               "full-space HMC)");
  app.add_option("out", out, "output directory")->capture_default_str();
  app.add_flag("--quick", quick, "a short run: 200 functions, 500 MAP and 100 VI epochs (options below still apply)");
  app.add_option("--functions", functions, "training and test functions each")->check(CLI::PositiveNumber);
  app.add_option("--map-epochs", map_epochs, "MAP epochs")->check(CLI::PositiveNumber);
  app.add_option("--vi-epochs", vi_epochs, "VI epochs")->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "minibatch: FUNCTIONS POINTS")->expected(2)->check(CLI::PositiveNumber);
  app.add_option("--map-lr", map_lr, "MAP learning rate")->check(CLI::PositiveNumber);
  app.add_option("--prior-sd", prior_sd, "prior sd of every weight")->check(CLI::PositiveNumber);
  app.add_flag("--stop-after-training", cfg.stop_after_training, "stop after MAP and VI (and cache them)");
  app.add_flag("--reuse-training", cfg.reuse_training, "read MAP and VI from OUT/trained_network.bin");
  app.add_flag("--no-full-hmc", no_full_hmc, "skip the full-space HMC comparison");
  CLI11_PARSE(app, argc, argv);
  try {
    if (quick) {
      cfg.num_train = 200;
      cfg.num_test = 200;
      cfg.map_epochs = 500;
      cfg.vi_epochs = 100;
      cfg.sensitivity_pairs = 128;
      cfg.fixed_step_draws = 3;
      cfg.find_step_iterations = 20;
    }
    if (functions > 0) cfg.num_train = cfg.num_test = functions;
    if (map_epochs > 0) cfg.map_epochs = map_epochs;
    if (vi_epochs > 0) cfg.vi_epochs = vi_epochs;
    if (batch.size() == 2) {
      cfg.batch_functions = batch[0];
      cfg.batch_points = batch[1];
    }
    if (map_lr > 0) cfg.map_lr = map_lr;
    if (prior_sd > 0) cfg.prior_sd = prior_sd;
    if (no_full_hmc) cfg.full_space_hmc = false;
    cfg.training_cache = out / "trained_network.bin";
    const auto t0 = std::chrono::steady_clock::now();
    const BurgersReport r = run_burgers_reproduction(cfg, out, [](const std::string& m) { std::cerr << m << std::endl; });
    const std::string text = fmt::format(
        "### Burgers DeepONet ({} parameters; {} training / {} test functions, posterior grid every {} point(s) of 101 x 101)\n\n"
        "Data {:.0f} CPU s; MAP {} epochs {:.0f} CPU s; VI {} epochs {:.0f} CPU s (0: read from the cache); VI sd max {:.3g}, "
        "median {:.3g}; total wall {:.0f} s.\n\n{}",
        r.num_params, cfg.num_train, cfg.num_test, cfg.train_stride, r.data_cpu_seconds, cfg.map_epochs, r.map_cpu_seconds,
        cfg.vi_epochs, r.vi_cpu_seconds, r.vi_max_sd, r.vi_median_sd, seconds_since(t0), r.table);
    std::cout << text;
    write_text(out / "results.md", text);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
