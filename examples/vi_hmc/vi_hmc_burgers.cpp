// Seed 000 section 4.2.1 / Appendix E: Bayesian DeepONet for Burgers' equation, VI then VI-HMC at
// tau in {0.9, 0.75, 0.5, 0.3}. Writes into OUT (default vi-hmc-burgers/): sensitivity report and
// figures, best_worst.png (Fig. 10), results.md (Tables 2 / E.5 and the relative L2 errors).
// Usage: vi_hmc_burgers [OUT] [--functions N] [--quick]
#include <iostream>

#include "burgers_deeponet.hpp"

using namespace uqnn;
using namespace uqnn::examples;

int main(int argc, char** argv) {
  std::filesystem::path out = "vi-hmc-burgers";
  BurgersConfig cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      cfg.num_train = 40;
      cfg.num_test = 20;
      cfg.map_epochs = cfg.vi_epochs = 200;
      cfg.sensitivity_pairs = 64;
      cfg.fixed_step_draws = 5;
    } else if (a == "--functions" && i + 1 < argc) {
      cfg.num_train = cfg.num_test = std::stol(argv[++i]);
    } else {
      out = a;
    }
  }
  try {
    const BurgersReport r = run_burgers_reproduction(cfg, out, [](const std::string& m) { std::cerr << m << std::endl; });
    const std::string text = fmt::format(
        "### Burgers DeepONet ({} parameters; {} training / {} test functions, training grid every {}th point of 101 x 101)\n\n{}",
        r.num_params, cfg.num_train, cfg.num_test, cfg.train_stride, r.table);
    std::cout << text;
    write_text(out / "results.md", text);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
