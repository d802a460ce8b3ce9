// uqnn's side of bench/samplers_vs_torch_stan_numpyro.sh (issue 3 item 8): HMC at fixed L and eps,
// and NUTS with Stan's warmup, on the benchmark problems B1 / B2 of data/bench/README.md, through
// the library's run_chains driver (the code path of `uqnn fit --method hmc|nuts`).
//
// Log posterior: make_posterior (Gaussian likelihood with the problem's sigma, N(0, 1) prior on every
// parameter); lp__ is written with the normalising constants removed so that it is BENCHMARKS.md's
// log posterior, the same function Stan's and NumPyro's lp__ report in the script.
//
// Usage:
//   samplers_bench hmc  --problem B1 --draws 200 --step-size 1.5e-3 --steps 10 [--seed 1]
//   samplers_bench nuts --problem B1 --chains 4 --threads 2 --warmup 1000 --draws 1000 [--seed 1]
//                       [--max-tree-depth 10] --csv OUT.csv
// Chains start at theta0.csv; HMC uses the unit metric and no warmup (hamiltorch's setting). Prints
// one JSON line with wall and CPU seconds of the sampling (process CPU time: all chain threads).
// --csv writes the draws in long form: chain, draw, lp__, f_1..f_T (the network at the T test
// inputs of Xtest.csv), accept_stat__, stepsize__, treedepth__, n_leapfrog__, divergent__.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_problems.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/lockstep.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn::bench {
namespace {

struct Options {
  std::string method, problem = "B1", csv, metric = "diag";
  int chains = 1, threads = 1, max_depth = 10, steps = 10;
  long warmup = 0, draws = 100;
  double step_size = 0.0;
  std::uint64_t seed = 1;
  bool lockstep = false;
  std::string precision = "float64";
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("method", o.method, "hmc | nuts")->required()->check(CLI::IsMember({"hmc", "nuts"}));
  app.add_option("--problem", o.problem, "B1 | B2 of data/bench/README.md")->capture_default_str();
  app.add_option("--csv", o.csv, "write the draws (lp__, f at the test inputs, sampler statistics) here");
  app.add_option("--chains", o.chains)->capture_default_str();
  app.add_option("--threads", o.threads)->capture_default_str();
  app.add_option("--max-tree-depth", o.max_depth)->capture_default_str();
  app.add_option("--steps", o.steps, "hmc: leapfrog steps")->capture_default_str();
  app.add_option("--warmup", o.warmup)->capture_default_str();
  app.add_option("--draws", o.draws)->capture_default_str();
  app.add_option("--step-size", o.step_size, "0 = found in warmup")->capture_default_str();
  app.add_option("--seed", o.seed)->capture_default_str();
  app.add_flag("--lockstep", o.lockstep, "each thread's chains batch their gradients, one chain per SIMD lane (run/lockstep.hpp)");
  app.add_option("--precision", o.precision, "the network's arithmetic")->check(CLI::IsMember({"float64", "float32"}))->capture_default_str();
  app.add_option("--metric", o.metric, "nuts: the metric warmup adapts")
      ->check(CLI::IsMember({"diag", "dense", "fisher-diag", "low-rank"}))
      ->capture_default_str();
}

void write_csv(const std::string& path, const RunResult& result, const Problem& problem, const Posterior& posterior) {
  const double constants = log_normalising_constants(problem);
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << "chain,draw,lp__";
  for (Index t = 0; t < problem.X_test.cols(); ++t) out << ",f_" << t + 1;
  out << ",accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__\n";
  char buffer[64];
  const auto number = [&](double v) {
    std::snprintf(buffer, sizeof buffer, "%.17g", v);
    return buffer;
  };
  for (int c = 0; c < result.num_chains(); ++c) {
    for (Index d = 0; d < result.draws[c].rows(); ++d) {
      const DrawStats& s = result.stats[c][static_cast<std::size_t>(d)];
      const Vec theta = result.draws[c].row(d).transpose();
      const Mat f = posterior.model().forward(theta, problem.X_test);
      out << c << ',' << d << ',' << number(s.lp - constants);
      for (Index t = 0; t < f.cols(); ++t) out << ',' << number(f(0, t));
      out << ',' << number(s.accept_prob) << ',' << number(s.step_size) << ',' << s.tree_depth << ','
          << s.n_leapfrog << ',' << (s.is_divergent ? 1 : 0) << '\n';
    }
  }
}

int run(const Options& o) {
  const auto dir = bench_data_dir(UQNN_DATA_DIR);
  if (!dir) {
    std::cerr << "samplers_bench: no benchmark data in " << UQNN_DATA_DIR << "/bench\n";
    return 2;
  }
  const Problem problem = load_problem(*dir, find_problem_spec(o.problem));
  const auto posterior = make_posterior(problem, parse_precision(o.precision));

  SamplerConfig config;
  RunConfig run;
  run.num_chains = o.chains;
  run.num_threads = o.threads;
  run.num_draws = o.draws;
  run.seed = o.seed;
  run.lockstep = o.lockstep;
  if (o.method == "hmc") {
    HmcConfig hmc;  // fixed eps and L, unit metric, no warmup: hamiltorch's HMC
    hmc.kernel.step_size = o.step_size;
    hmc.kernel.num_leapfrog_steps = o.steps;
    hmc.warmup.adapt_step_size = false;
    hmc.warmup.metric = MetricAdaptation::None;
    config = hmc;
    run.num_warmup = 0;
  } else {
    NutsConfig nuts;  // Stan's defaults: diagonal metric, target acceptance 0.8, 75/25/50 windows
    nuts.kernel.max_depth = o.max_depth;
    nuts.warmup.metric = o.metric == "dense"         ? MetricAdaptation::Dense
                         : o.metric == "fisher-diag" ? MetricAdaptation::FisherDiagonal
                         : o.metric == "low-rank"    ? MetricAdaptation::LowRank
                                                     : MetricAdaptation::Diagonal;
    if (o.step_size > 0) nuts.kernel.step_size = o.step_size;
    config = nuts;
    run.num_warmup = o.warmup;
  }
  const auto factory = make_sampler_factory(
      o.lockstep ? std::shared_ptr<const LogDensity>(std::make_shared<LockstepLogDensity>(posterior)) : posterior, config);
  const double wall0 = clock_seconds(CLOCK_MONOTONIC), cpu0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
  const RunResult result = run_chains(run, factory, problem.theta0);
  const double wall = clock_seconds(CLOCK_MONOTONIC) - wall0, cpu = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;

  long gradients = 0, draws = 0;
  double accept = 0;
  for (const auto& chain : result.stats)
    for (const auto& s : chain) {
      gradients += s.n_leapfrog;
      accept += s.accept_prob;
      ++draws;
    }
  for (const auto& chain : result.warmup_stats)
    for (const auto& s : chain) gradients += s.n_leapfrog;
  nlohmann::json report = {{"tool", "uqnn"},
                           {"method", o.method},
                           {"problem", o.problem},
                           {"chains", o.chains},
                           {"threads", o.threads},
                           {"warmup", o.warmup},
                           {"draws", o.draws},
                           {"wall_seconds", wall},
                           {"cpu_seconds", cpu},
                           {"gradients", gradients},
                           {"metric", o.metric},
                           {"lockstep", o.lockstep},
                           {"precision", o.precision},
                           {"lp_at_theta_ref", posterior->log_density(problem.theta_ref) - log_normalising_constants(problem)},
                           {"mean_accept_stat", draws > 0 ? accept / static_cast<double>(draws) : 0.0},
                           {"samplers", result.sampler_descriptions}};
  if (!o.csv.empty()) write_csv(o.csv, result, problem, *posterior);
  std::cout << report.dump() << std::endl;
  return 0;
}

}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  CLI::App app("samplers_bench: one timed HMC or NUTS run on a benchmark problem; prints JSON");
  uqnn::bench::Options options;
  uqnn::bench::add_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    return uqnn::bench::run(options);
  } catch (const std::exception& e) {
    std::cerr << "samplers_bench: " << e.what() << "\n";
    return 1;
  }
}
