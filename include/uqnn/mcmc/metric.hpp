#pragma once
/// @file Euclidean metrics for Hamiltonian samplers: kinetic energy K(p) = p^T M^-1 p / 2 with a
/// diagonal, dense or low-rank-plus-diagonal inverse metric M^-1, chosen at run time with a
/// std::variant.
///
/// Why a variant: HMC, NUTS and the step-size heuristic are written once against four free
/// functions (kinetic_energy, velocity, sample_momentum, is_turning); no class per combination.
/// References: Betancourt (2017), "A conceptual introduction to HMC", sec. 4; Stan's
/// diag_e_metric / dense_e_metric; seed 004 (HMC with a mass matrix); Seyboldt, Carlson &
/// Carpenter (2025), "Preconditioning HMC by minimizing Fisher divergence" (nutpie's low-rank metric).
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

/// M^-1 = S (I + U (diag(lambda) - 1) U^T) S with S = diag(scale) and U's r columns orthonormal:
/// a diagonal metric corrected in r directions (nutpie's low-rank mass matrix). Each operation costs
/// O(K r), and memory is K (r + 1): it whitens the strongly correlated directions of a posterior
/// whose dense metric would not fit (K = 100k).
struct LowRankMetric {
  Vec scale;     ///< S's diagonal; all > 0
  Mat vectors;   ///< U, K x r, orthonormal columns
  Vec values;    ///< lambda, r eigenvalues > 0 of the whitened covariance in U's directions
};

using Metric = std::variant<DiagonalMetric, DenseMetric, LowRankMetric>;

/// Saves or restores a metric: the diagonal with its cached square roots bit for bit, the dense
/// matrix with its factor recomputed (the same arithmetic on the same bits gives the same factor).
void archive_metric(StateArchive& archive, Metric& metric);

/// The unit metric of dimension `dim`.
Metric make_unit_metric(Index dim);
/// `metric` itself, or, when it is empty, the unit metric of dimension `dim` built into `unit_storage`
/// (a transition's metric without copying a given one).
const Metric& metric_or_unit(const Metric& metric, Index dim, Metric& unit_storage);
/// A diagonal metric; throws std::invalid_argument unless every entry is finite and > 0.
Metric make_diagonal_metric(Vec inverse_metric);
/// A dense metric; throws std::invalid_argument unless symmetric positive definite.
Metric make_dense_metric(Mat inverse_metric);
/// A low-rank-plus-diagonal metric; throws std::invalid_argument unless every scale and value is
/// finite and > 0 and `vectors` (K x r, r <= K) has orthonormal columns.
Metric make_low_rank_metric(Vec scale, Mat vectors, Vec values);

Index metric_dim(const Metric& metric);
bool is_dense(const Metric& metric);
/// "diag_e" or "dense_e" (Stan's names), or "low_rank_e".
const char* metric_name(const Metric& metric);
/// The inverse metric as a dense matrix (for reports and tests; K x K).
Mat inverse_metric_matrix(const Metric& metric);
/// The diagonal of the inverse metric (the posterior variances it assumes), in O(K r).
Vec inverse_metric_diagonal(const Metric& metric);

/// K(p) = p^T M^-1 p / 2.
double kinetic_energy(const Metric& metric, const Vec& momentum);
/// dK/dp = M^-1 p (Stan's dtau_dp, "p sharp"); writes into `out` (no allocation when sized).
void velocity(const Metric& metric, const Vec& momentum, Vec& out);
/// p ~ N(0, M); writes into `out`.
void sample_momentum(const Metric& metric, Rng& rng, Vec& out);
/// L xi for a factor L L^T = M^-1: a N(0, M^-1) draw from xi ~ N(0, I) (MALA's noise).
Vec inverse_metric_factor_times(const Metric& metric, const Vec& xi);
/// r^T M r = |L^-1 r|^2 (MALA's proposal density).
double metric_norm2(const Metric& metric, const Vec& r);
/// The generalised no-U-turn criterion (Betancourt 2017, sec. A.4.2): the trajectory with summed
/// momentum `rho` and end velocities p_sharp_minus, p_sharp_plus is turning unless both
/// p_sharp_minus . rho > 0 and p_sharp_plus . rho > 0. (The metric enters through p sharp.)
bool is_turning(const Vec& p_sharp_minus, const Vec& p_sharp_plus, const Vec& rho);

}  // namespace uqnn
