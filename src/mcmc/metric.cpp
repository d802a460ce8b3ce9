#include "uqnn/mcmc/metric.hpp"

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

Metric make_unit_metric(Index dim) {
  require(dim > 0, "metric dimension", "> 0");
  return DiagonalMetric{Vec::Ones(dim), Vec::Ones(dim)};
}

const Metric& metric_or_unit(const Metric& metric, Index dim, Metric& unit_storage) {
  if (metric_dim(metric) != 0) return metric;
  unit_storage = make_unit_metric(dim);
  return unit_storage;
}

void archive_metric(StateArchive& archive, Metric& metric) {
  // The variant's index: 0 and 1 as the bool "dense" that earlier checkpoints stored.
  int kind = static_cast<int>(metric.index());
  archive.io(kind);
  if (archive.loading()) {
    require(kind >= 0 && kind <= 2, "checkpoint's metric kind", "0 (diagonal), 1 (dense) or 2 (low rank)");
    if (kind == 0) metric = DiagonalMetric{};
    else if (kind == 1) metric = DenseMetric{};
    else metric = LowRankMetric{};
  }
  if (auto* diagonal = std::get_if<DiagonalMetric>(&metric)) {
    archive.io(diagonal->inverse_metric), archive.io(diagonal->sqrt_metric);
  } else if (auto* dense = std::get_if<DenseMetric>(&metric)) {
    archive.io(dense->inverse_metric);
    if (archive.loading()) dense->inverse_llt.compute(dense->inverse_metric);
  } else {
    auto& low_rank = std::get<LowRankMetric>(metric);
    archive.io(low_rank.scale), archive.io(low_rank.vectors), archive.io(low_rank.values);
  }
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

Metric make_low_rank_metric(Vec scale, Mat vectors, Vec values) {
  require(scale.size() > 0, "low-rank metric scale", "non-empty");
  require(scale.allFinite() && (scale.array() > 0.0).all(), "low-rank metric scale", "finite and > 0 in every entry");
  require(vectors.rows() == scale.size() && vectors.cols() == values.size() && values.size() <= scale.size(),
          "low-rank metric vectors", "K x r with r = the number of values and r <= K");
  require(values.allFinite() && (values.array() > 0.0).all(), "low-rank metric values", "finite and > 0");
  // Rank 0 is valid (the diagonal describes every direction); maxCoeff of an empty matrix is not.
  require(vectors.allFinite() && (values.size() == 0 || (vectors.transpose() * vectors -
                                                          Mat::Identity(values.size(), values.size()))
                                                                 .cwiseAbs()
                                                                 .maxCoeff() <= 1e-8),
          "low-rank metric vectors", "orthonormal columns");
  return LowRankMetric{std::move(scale), std::move(vectors), std::move(values)};
}

namespace {

/// B^power v for B = I + U (diag(lambda) - 1) U^T: v + U ((lambda^power - 1) .* (U^T v)), since B's
/// eigenvalues are lambda in U's span and 1 in its complement.
Vec low_rank_power_times(const LowRankMetric& m, double power, const Vec& v) {
  if (m.values.size() == 0) return v;
  const Vec coefficients = (m.values.array().pow(power) - 1.0).matrix().cwiseProduct(m.vectors.transpose() * v);
  Vec out = v;
  out.noalias() += m.vectors * coefficients;
  return out;
}

/// out = S B S p, without allocating once the thread's buffers are sized: NUTS applies the metric
/// three times per leapfrog step (the position update, the kinetic energy, p sharp), and on a small
/// network (B1: K = 141, a 6 us gradient) allocations and extra passes would cost more than the
/// gradient.
void low_rank_velocity(const LowRankMetric& m, const Vec& p, Vec& out) {
  thread_local Vec coefficients;
  out = m.scale.cwiseProduct(p);
  if (m.values.size() > 0) {
    coefficients.noalias() = m.vectors.transpose() * out;
    coefficients.array() *= m.values.array() - 1.0;
    out.noalias() += m.vectors * coefficients;
  }
  out.array() *= m.scale.array();
}

}  // namespace

Index metric_dim(const Metric& metric) {
  if (const auto* low_rank = std::get_if<LowRankMetric>(&metric)) return low_rank->scale.size();
  if (const auto* dense = std::get_if<DenseMetric>(&metric)) return dense->inverse_metric.rows();
  return std::get<DiagonalMetric>(metric).inverse_metric.size();
}

bool is_dense(const Metric& metric) { return std::holds_alternative<DenseMetric>(metric); }

const char* metric_name(const Metric& metric) {
  if (std::holds_alternative<LowRankMetric>(metric)) return "low_rank_e";
  return is_dense(metric) ? "dense_e" : "diag_e";
}

Mat inverse_metric_matrix(const Metric& metric) {
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) return d->inverse_metric.asDiagonal();
  if (const auto* m = std::get_if<LowRankMetric>(&metric)) {
    Mat b = Mat::Identity(m->scale.size(), m->scale.size());
    b.noalias() += m->vectors * (m->values.array() - 1.0).matrix().asDiagonal() * m->vectors.transpose();
    return m->scale.asDiagonal() * b * m->scale.asDiagonal();
  }
  return std::get<DenseMetric>(metric).inverse_metric;
}

Vec inverse_metric_diagonal(const Metric& metric) {
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) return d->inverse_metric;
  if (const auto* m = std::get_if<LowRankMetric>(&metric)) {
    const Vec b = Vec::Ones(m->scale.size()) + m->vectors.array().square().matrix() * (m->values.array() - 1.0).matrix();
    return m->scale.array().square() * b.array();
  }
  return std::get<DenseMetric>(metric).inverse_metric.diagonal();
}

double kinetic_energy(const Metric& metric, const Vec& momentum) {
  if (const auto* d = std::get_if<DiagonalMetric>(&metric))
    return 0.5 * (momentum.array().square() * d->inverse_metric.array()).sum();
  Vec v;  // dense and low rank: p . M^-1 p (NUTS' leaves reuse the velocity instead, integrator.hpp)
  velocity(metric, momentum, v);
  return 0.5 * momentum.dot(v);
}

void velocity(const Metric& metric, const Vec& momentum, Vec& out) {
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) {
    out = d->inverse_metric.cwiseProduct(momentum);
    return;
  }
  if (const auto* m = std::get_if<LowRankMetric>(&metric)) {
    low_rank_velocity(*m, momentum, out);
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
  if (const auto* m = std::get_if<LowRankMetric>(&metric)) {
    // M = S^-1 B^-1 S^-1 = (S^-1 B^-1/2)(S^-1 B^-1/2)^T, B^-1/2 symmetric.
    out = low_rank_power_times(*m, -0.5, out).cwiseQuotient(m->scale);
    return;
  }
  // M^-1 = U^T U, p = U^-1 z has covariance (U^T U)^-1 = M (Stan's dense_e_metric::sample_p).
  std::get<DenseMetric>(metric).inverse_llt.matrixU().solveInPlace(out);
}

Vec inverse_metric_factor_times(const Metric& metric, const Vec& xi) {
  if (metric_dim(metric) == 0) return xi;
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) return d->inverse_metric.cwiseSqrt().cwiseProduct(xi);
  if (const auto* m = std::get_if<LowRankMetric>(&metric))
    return m->scale.cwiseProduct(low_rank_power_times(*m, 0.5, xi));  // L = S B^1/2
  return std::get<DenseMetric>(metric).inverse_llt.matrixL() * xi;
}

double metric_norm2(const Metric& metric, const Vec& r) {
  if (metric_dim(metric) == 0) return r.squaredNorm();
  if (const auto* d = std::get_if<DiagonalMetric>(&metric)) return (r.array().square() / d->inverse_metric.array()).sum();
  if (const auto* m = std::get_if<LowRankMetric>(&metric))
    return low_rank_power_times(*m, -0.5, r.cwiseQuotient(m->scale)).squaredNorm();  // |B^-1/2 S^-1 r|^2
  return std::get<DenseMetric>(metric).inverse_llt.matrixL().solve(r).squaredNorm();
}

bool is_turning(const Vec& p_sharp_minus, const Vec& p_sharp_plus, const Vec& rho) {
  return !(p_sharp_plus.dot(rho) > 0.0 && p_sharp_minus.dot(rho) > 0.0);
}

}  // namespace uqnn
