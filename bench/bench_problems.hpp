#pragma once
/// @file The benchmark problems B1-B3 of data/bench/README.md, loaded from data/bench at run
/// time (never copied into the repository). Used by bench/gradient_bench.cpp,
/// bench/samplers_bench.cpp, bench/approx_bench.cpp and tests/unit/bench/bench_golden_test.cpp.
///
/// The shared CSV files have no header: X is [n, input_dim] (one row per example, transposed here to
/// uqnn's [input_dim, n]); y, theta_ref, gradref and lpref hold one number per line.
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numbers>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "uqnn/data/dataset.hpp"
#include "uqnn/data/split.hpp"
#include "uqnn/data/standardizer.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn::bench {

/// Seconds on a POSIX clock (CLOCK_MONOTONIC for wall time, CLOCK_PROCESS_CPUTIME_ID for CPU time).
inline double clock_seconds(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct ProblemSpec {
  const char* id;
  const char* name;
  std::vector<Index> widths;  ///< [input, hidden..., output]
  double sigma;
};

/// The three problems of BENCHMARKS.md (1-10-10-1, 5-16-16-1, 1-100-100-1, all tanh).
inline const std::vector<ProblemSpec>& problem_specs() {
  static const std::vector<ProblemSpec> specs = {
      {"B1", "sine141", {1, 10, 10, 1}, 0.05},
      {"B2", "mlp385", {5, 16, 16, 1}, 0.1},
      {"B3", "wide10k", {1, 100, 100, 1}, 0.5},
  };
  return specs;
}

/// The spec of problem `id` (B1, B2 or B3); std::invalid_argument naming --problem otherwise.
inline const ProblemSpec& find_problem_spec(const std::string& id) {
  for (const auto& s : problem_specs())
    if (id == s.id) return s;
  throw std::invalid_argument("--problem: " + id + " is not one of B1, B2, B3");
}

struct Problem {
  ProblemSpec spec;
  Mat X;              ///< [input_dim, N]
  Mat y;              ///< [1, N]
  Vec theta_ref;      ///< where gradients are timed and checked (PyTorch nn.Linear order)
  Vec grad_ref;       ///< gradient of the log posterior at theta_ref (PyTorch float64)
  double lp_ref = 0;  ///< log posterior at theta_ref, constants dropped
  Vec theta0;         ///< a MAP-like chain start (Adam + L-BFGS; BENCHMARKS.md)
  Mat X_test;         ///< [input_dim, 5]: the test inputs where predictive means are compared
  Index N() const { return X.cols(); }
  Index P() const { return theta_ref.size(); }
};

/// All numbers of a header-less CSV file in reading order; `columns` receives the field count of the
/// first line. Throws std::runtime_error naming the file when it is missing or malformed.
inline std::vector<double> read_numbers(const std::filesystem::path& path, Index* columns = nullptr) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::vector<double> values;
  std::string line;
  Index first_columns = -1;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::stringstream fields(line);
    std::string field;
    Index count = 0;
    while (std::getline(fields, field, ',')) {
      std::size_t used = 0;
      const double v = std::stod(field, &used);
      if (!std::isfinite(v)) throw std::runtime_error(path.string() + ": non-finite value '" + field + "'");
      values.push_back(v);
      ++count;
    }
    if (first_columns < 0) first_columns = count;
    else if (count != first_columns) throw std::runtime_error(path.string() + ": ragged rows");
  }
  if (values.empty()) throw std::runtime_error(path.string() + ": empty");
  if (columns) *columns = first_columns;
  return values;
}

inline Vec to_vec(const std::vector<double>& v) { return Eigen::Map<const Vec>(v.data(), static_cast<Index>(v.size())); }

/// The benchmark problems' directory (data/bench of the repository), or nothing when it is absent.
inline std::optional<std::filesystem::path> bench_data_dir(const std::filesystem::path& data_dir) {
  const auto dir = data_dir / "bench";
  if (!std::filesystem::exists(dir / "B1_X.csv")) return std::nullopt;
  return dir;
}

/// Loads problem `spec` from `dir` (e.g. data/bench); checks the sizes against the spec.
inline Problem load_problem(const std::filesystem::path& dir, const ProblemSpec& spec) {
  const std::string prefix = std::string(spec.id) + "_";
  Problem p;
  p.spec = spec;
  Index cols = 0;
  const auto x = read_numbers(dir / (prefix + "X.csv"), &cols);
  if (cols != spec.widths.front()) throw std::runtime_error(prefix + "X.csv: unexpected column count");
  const Index n = static_cast<Index>(x.size()) / cols;
  // Row-major [n, d] in the file is column-major [d, n]: exactly uqnn's input layout.
  p.X = Eigen::Map<const Mat>(x.data(), cols, n);
  const Vec y = to_vec(read_numbers(dir / (prefix + "y.csv")));
  if (y.size() != n) throw std::runtime_error(prefix + "y.csv: length differs from X");
  p.y = y.transpose();
  p.theta_ref = to_vec(read_numbers(dir / (prefix + "theta_ref.csv")));
  p.grad_ref = to_vec(read_numbers(dir / (prefix + "gradref.csv")));
  p.lp_ref = read_numbers(dir / (prefix + "lpref.csv")).at(0);
  p.theta0 = to_vec(read_numbers(dir / (prefix + "theta0.csv")));
  const auto x_test = read_numbers(dir / (prefix + "Xtest.csv"), &cols);
  if (cols != spec.widths.front()) throw std::runtime_error(prefix + "Xtest.csv: unexpected column count");
  p.X_test = Eigen::Map<const Mat>(x_test.data(), cols, static_cast<Index>(x_test.size()) / cols);
  Index P = 0;
  for (std::size_t l = 1; l < spec.widths.size(); ++l) P += spec.widths[l] * spec.widths[l - 1] + spec.widths[l];
  if (p.theta_ref.size() != P || p.grad_ref.size() != P || p.theta0.size() != P)
    throw std::runtime_error(prefix + "theta_ref/gradref/theta0: expected " + std::to_string(P) + " entries");
  return p;
}

/// The Mlp of the problem: tanh hidden layers, linear output.
inline std::shared_ptr<Mlp> make_model(const ProblemSpec& spec) {
  std::vector<Index> hidden(spec.widths.begin() + 1, spec.widths.end() - 1);
  return std::make_shared<Mlp>(MlpSpec{spec.widths.front(), hidden, spec.widths.back(), Activation::Tanh, InitScheme::Glorot});
}

/// The posterior of BENCHMARKS.md: Gaussian likelihood with fixed sigma, N(0, 1) prior on every
/// parameter; the network's passes in `precision`.
inline std::shared_ptr<Posterior> make_posterior(const Problem& p, Precision precision = Precision::Float64) {
  auto model = make_model(p.spec);
  model->set_precision(precision);
  return std::make_shared<Posterior>(model, make_gaussian_likelihood(p.spec.sigma),
                                     GaussianPrior::isotropic(model->num_params(), 1.0), p.X, p.y);
}

/// Normalising constants our log posterior includes and BENCHMARKS.md's drops:
/// N (-log sigma - log(2 pi) / 2) from the likelihood and P (-log(2 pi) / 2) from the N(0, 1) prior.
inline double log_normalising_constants(const Problem& p) {
  const double half_log_2pi = 0.5 * std::log(2.0 * std::numbers::pi);
  return static_cast<double>(p.N()) * (-std::log(p.spec.sigma) - half_log_2pi) - static_cast<double>(p.P()) * half_log_2pi;
}

/// Multiply-adds of the three GEMMs of one value + gradient (forward, weight gradient, input
/// cotangent), in FLOPs: 3 x 2 x N x sum(fan_in x fan_out) (BENCHMARKS.md).
inline double gemm_flops(const ProblemSpec& spec, Index N) {
  double macs = 0;
  for (std::size_t l = 1; l < spec.widths.size(); ++l) macs += static_cast<double>(spec.widths[l] * spec.widths[l - 1]);
  return 3.0 * 2.0 * static_cast<double>(N) * macs;
}

/// Number of tanh evaluations of one forward pass: N x (sum of the hidden widths).
inline double tanh_count(const ProblemSpec& spec, Index N) {
  double h = 0;
  for (std::size_t l = 1; l + 1 < spec.widths.size(); ++l) h += static_cast<double>(spec.widths[l]);
  return static_cast<double>(N) * h;
}

/// Seed 003's Table 3 training set: the standardised 80% of split 0 (examples/dei_table3.cpp's).
inline Dataset dei_training_set(const Dataset& data) {
  SplitParams sp;
  sp.train_fraction = 0.8;
  sp.validation_fraction = 0.0;
  sp.test_fraction = 0.2;
  sp.seed = 0;
  const Dataset train = data.subset(random_split(data.size(), sp).train);
  return Standardizer::fit(train).transform(train);
}

/// Seed 003's Table 3 posterior on `train`: a 2x16 ReLU network whose outputs are mean and log
/// sigma (heteroscedastic Gaussian), N(0, 1) prior, in `precision`.
inline std::shared_ptr<Posterior> dei_posterior(const Dataset& train, Precision precision) {
  const auto likelihood = make_heteroscedastic_likelihood();
  auto model = std::make_shared<Mlp>(MlpSpec{train.input_dim(), {16, 16}, likelihood->model_outputs(1), Activation::Relu, InitScheme::He});
  model->set_precision(precision);
  return std::make_shared<Posterior>(model, likelihood, GaussianPrior::isotropic(model->num_params(), 1.0), train.inputs,
                                     train.targets);
}

}  // namespace uqnn::bench
