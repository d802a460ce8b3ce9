// Time per gradient of the VI-HMC subspace log-density (seed 000 section 3.3) for tau in
// {1, 0.9, 0.75, 0.5, 0.3}, against the full gradient measured in the same run, on
//   - B3 (wide10k, 1-100-100-1 tanh, 1000 points) of data/bench/README.md at theta_ref;
//   - the Burgers DeepONet of seed 000 Table A.3 (branch 101 -> 8 x 100 -> 100, trunk 5 -> 8 x 100
//     -> 100, tanh; 172,401 parameters) on a query grid, with 20 input functions and a 26 x 26
//     grid (a reduced data size: the network is the paper's).
// Subsets: the N-hat most sensitive parameters (eq. 17/18) with sd = 0.1 for every parameter
// (only the Jacobian ranks them here: no VI run inside a benchmark), plus "slice" rows: the old
// path (full gradient, then slice) at tau = 0.3, and a structured subset (trunk fixed) for the
// DeepONet. Output: Google Benchmark's table, then a markdown table of CPU time per gradient and
// the ratio to the full gradient. CPU time, one thread.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <numbers>

#include <fmt/format.h>

#include "bench_problems.hpp"
#include "cpu_time_collector.hpp"
#include "uqnn/hybrid/sensitivity.hpp"
#include "uqnn/nn/deeponet.hpp"
#include "uqnn/prob/views.hpp"
#include "host.hpp"

namespace uqnn::bench {
namespace {

/// A LogDensity that hides the Posterior: SubspaceView then computes the full gradient and slices it.
class Opaque : public LogDensity {
 public:
  explicit Opaque(std::shared_ptr<const LogDensity> base) : base_(std::move(base)) {}
  Index dim() const override { return base_->dim(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override { return base_->log_density_and_grad(theta, grad); }

 private:
  std::shared_ptr<const LogDensity> base_;
};

struct Case {
  std::string problem, label;
  std::shared_ptr<const LogDensity> density;
  Vec point;
  Index sampled = 0;
};

std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}

void add_cases(const std::string& problem, const std::shared_ptr<const Posterior>& post, const Vec& theta,
               const SensitivityReport& report, const IndexVec& structured, const std::string& structured_label) {
  cases().push_back({problem, "full gradient", post, theta, post->dim()});
  for (double tau : {1.0, 0.9, 0.75, 0.5, 0.3}) {
    auto view = std::make_shared<SubspaceView>(post, report.sensitive_subset(tau), theta);
    cases().push_back({problem, fmt::format("tau {}", tau), view, view->restrict(theta), view->dim()});
  }
  auto slice = std::make_shared<SubspaceView>(std::make_shared<Opaque>(post), report.sensitive_subset(0.3), theta);
  cases().push_back({problem, "tau 0.3, full gradient sliced (old path)", slice, slice->restrict(theta), slice->dim()});
  if (!structured.empty()) {
    auto view = std::make_shared<SubspaceView>(post, structured, theta);
    cases().push_back({problem, structured_label, view, view->restrict(theta), view->dim()});
  }
}

void setup_b3() {
  const auto dir = bench_data_dir(UQNN_DATA_DIR);
  if (!dir) {
    std::printf("B3 skipped: data/bench not found\n");
    return;
  }
  const Problem p = load_problem(*dir, problem_specs()[2]);
  auto post = make_posterior(p);
  const Mlp& mlp = static_cast<const Mlp&>(post->model());
  const SensitivityReport report = compute_sensitivities(mlp, p.theta_ref, Vec::Constant(p.P(), 0.1), p.X, 250);
  // Structured: layer 1 fixed (its output cached), layers 2 and 3 sampled.
  IndexVec upper;
  for (Index i = 200; i < p.P(); ++i) upper.push_back(i);
  add_cases("B3 wide10k", post, p.theta_ref, report, upper, "layer 1 fixed, layers 2-3 sampled (structured)");
}

void setup_burgers() {
  DeepOnetSpec s;
  s.branch_input = 101;
  s.trunk_input = 5;
  s.branch_hidden = std::vector<Index>(8, 100);
  s.trunk_hidden = std::vector<Index>(8, 100);
  s.latent = 100;
  const Index points = 26 * 26, functions = 20;
  Rng rng(1, 0);
  Mat grid(5, points);  // trunk features of (x, t): t, sin 2 pi x, cos 2 pi x, sin 4 pi x, cos 4 pi x
  for (Index i = 0; i < 26; ++i)
    for (Index j = 0; j < 26; ++j) {
      const double x = i / 25.0, t = j / 25.0, w = 2 * std::numbers::pi * x;
      grid.col(i * 26 + j) << t, std::sin(w), std::cos(w), std::sin(2 * w), std::cos(2 * w);
    }
  auto net = std::make_shared<DeepOnet>(DeepOnet(s).with_query_grid(grid));
  const Mat U = Mat::NullaryExpr(101, functions, [&] { return rng.normal(); });
  const Mat Y = Mat::NullaryExpr(points, functions, [&] { return 0.1 * rng.normal(); });
  auto post = std::make_shared<Posterior>(net, make_gaussian_likelihood(1.0), GaussianPrior::isotropic(net->num_params(), 0.1), U, Y);
  const Vec theta = net->initial_params(rng);
  // Sensitivities in pairs mode (one (u, y) pair per row: a per-example Jacobian of one output)
  // on 64 random pairs: the grid model's Jacobian would have 676 rows per function.
  const DeepOnet pairs(s);
  Mat XY(106, 64);
  for (Index k = 0; k < 64; ++k) {
    XY.col(k).head(101) = U.col(k % functions);
    XY.col(k).tail(5) = grid.col(static_cast<Index>(rng.uniform_index(static_cast<std::uint64_t>(points))));
  }
  const SensitivityReport report = compute_sensitivities(pairs, theta, Vec::Constant(net->num_params(), 0.1), XY, 16);
  IndexVec branch_only;
  for (Index i = 0; i < net->trunk_offset(); ++i) branch_only.push_back(i);
  branch_only.push_back(net->bias_offset());
  add_cases("Burgers DeepONet", post, theta, report, branch_only, "trunk fixed, branch sampled (structured)");
}

void BM_Gradient(benchmark::State& state, const Case* c) {
  Vec grad(c->density->dim());
  for (auto _ : state) benchmark::DoNotOptimize(c->density->log_density_and_grad(c->point, grad));
  state.counters["sampled"] = static_cast<double>(c->sampled);
}


}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  using namespace uqnn::bench;
  setup_b3();
  setup_burgers();
  std::vector<std::string> names;
  for (const auto& c : cases()) {
    names.push_back(c.problem + " / " + c.label);
    benchmark::RegisterBenchmark(names.back().c_str(), BM_Gradient, &c)->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu_model", uqnn::bench::cpu_model());
  CpuTimeCollector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  std::printf("\n| problem | subset | sampled | CPU us / gradient | ratio to full gradient |\n| --- | --- | --- | --- | --- |\n");
  std::map<std::string, double> full;
  for (std::size_t k = 0; k < cases().size(); ++k) {
    const auto& c = cases()[k];
    const auto it = collector.cpu_time().find(names[k]);
    if (it == collector.cpu_time().end()) continue;
    if (c.label == "full gradient") full[c.problem] = it->second;
    const double base = full.count(c.problem) ? full[c.problem] : 0.0;
    std::printf("| %s | %s | %lld | %.1f | %s |\n", c.problem.c_str(), c.label.c_str(), static_cast<long long>(c.sampled), it->second,
                base > 0 ? fmt::format("{:.2f}", it->second / base).c_str() : "-");
  }
  return 0;
}
