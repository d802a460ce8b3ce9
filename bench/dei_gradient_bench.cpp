// One log-posterior + gradient evaluation of seed 003's Table 3 model on each UCI data set: a 2x16
// ReLU network whose outputs are mean and log sigma (heteroscedastic Gaussian), unit Gaussian prior,
// on the standardised training part of split 0 (80%), as examples/dei_table3.cpp samples it with
// NUTS ~10^3 times per draw. Timed in float64 and float32 (--precision), one thread.
//
// Run: build/bench/dei_gradient_bench [--benchmark_format=json] [--export DIR]; with --export the
// training sets, the parameter point and uqnn's float64 log density and gradient are written to DIR
// (CSV) for bench/dei_gradient_vs_jax.py, which times JAX (NumPyro's gradient) on the same point.
// Data sets missing from data/uci are skipped with a message.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_problems.hpp"
#include "uqnn/core/rng.hpp"
#include "host.hpp"

namespace uqnn::bench {
namespace {

const std::vector<std::string> kDataSets = {"yacht", "energy", "concrete", "airfoil", "bike_sharing", "protein"};

struct DeiProblem {
  Dataset train;  ///< standardised training part of split 0
  Vec theta;      ///< He-initialised network, perturbed so that no bias is zero
  std::map<Precision, std::shared_ptr<Posterior>> posteriors;
};

std::map<std::string, DeiProblem>& problems() {
  static std::map<std::string, DeiProblem> loaded;
  return loaded;
}

/// The same model and data as examples/dei_table3.cpp's (split seed 0).
DeiProblem make_problem(const Dataset& data) {
  DeiProblem p{dei_training_set(data), Vec(), {}};
  Rng rng(7);
  for (Precision precision : {Precision::Float64, Precision::Float32}) {
    p.posteriors[precision] = dei_posterior(p.train, precision);
    const Model& model = p.posteriors[precision]->model();
    if (p.theta.size() == 0) p.theta = model.initial_params(rng) + 0.1 * rng.normal_vector(model.num_params());
  }
  return p;
}

void BM_DeiGradient(benchmark::State& state, const std::string& name, Precision precision) {
  const DeiProblem& p = problems().at(name);
  const Posterior& posterior = *p.posteriors.at(precision);
  Vec grad(p.theta.size());
  for (auto _ : state) {
    const double lp = posterior.log_density_and_grad(p.theta, grad);
    benchmark::DoNotOptimize(lp);
    benchmark::DoNotOptimize(grad.data());
  }
  state.counters["N"] = static_cast<double>(p.train.size());
  state.counters["d"] = static_cast<double>(p.train.input_dim());
  state.counters["P"] = static_cast<double>(p.theta.size());
}

void write_csv(const std::filesystem::path& path, const Mat& rows) {
  std::ofstream out(path);
  out.precision(17);
  for (Index i = 0; i < rows.rows(); ++i) {
    for (Index j = 0; j < rows.cols(); ++j) out << (j ? "," : "") << rows(i, j);
    out << '\n';
  }
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// DIR/NAME_{X,y,theta,grad,lp}.csv: X one row per example, the rest one number per line.
void export_problem(const std::filesystem::path& dir, const std::string& name, const DeiProblem& p) {
  std::filesystem::create_directories(dir);
  Vec grad(p.theta.size());
  const double lp = p.posteriors.at(Precision::Float64)->log_density_and_grad(p.theta, grad);
  write_csv(dir / (name + "_X.csv"), p.train.inputs.transpose());
  write_csv(dir / (name + "_y.csv"), p.train.targets.transpose());
  write_csv(dir / (name + "_theta.csv"), p.theta);
  write_csv(dir / (name + "_grad.csv"), grad);
  write_csv(dir / (name + "_lp.csv"), Mat::Constant(1, 1, lp));
}

}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  using namespace uqnn;
  using namespace uqnn::bench;
  Eigen::setNbThreads(1);
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu_model", uqnn::bench::cpu_model());
  std::filesystem::path export_dir;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--export" && i + 1 < argc) {
      export_dir = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_count = static_cast<int>(rest.size());
  if (benchmark::ReportUnrecognizedArguments(rest_count, rest.data())) return 1;
  const std::filesystem::path uci = std::filesystem::path(UQNN_DATA_DIR) / "uci";
  for (const auto& name : kDataSets) {
    const auto file = dataset_file(uci, name);
    if (!std::filesystem::exists(file)) {
      std::fprintf(stderr, "dei_gradient_bench: %s is absent; skipping %s\n", file.c_str(), name.c_str());
      continue;
    }
    const DeiProblem& p = problems().emplace(name, make_problem(load_dataset(file))).first->second;
    if (!export_dir.empty()) export_problem(export_dir, name, p);
    for (Precision precision : {Precision::Float64, Precision::Float32})
      benchmark::RegisterBenchmark(("BM_DeiGradient<" + to_string(precision) + ">/" + name).c_str(), BM_DeiGradient, name, precision)
          ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
