// Measurements of the MPI scale-out (issue 16; bench/mpi_scaling.sh runs them, docs/scaling.md
// uses them):
//   mpi_scaling gradient --data protein.csv [--evals 200]  per-gradient wall and CPU time of the
//       Table 3 posterior (2x16 ReLU MLP, heteroscedastic Gaussian, unit Gaussian prior, float32
//       passes) on the training rows (80%), sharded over all ranks (Posterior::distribute_rows);
//   mpi_scaling allreduce [--sizes 467,4096,65536] [--reps 2000]  latency and bandwidth of the
//       rank-ordered sum (Communicator::all_reduce_sum) at the gradient's size and larger.
// One JSON line per measurement on rank 0, with the load average (the machine may be shared).
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench_problems.hpp"
#include "uqnn/core/communicator.hpp"
#include "uqnn/core/mpi_session.hpp"

using namespace uqnn;

namespace {

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

void barrier(const Communicator& c) { c.all_gather(""); }

/// Seconds on the slowest rank and CPU seconds summed over ranks of `body`.
std::pair<double, double> timed(const Communicator& world, const std::function<void()>& body) {
  barrier(world);
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  body();
  std::vector<double> t{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), cpu_seconds() - cpu0};
  // Slowest wall time: gather and take the max (the rank-ordered sum would add them).
  ByteWriter w;
  w.put(t[0]);
  double slowest = 0;
  for (const auto& bytes : world.all_gather(w.take())) slowest = std::max(slowest, ByteReader(bytes).get_double());
  std::vector<double> cpu{t[1]};
  world.all_reduce_sum(cpu);
  return {slowest, cpu[0]};
}

int gradient(const Communicator& world, const std::string& data, long evals) {
  // Seed 003's Table 3 posterior on split 0's training rows, float32 passes (dei_table3's).
  const Dataset s = bench::dei_training_set(load_dataset(data));
  const auto posterior = bench::dei_posterior(s, Precision::Float32);
  posterior->distribute_rows(world_communicator());
  Rng rng(1);
  const Vec theta = posterior->initial_point(rng);
  Vec grad;
  double sink = 0;
  for (int i = 0; i < 5; ++i) sink += posterior->log_density_and_grad(theta, grad);  // warm caches
  const auto [wall, cpu] = timed(world, [&] {
    for (long i = 0; i < evals; ++i) sink += posterior->log_density_and_grad(theta, grad);
  });
  // The compute alone: this rank's block of rows as its own (unsharded) posterior, CPU time without
  // any communication; the slowest rank bounds the sharded gradient (on a shared machine the wall
  // time above also contains waiting for a descheduled partner, spinning in MPI).
  const Index n = s.size(), S = world.size(), r = world.rank();
  const Index begin = r * n / S, end = (r + 1) * n / S;
  const Posterior block(posterior->model_ptr(), posterior->likelihood_ptr(), posterior->prior_ptr(),
                        s.inputs.middleCols(begin, end - begin), s.targets.middleCols(begin, end - begin));
  for (int i = 0; i < 5; ++i) sink += block.log_density_and_grad(theta, grad);
  const double cpu0 = cpu_seconds();
  for (long i = 0; i < evals; ++i) sink += block.log_density_and_grad(theta, grad);
  ByteWriter w;
  w.put(cpu_seconds() - cpu0);
  double compute = 0;
  for (const auto& bytes : world.all_gather(w.take())) compute = std::max(compute, ByteReader(bytes).get_double());
  if (world.is_root())
    std::cout << nlohmann::json{{"what", "sharded_gradient"}, {"data", data}, {"ranks", world.size()}, {"rows", s.size()},
                                {"params", posterior->dim()}, {"evals", evals},
                                {"seconds_per_gradient", wall / static_cast<double>(evals)},
                                {"cpu_seconds_per_gradient_all_ranks", cpu / static_cast<double>(evals)},
                                {"compute_cpu_seconds_per_gradient_slowest_rank", compute / static_cast<double>(evals)},
                                {"loadavg", load_average()}, {"check", sink}}
                     .dump()
              << std::endl;
  return 0;
}

int allreduce(const Communicator& world, const std::vector<long>& sizes, long reps) {
  for (const long n : sizes) {
    std::vector<double> v(static_cast<std::size_t>(n), 1.0);
    for (int i = 0; i < 10; ++i) world.all_reduce_sum(v);
    const auto [wall, cpu] = timed(world, [&] {
      for (long i = 0; i < reps; ++i) world.all_reduce_sum(v);
    });
    const double per = wall / static_cast<double>(reps);
    if (world.is_root())
      std::cout << nlohmann::json{{"what", "all_reduce_sum"}, {"ranks", world.size()}, {"doubles", n}, {"reps", reps},
                                  {"seconds_per_call", per},
                                  {"megabytes_per_second", static_cast<double>(n) * 8.0 / per / 1e6},
                                  {"loadavg", load_average()}}
                       .dump()
                << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(argc, argv);
  CLI::App app("mpi_scaling: sharded gradient and all_reduce_sum timings (run under mpirun)");
  app.require_subcommand(1);
  std::string data;
  long evals = 200, reps = 2000;
  std::vector<long> sizes{467, 4096, 65536};
  auto* g = app.add_subcommand("gradient", "per-gradient time of the Table 3 posterior, rows sharded over the ranks");
  g->add_option("--data", data, "CSV (last column the target)")->required()->check(CLI::ExistingFile);
  g->add_option("--evals", evals, "gradient evaluations timed")->capture_default_str();
  auto* a = app.add_subcommand("allreduce", "latency and bandwidth of the rank-ordered sum");
  a->add_option("--sizes", sizes, "vector lengths (doubles)")->delimiter(',')->capture_default_str();
  a->add_option("--reps", reps, "calls timed per size")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const auto world = world_communicator();
    if (g->parsed()) return gradient(*world, data, evals);
    return allreduce(*world, sizes, reps);
  } catch (const std::exception& e) {
    return report_failure(e.what(), 1);
  }
}
