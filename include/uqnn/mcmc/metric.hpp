#pragma once
/// @file Euclidean metrics for Hamiltonian samplers: kinetic energy K(p) = p^T M^-1 p / 2 with a
/// diagonal or dense inverse metric M^-1, chosen at run time with a std::variant.
///
/// Why a variant: HMC, NUTS and the step-size heuristic are written once against four free
/// functions (kinetic_energy, velocity, sample_momentum, is_turning); no class per combination.
/// References: Betancourt (2017), "A conceptual introduction to HMC", sec. 4; Stan's
/// diag_e_metric / dense_e_metric; seed 004 (HMC with a mass matrix).
#include <variant>

#include "uqnn/core/rng.hpp"
#include "uqnn/core/state_archive.hpp"

namespace uqnn {

/// M^-1 = diag(inverse_metric). The unit metric is inverse_metric = ones.
struct DiagonalMetric {
  Vec inverse_metric;  ///< diagonal of M^-1 (the estimated posterior variances); all > 0
  Vec sqrt_metric;     ///< 1 / sqrt(inverse_metric), cached for sample_momentum
};

/// Dense M^-1 (an estimated posterior covariance), with its Cholesky factor cached.
struct DenseMetric {
  Mat inverse_metric;            ///< symmetric positive definite
  Eigen::LLT<Mat> inverse_llt;   ///< M^-1 = U^T U
};

using Metric = std::variant<DiagonalMetric, DenseMetric>;

/// The unit metric of dimension `dim`.
/// Saves or restores a metric: the diagonal with its cached square roots bit for bit, the dense
/// matrix with its factor recomputed (the same arithmetic on the same bits gives the same factor).
void archive_metric(StateArchive& archive, Metric& metric);

Metric make_unit_metric(Index dim);
/// A diagonal metric; throws std::invalid_argument unless every entry is finite and > 0.
Metric make_diagonal_metric(Vec inverse_metric);
/// A dense metric; throws std::invalid_argument unless symmetric positive definite.
Metric make_dense_metric(Mat inverse_metric);

Index metric_dim(const Metric& metric);
bool is_dense(const Metric& metric);
/// "diag_e" or "dense_e" (Stan's names).
const char* metric_name(const Metric& metric);
/// The inverse metric as a dense matrix (for reports).
Mat inverse_metric_matrix(const Metric& metric);

/// K(p) = p^T M^-1 p / 2.
double kinetic_energy(const Metric& metric, const Vec& momentum);
/// dK/dp = M^-1 p (Stan's dtau_dp, "p sharp"); writes into `out` (no allocation when sized).
void velocity(const Metric& metric, const Vec& momentum, Vec& out);
/// p ~ N(0, M); writes into `out`.
void sample_momentum(const Metric& metric, Rng& rng, Vec& out);
/// The generalised no-U-turn criterion (Betancourt 2017, sec. A.4.2): the trajectory with summed
/// momentum `rho` and end velocities p_sharp_minus, p_sharp_plus is turning unless both
/// p_sharp_minus . rho > 0 and p_sharp_plus . rho > 0. (The metric enters through p sharp.)
bool is_turning(const Vec& p_sharp_minus, const Vec& p_sharp_plus, const Vec& rho);

}  // namespace uqnn
