// uqnn's side of bench/approx_vs_torch.sh (issue 4 item 10): Bayes-by-backprop VI epochs and
// deep-ensemble member fits on a benchmark problem of data/bench/README.md (B2 by default),
// through the library's fit_bayes_by_backprop and fit_deep_ensemble (the code path of
// `uqnn fit --method vi|ens`), one thread.
//
// Usage:
//   approx_bench vi  --problem B2 --epochs 20 --batch-size 100 --samples 5 [--learning-rate 1e-3]
//   approx_bench ens --problem B2 --epochs 20 --batch-size 100 --members 2 [--learning-rate 1e-3]
// VI: mean-field Gaussian, N(0, 1) prior with the analytic KL, Gaussian likelihood with the
// problem's sigma, Adam; ensembles: MSE loss, Adam, full data per member, members on one thread.
// Prints one JSON line with wall and CPU seconds in total, per epoch (VI) and per member (ens).
#include <ctime>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_problems.hpp"
#include "uqnn/approx/ensemble.hpp"
#include "uqnn/approx/vi.hpp"

namespace uqnn::bench {
namespace {

struct Options {
  std::string method, problem = "B2";
  Index epochs = 20, batch_size = 100, samples = 5, members = 2;
  double learning_rate = 1e-3;
  std::uint64_t seed = 1;
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("method", o.method, "vi | ens")->required()->check(CLI::IsMember({"vi", "ens"}));
  app.add_option("--problem", o.problem, "B1 | B2 | B3 of data/bench/README.md")->capture_default_str();
  app.add_option("--epochs", o.epochs)->capture_default_str();
  app.add_option("--batch-size", o.batch_size)->capture_default_str();
  app.add_option("--samples", o.samples, "vi: draws per step")->capture_default_str();
  app.add_option("--members", o.members, "ens: members timed")->capture_default_str();
  app.add_option("--learning-rate", o.learning_rate)->capture_default_str();
  app.add_option("--seed", o.seed)->capture_default_str();
}

int run(const Options& o) {
  const auto dir = bench_data_dir(UQNN_DATA_DIR);
  if (!dir) {
    std::cerr << "approx_bench: no benchmark data in " << UQNN_DATA_DIR << "/bench\n";
    return 2;
  }
  const Problem problem = load_problem(*dir, find_problem_spec(o.problem));
  const auto posterior = make_posterior(problem);

  nlohmann::json report = {{"tool", "uqnn"}, {"method", o.method}, {"problem", o.problem}, {"epochs", o.epochs},
                           {"batch_size", o.batch_size}};
  const double wall0 = clock_seconds(CLOCK_MONOTONIC), cpu0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  double final_loss = 0;
  if (o.method == "vi") {
    ViParams params;
    params.epochs = o.epochs;
    params.batch_size = o.batch_size;
    params.num_samples = o.samples;
    params.learning_rate = o.learning_rate;
    params.analytic_kl = true;
    Rng rng(o.seed);
    const ViResult fit = fit_bayes_by_backprop(*posterior, posterior->prior(), params, rng);
    final_loss = -fit.elbo.back();
    report["samples"] = o.samples;
  } else {
    EnsembleParams params;
    params.members = o.members;
    params.threads = 1;
    params.training.epochs = o.epochs;
    params.training.batch_size = o.batch_size;
    params.training.optimizer.learning_rate = o.learning_rate;
    const auto members = fit_deep_ensemble(*posterior, params, o.seed);
    final_loss = members.back().history.train_loss.back();
    report["members"] = o.members;
  }
  const double wall = clock_seconds(CLOCK_MONOTONIC) - wall0, cpu = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  const double units = o.method == "vi" ? static_cast<double>(o.epochs) : static_cast<double>(o.members);
  report["wall_seconds"] = wall;
  report["cpu_seconds"] = cpu;
  report["cpu_seconds_per_unit"] = cpu / units;  // per epoch (vi) or per member fit (ens)
  report["final_loss"] = final_loss;             // -ELBO (vi) or the last epoch's MSE (ens)
  std::cout << report.dump() << std::endl;
  return 0;
}

}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  CLI::App app("approx_bench: one timed VI or deep-ensemble fit on a benchmark problem; prints JSON");
  uqnn::bench::Options options;
  uqnn::bench::add_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    return uqnn::bench::run(options);
  } catch (const std::exception& e) {
    std::cerr << "approx_bench: " << e.what() << "\n";
    return 1;
  }
}
