// Chains in lockstep (issue 19 item 3): CPU time per chain-gradient when a thread's chains evaluate
// one by one (Posterior::log_density_and_grad, the single-chain kernel) against one batched pass
// (Posterior::log_density_and_grad_batch, one chain per SIMD lane), on B1 and B2 of
// data/bench/README.md and seed 003's Table 3 network on airfoil, in double and float.
//
// A thread's group is what run_chains gives one thread with --lockstep: 4 chains on 2 threads are
// groups of 2, 12 chains groups of 6; on one thread the whole run is one group. One thread, CPU
// time, the best of 15 repeats. Prints the CPU model, a Markdown table and (--json FILE) the rows.
//
// --minibatch N times SG-MCMC's minibatch gradients instead (Posterior::minibatch_log_density_and_grad
// against minibatch_log_density_and_grad_batch, each chain on its own random N rows, as SGLD's chains
// in lockstep); problems with at most N rows are skipped.
//
// --ensemble times whole ensemble trainings instead: fit_deep_ensemble (Adam; MSE, or the NLL of
// airfoil's heteroscedastic network) of 4 and 12 members
// on one thread with and without EnsembleParams::lockstep, full batches and minibatches of 32; CPU time
// per member-gradient, the best of 3.
// Run: build/bench/lockstep_bench [--minibatch N | --ensemble] [--json FILE]; problems whose data are absent are skipped.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_problems.hpp"
#include "host.hpp"
#include "uqnn/approx/ensemble.hpp"

namespace uqnn::bench {
namespace {

/// CPU seconds per call of f: the best of 15 timings of `inner` calls (at least ~20 ms each).
template <typename F>
double seconds_per_call(F&& f) {
  int inner = 0;  // calls in ~20 ms
  for (const double t0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID); clock_seconds(CLOCK_THREAD_CPUTIME_ID) - t0 < 0.02; ++inner) f();
  double best = 1e300;
  for (int r = 0; r < 15; ++r) {
    const double t0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < inner; ++i) f();
    best = std::min(best, (clock_seconds(CLOCK_THREAD_CPUTIME_ID) - t0) / inner);
  }
  return best;
}

struct Row {
  std::string problem, precision;
  int group;
  double one_by_one_us, batched_us;  ///< per chain-gradient
};

Row measure(const std::string& name, const Posterior& posterior, const std::string& precision, int group, Index minibatch,
            std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Vec> thetas, grads(static_cast<std::size_t>(group));
  for (int c = 0; c < group; ++c) thetas.push_back(posterior.initial_point(rng) + 0.1 * rng.normal_vector(posterior.dim()));
  std::vector<const Vec*> theta_ptrs;
  std::vector<Vec*> grad_ptrs;
  for (int c = 0; c < group; ++c) theta_ptrs.push_back(&thetas[static_cast<std::size_t>(c)]), grad_ptrs.push_back(&grads[static_cast<std::size_t>(c)]);
  std::vector<double> values(static_cast<std::size_t>(group));
  double sink = 0;
  if (minibatch > 0) {
    std::vector<IndexVec> batches;
    std::vector<const IndexVec*> batch_ptrs;
    for (int c = 0; c < group; ++c) {
      const IndexVec order = rng.permutation(posterior.num_data());
      batches.emplace_back(order.begin(), order.begin() + minibatch);
    }
    for (const IndexVec& b : batches) batch_ptrs.push_back(&b);
    const double one = seconds_per_call([&] {
      for (int c = 0; c < group; ++c) {
        const auto k = static_cast<std::size_t>(c);
        sink += posterior.minibatch_log_density_and_grad(thetas[k], batches[k], grads[k]);
      }
    });
    const double batched = seconds_per_call([&] {
      posterior.minibatch_log_density_and_grad_batch(theta_ptrs, batch_ptrs, grad_ptrs, values);
      sink += values[0];
    });
    if (!std::isfinite(sink)) std::cerr << "non-finite log density\n";
    return {name, precision, group, 1e6 * one / group, 1e6 * batched / group};
  }
  const double one = seconds_per_call([&] {
    for (int c = 0; c < group; ++c) sink += posterior.log_density_and_grad(thetas[static_cast<std::size_t>(c)], grads[static_cast<std::size_t>(c)]);
  });
  const double batched = seconds_per_call([&] {
    posterior.log_density_and_grad_batch(theta_ptrs, grad_ptrs, values);
    sink += values[0];
  });
  if (!std::isfinite(sink)) std::cerr << "non-finite log density\n";
  return {name, precision, group, 1e6 * one / group, 1e6 * batched / group};
}

/// One ensemble training of `members` members on one thread, with and without lockstep; `batch` 0 =
/// full batches. The epochs give each member about 2000 gradients.
Row measure_ensemble(const std::string& name, const Posterior& posterior, const std::string& precision, int members, Index batch) {
  const Index N = posterior.num_data();
  const Index steps_per_epoch = batch == 0 ? 1 : (N + batch - 1) / batch;
  EnsembleParams p;
  p.members = members;
  p.threads = 1;
  p.noise_holdout = 0;
  const std::string kind = posterior.likelihood().kind();
  if (kind != "gaussian" && kind != "gaussian_learned_sigma") p.loss = "nll";  // as `uqnn fit --method ens`
  p.training.batch_size = batch;
  p.training.epochs = std::max<Index>(2, 2000 / steps_per_epoch);
  const double gradients = static_cast<double>(members * (p.training.epochs * steps_per_epoch + 1));
  const auto time = [&](bool lockstep) {
    p.lockstep = lockstep;
    double best = 1e300;
    for (int r = 0; r < 3; ++r) {
      const double t0 = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
      const auto fits = fit_deep_ensemble(posterior, p, 11);
      best = std::min(best, clock_seconds(CLOCK_THREAD_CPUTIME_ID) - t0);
      if (!fits.front().theta.allFinite()) std::cerr << "non-finite member\n";
    }
    return best;
  };
  const double one = time(false), batched = time(true);
  return {name + (batch == 0 ? ", full batch" : ", batch " + std::to_string(batch)), precision, members, 1e6 * one / gradients,
          1e6 * batched / gradients};
}

}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  using namespace uqnn;
  using namespace uqnn::bench;
  Eigen::setNbThreads(1);
  std::string json_path;
  Index minibatch = 0;
  bool ensemble = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json" && i + 1 < argc) json_path = argv[++i];
    else if (arg == "--ensemble") ensemble = true;
    else if (arg == "--minibatch" && i + 1 < argc) minibatch = std::stol(argv[++i]);
    else {
      std::cerr << "usage: lockstep_bench [--minibatch N | --ensemble] [--json FILE]; unknown argument '" << arg << "'\n";
      return 2;
    }
  }
  if (minibatch < 0) {
    std::cerr << "--minibatch must be >= 0 (0: the whole data)\n";
    return 2;
  }
  std::vector<std::pair<std::string, std::shared_ptr<Posterior>>> posteriors[2];  // [double, float]
  const auto dir = bench_data_dir(UQNN_DATA_DIR);
  if (!dir) std::cerr << "lockstep_bench: no benchmark data in " << UQNN_DATA_DIR << "/bench; skipping B1 and B2\n";
  for (const char* id : {"B1", "B2"}) {
    if (!dir) break;
    const Problem problem = load_problem(*dir, find_problem_spec(id));
    posteriors[0].emplace_back(id, make_posterior(problem, Precision::Float64));
    posteriors[1].emplace_back(id, make_posterior(problem, Precision::Float32));
  }
  const auto airfoil = std::filesystem::path(UQNN_DATA_DIR) / "uci" / "airfoil.csv";
  if (std::filesystem::exists(airfoil)) {
    const Dataset train = dei_training_set(load_dataset(airfoil));
    posteriors[0].emplace_back("airfoil (Table 3 net)", dei_posterior(train, Precision::Float64));
    posteriors[1].emplace_back("airfoil (Table 3 net)", dei_posterior(train, Precision::Float32));
  } else {
    std::cerr << "lockstep_bench: " << airfoil << " is absent; skipping airfoil\n";
  }
  std::vector<Row> rows;
  for (int p = 0; p < 2; ++p)
    for (const auto& [name, post] : posteriors[p]) {
      if (ensemble) {
        for (const Index batch : {Index{0}, Index{32}})
          for (const int members : {4, 12}) rows.push_back(measure_ensemble(name, *post, p == 0 ? "double" : "float", members, batch));
        continue;
      }
      if (minibatch >= post->num_data()) continue;
      for (const int group : {1, 2, 4, 6, 12}) rows.push_back(measure(name, *post, p == 0 ? "double" : "float", group, minibatch, 17));
    }
  std::printf("CPU: %s\n", cpu_model().c_str());
  if (minibatch > 0) std::printf("Minibatch gradients of %ld rows, each chain its own\n", static_cast<long>(minibatch));
  if (ensemble)
    std::printf("\n| problem | precision | members per thread | without lockstep (us per member-gradient) | with | speed-up |\n");
  else
    std::printf("\n| problem | precision | chains per thread | one by one (us per chain-gradient) | batched | speed-up |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    std::printf("| %s | %s | %d | %.3g | %.3g | %.2fx |\n", r.problem.c_str(), r.precision.c_str(), r.group, r.one_by_one_us,
                r.batched_us, r.one_by_one_us / r.batched_us);
    out.push_back({{"problem", r.problem}, {"precision", r.precision}, {"group", r.group}, {"one_by_one_us", r.one_by_one_us},
                   {"batched_us", r.batched_us}});
  }
  if (!json_path.empty())
    std::ofstream(json_path) << nlohmann::json{{"cpu", cpu_model()}, {"minibatch", minibatch}, {"ensemble", ensemble}, {"rows", out}}.dump(1) << '\n';
  return 0;
}
