// One log-posterior + gradient evaluation on the benchmark problems B1-B3 of data/bench/README.md
// (double through Posterior::log_density_and_grad, float through Mlp::evaluate<float>), one thread,
// plus the machine rates the FLOP lower bound needs (dgemm on the GEMM shapes of the problems, the
// element-wise tanh), measured in the same run.
//
// Counters of the BM_Gradient<double> rows: flop_bound_us = GEMM FLOPs / dgemm rate + tanh calls /
// tanh rate (BENCHMARKS.md's definition), ratio_to_bound = CPU time per evaluation / flop_bound_us.
// All rates and the ratio use CPU time (robust when other processes share the core).
// Run: build/bench/gradient_bench [--benchmark_format=json]; skipped with a message when the
// benchmark data are absent. bench/gradient_vs_torch_jax.sh runs it next to PyTorch and JAX.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>

#include "bench_problems.hpp"
#include "host.hpp"

namespace uqnn::bench {
namespace {

std::map<std::string, Problem>& problems() {
  static std::map<std::string, Problem> loaded;
  return loaded;
}

/// CPU time of this thread in seconds: like Google Benchmark's CPU time, it does not count the time
/// other processes take the core from us.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// CPU seconds per call of f: the best of `repeats` timings of `inner` calls each.
template <typename F>
double best_seconds_per_call(F&& f, int inner, int repeats) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = thread_cpu_seconds();
    for (int i = 0; i < inner; ++i) f();
    best = std::min(best, (thread_cpu_seconds() - t0) / inner);
  }
  return best;
}

/// C = A B with A [m, k], B [k, n] (the forward product's shape), and its two transposed
/// companions of the backward pass; FLOPs counted as 2 m k n each.
struct GemmShape {
  Index m, k, n;
};

/// dgemm rate in FLOP/s of the three GEMMs of a dense layer [m <- k] on n examples.
double dgemm_rate(GemmShape s, int inner = 0) {
  const Mat W = Mat::Random(s.m, s.k), A = Mat::Random(s.k, s.n), D = Mat::Random(s.m, s.n);
  Mat Z(s.m, s.n), G(s.m, s.k), B(s.k, s.n);
  const double flops = 3 * 2.0 * static_cast<double>(s.m * s.k * s.n);
  if (inner == 0) inner = std::max(1, static_cast<int>(2e7 / flops));
  const double t = best_seconds_per_call(
      [&] {
        Z.noalias() = W * A;
        G.noalias() = D * A.transpose();
        B.noalias() = W.transpose() * D;
        benchmark::DoNotOptimize(Z.data());
        benchmark::DoNotOptimize(G.data());
        benchmark::DoNotOptimize(B.data());
      },
      inner, 15);
  return flops / t;
}

/// Element-wise tanh rate (values per second) of the library's activation on doubles.
double tanh_rate() {
  const Mat Z = 2.0 * Mat::Random(100, 1000);
  Mat A(100, 1000);
  const double t = best_seconds_per_call(
      [&] {
        activate(Activation::Tanh, Z, A);
        benchmark::DoNotOptimize(A.data());
      },
      20, 15);
  return static_cast<double>(Z.size()) / t;
}

/// The largest dgemm rate over the GEMM shapes of B1-B3 and a square 256 product (the most
/// optimistic rate keeps the bound a lower bound), and the tanh rate; measured once per run.
struct MachineRates {
  double dgemm = 0;  ///< FLOP/s
  double tanh = 0;   ///< values/s
};
const MachineRates& machine_rates() {
  static const MachineRates rates = [] {
    MachineRates r;
    for (GemmShape s : {GemmShape{100, 100, 1000}, GemmShape{16, 16, 1200}, GemmShape{256, 256, 256}})
      r.dgemm = std::max(r.dgemm, dgemm_rate(s));
    r.tanh = tanh_rate();
    return r;
  }();
  return rates;
}

double flop_bound_seconds(const Problem& p) {
  const auto& r = machine_rates();
  return gemm_flops(p.spec, p.N()) / r.dgemm + tanh_count(p.spec, p.N()) / r.tanh;
}

void BM_GradientDouble(benchmark::State& state, const std::string& id) {
  const Problem& p = problems().at(id);
  const auto posterior = make_posterior(p);
  Vec grad(p.P());
  double lp = 0;
  for (auto _ : state) {
    lp = posterior->log_density_and_grad(p.theta_ref, grad);
    benchmark::DoNotOptimize(lp);
    benchmark::DoNotOptimize(grad.data());
  }
  const double bound = flop_bound_seconds(p);
  state.counters["N"] = static_cast<double>(p.N());
  state.counters["P"] = static_cast<double>(p.P());
  state.counters["gemm_flops"] = gemm_flops(p.spec, p.N());
  state.counters["tanh_calls"] = tanh_count(p.spec, p.N());
  state.counters["dgemm_gflops"] = machine_rates().dgemm * 1e-9;
  state.counters["tanh_gps"] = machine_rates().tanh * 1e-9;
  state.counters["flop_bound_us"] = bound * 1e6;
  // time / (iterations x bound) = seconds per evaluation / bound.
  state.counters["ratio_to_bound"] = benchmark::Counter(bound, benchmark::Counter::kIsIterationInvariantRate |
                                                                   benchmark::Counter::kInvert);
}

/// The same log posterior in float: Gaussian log likelihood (constants dropped) + N(0, 1) prior.
void BM_GradientFloat(benchmark::State& state, const std::string& id) {
  const Problem& p = problems().at(id);
  const auto model = make_model(p.spec);
  const VecT<float> theta = p.theta_ref.cast<float>();
  const MatT<float> X = p.X.cast<float>();
  const MatT<float> y = p.y.cast<float>();
  const float inv_var = static_cast<float>(1.0 / (p.spec.sigma * p.spec.sigma));
  const OutputLoss<float> loss = [&](const MatT<float>& Y, MatT<float>& dY) {
    dY = (y - Y) * inv_var;
    return -0.5f * inv_var * (y - Y).squaredNorm();
  };
  VecT<float> grad(p.P());
  float value = 0;
  for (auto _ : state) {
    grad = -theta;
    value = -0.5f * theta.squaredNorm();
    float lik = 0;
    model->evaluate<float>(theta.data(), X, &loss, &lik, grad.data());
    value += lik;
    benchmark::DoNotOptimize(value);
    benchmark::DoNotOptimize(grad.data());
  }
}

void BM_Dgemm(benchmark::State& state) {
  const GemmShape s{state.range(0), state.range(1), state.range(2)};
  const Mat W = Mat::Random(s.m, s.k), A = Mat::Random(s.k, s.n);
  Mat Z(s.m, s.n);
  for (auto _ : state) {
    Z.noalias() = W * A;
    benchmark::DoNotOptimize(Z.data());
  }
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(s.m * s.k * s.n), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Tanh(benchmark::State& state) {
  const Mat Z = 2.0 * Mat::Random(100, 1000);
  Mat A(100, 1000);
  for (auto _ : state) {
    activate(Activation::Tanh, Z, A);
    benchmark::DoNotOptimize(A.data());
  }
  state.SetItemsProcessed(state.iterations() * Z.size());
}

BENCHMARK(BM_Dgemm)->Args({100, 100, 1000})->Args({16, 16, 1200})->Args({256, 256, 256})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Tanh)->Unit(benchmark::kMicrosecond);

/// Through the Posterior as the samplers call it, in the two configurations the CLI uses most: a
/// learned noise sd (the default without --noise: theta carries log sigma after the network's
/// parameters) and a float32 network (--precision float32), each at theta_ref (log sigma = log of
/// the problem's sigma).
void BM_PosteriorLearnedSigma(benchmark::State& state, const std::string& id) {
  const Problem& p = problems().at(id);
  auto model = make_model(p.spec);
  const auto posterior = std::make_shared<Posterior>(model, make_learned_sigma_likelihood(p.spec.sigma),
                                                     GaussianPrior::isotropic(model->num_params(), 1.0), p.X, p.y);
  Vec theta(posterior->dim());
  theta << p.theta_ref, std::log(p.spec.sigma);
  Vec grad(posterior->dim());
  for (auto _ : state) {
    benchmark::DoNotOptimize(posterior->log_density_and_grad(theta, grad));
    benchmark::DoNotOptimize(grad.data());
  }
}

void BM_PosteriorFloat32(benchmark::State& state, const std::string& id) {
  const Problem& p = problems().at(id);
  auto model = make_model(p.spec);
  model->set_precision(Precision::Float32);
  const auto posterior = std::make_shared<Posterior>(model, make_gaussian_likelihood(p.spec.sigma),
                                                     GaussianPrior::isotropic(model->num_params(), 1.0), p.X, p.y);
  Vec grad(posterior->dim());
  for (auto _ : state) {
    benchmark::DoNotOptimize(posterior->log_density_and_grad(p.theta_ref, grad));
    benchmark::DoNotOptimize(grad.data());
  }
}

}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  using namespace uqnn::bench;
  Eigen::setNbThreads(1);
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu_model", uqnn::bench::cpu_model());
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const auto dir = bench_data_dir(UQNN_DATA_DIR);
  if (!dir) {
    std::fprintf(stderr, "gradient_bench: no benchmark data in %s/bench; skipping the B1-B3 benchmarks\n", UQNN_DATA_DIR);
  } else {
    for (const auto& spec : problem_specs()) {
      problems().emplace(spec.id, load_problem(*dir, spec));
      benchmark::RegisterBenchmark((std::string("BM_Gradient<double>/") + spec.id).c_str(), BM_GradientDouble, std::string(spec.id))
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((std::string("BM_Gradient<float>/") + spec.id).c_str(), BM_GradientFloat, std::string(spec.id))
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((std::string("BM_PosteriorLearnedSigma/") + spec.id).c_str(), BM_PosteriorLearnedSigma,
                                   std::string(spec.id))
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((std::string("BM_PosteriorFloat32/") + spec.id).c_str(), BM_PosteriorFloat32, std::string(spec.id))
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
