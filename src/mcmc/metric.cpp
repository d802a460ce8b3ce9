#include "uqnn/mcmc/metric.hpp"

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

Metric make_unit_metric(Index dim) {
  require(dim > 0, "metric dimension", "> 0");
  return DiagonalMetric{Vec::Ones(dim), Vec::Ones(dim)};
}

void archive_metric(StateArchive& archive, Metric& metric) {
  bool dense = is_dense(metric);
  archive.io(dense);
  if (!dense) {
    if (archive.loading()) metric = DiagonalMetric{};
    auto& diagonal = std::get<DiagonalMetric>(metric);
    archive.io(diagonal.inverse_metric), archive.io(diagonal.sqrt_metric);
    return;
  }
  if (archive.loading()) metric = DenseMetric{};
  auto& matrix = std::get<DenseMetric>(metric);
  archive.io(matrix.inverse_metric);
  if (archive.loading()) matrix.inverse_llt.compute(matrix.inverse_metric);
}

Metric make_diagonal_metric(Vec inverse_metric) {
  require(inverse_metric.size() > 0, "inverse_metric", "non-empty");
  require(inverse_metric.allFinite() && (inverse_metric.array() > 0.0).all(), "inverse_metric",
          "finite and > 0 in every entry");
  Vec sqrt_metric = inverse_metric.array().rsqrt().matrix();
  return DiagonalMetric{std::move(inverse_metric), std::move(sqrt_metric)};
}

Metric make_dense_metric(Mat inverse_metric) {
  require(inverse_metric.rows() > 0 && inverse_metric.rows() == inverse_metric.cols(), "inverse_metric",
          "a non-empty square matrix");
  require(inverse_metric.allFinite(), "inverse_metric", "finite");
  require((inverse_metric - inverse_metric.transpose()).cwiseAbs().maxCoeff() <=
              1e-10 * (1.0 + inverse_metric.cwiseAbs().maxCoeff()),
          "inverse_metric", "symmetric");
  Eigen::LLT<Mat> llt(inverse_metric);
  require(llt.info() == Eigen::Success, "inverse_metric", "positive definite");
  return DenseMetric{std::move(inverse_metric), std::move(llt)};
}

Index metric_dim(const Metric& metric) {
  return std::visit([](const auto& m) { return static_cast<Index>(m.inverse_metric.rows()); }, metric);
}

bool is_dense(const Metric& metric) { return std::holds_alternative<DenseMetric>(metric); }

const char* metric_name(const Metric& metric) { return is_dense(metric) ? "dense_e" : "diag_e"; }

Mat inverse_metric_matrix(const Metric& metric) {
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) return d->inverse_metric.asDiagonal();
  return std::get<DenseMetric>(metric).inverse_metric;
}

double kinetic_energy(const Metric& metric, const Vec& momentum) {
  if (const auto* d = std::get_if<DiagonalMetric>(&metric))
    return 0.5 * (momentum.array().square() * d->inverse_metric.array()).sum();
  const auto& m = std::get<DenseMetric>(metric);
  return 0.5 * momentum.dot(m.inverse_metric * momentum);
}

void velocity(const Metric& metric, const Vec& momentum, Vec& out) {
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) {
    out = d->inverse_metric.cwiseProduct(momentum);
    return;
  }
  out.noalias() = std::get<DenseMetric>(metric).inverse_metric * momentum;
}

void sample_momentum(const Metric& metric, Rng& rng, Vec& out) {
  const Index n = metric_dim(metric);
  out.resize(n);
  for (Index i = 0; i < n; ++i) out[i] = rng.normal();
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) {
    out.array() *= d->sqrt_metric.array();
    return;
  }
  // M^-1 = U^T U, p = U^-1 z has covariance (U^T U)^-1 = M (Stan's dense_e_metric::sample_p).
  std::get<DenseMetric>(metric).inverse_llt.matrixU().solveInPlace(out);
}

bool is_turning(const Vec& p_sharp_minus, const Vec& p_sharp_plus, const Vec& rho) {
  return !(p_sharp_plus.dot(rho) > 0.0 && p_sharp_minus.dot(rho) > 0.0);
}

}  // namespace uqnn
