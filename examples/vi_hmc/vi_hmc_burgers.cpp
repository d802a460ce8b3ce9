// Seed 000 section 4.2.1 / Appendix E: Bayesian DeepONet for Burgers' equation, VI then VI-HMC at
// tau in {0.9, 0.75, 0.5, 0.3} and full-space HMC. Writes into OUT (default vi-hmc-burgers/):
// sensitivity report and figures, best_worst.png (Fig. 10), results.md (Tables 2 / E.5 and the
// relative L2 errors), trained_network.bin (MAP and VI parameters, ~4 MB).
// Usage: vi_hmc_burgers [OUT] [--quick] [--functions N] [--map-epochs N] [--vi-epochs N]
//                       [--batch FUNCTIONS POINTS] [--map-lr LR] [--prior-sd SD]
//                       [--reuse-training] [--no-full-hmc] [--stop-after-training]
// Default: ~32 min wall / ~17 min CPU on 2 loaded cores (README, "Burgers DeepONet").
#include <iostream>

#include "burgers_deeponet.hpp"

using namespace uqnn;
using namespace uqnn::examples;

int main(int argc, char** argv) {
  std::filesystem::path out = "vi-hmc-burgers";
  BurgersConfig cfg;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&]() -> long {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        const long v = std::stol(argv[++i]);
        if (v < 1) throw std::invalid_argument(a + " must be >= 1");
        return v;
      };
      const auto positive = [&]() -> double {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        const double v = std::stod(argv[++i]);
        if (!(v > 0)) throw std::invalid_argument(a + " must be > 0");
        return v;
      };
      if (a == "--quick") {
        cfg.num_train = 200;
        cfg.num_test = 200;
        cfg.map_epochs = 500;
        cfg.vi_epochs = 100;
        cfg.sensitivity_pairs = 128;
        cfg.fixed_step_draws = 3;
        cfg.find_step_iterations = 20;
      } else if (a == "--functions") {
        cfg.num_train = cfg.num_test = value();
      } else if (a == "--map-epochs") {
        cfg.map_epochs = value();
      } else if (a == "--vi-epochs") {
        cfg.vi_epochs = value();
      } else if (a == "--batch") {
        cfg.batch_functions = value();
        cfg.batch_points = value();
      } else if (a == "--map-lr") {
        cfg.map_lr = positive();
      } else if (a == "--prior-sd") {
        cfg.prior_sd = positive();
      } else if (a == "--stop-after-training") {
        cfg.stop_after_training = true;
      } else if (a == "--reuse-training") {
        cfg.reuse_training = true;
      } else if (a == "--no-full-hmc") {
        cfg.full_space_hmc = false;
      } else if (!a.empty() && a[0] == '-') {
        throw std::invalid_argument("unknown option " + a);
      } else {
        out = a;
      }
    }
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
