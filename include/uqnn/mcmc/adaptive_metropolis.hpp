#pragma once
/// @file Adaptive Metropolis (Haario, Saksman & Tamminen 2001) exactly as seed 001:
/// proposal w' = w + xi, xi ~ N(0, Sigma_t), Sigma_t = gamma 2.4^2 / K (C_t + 1e-8 I), C_t the
/// running sample covariance of the chain history {w_0, ..., w_t} (recursive Welford update),
/// first set after t0 steps and refreshed every t_adapt steps; before that Sigma_0 (given, or
/// the same formula with C = I). Accept with min(1, p(w') / p(w)).
///
/// Why the default Sigma_0 = gamma 2.4^2/K I: it is the adaptive formula applied to a unit
/// covariance guess, a proper diagonal (QUiNN added 0.01 to every entry of a covariance, which is
/// not a diagonal and can be indefinite).
/// References: seed 001 ("Adaptive Metropolis"); Haario et al. (2001), Bernoulli 7(2), 223-242.
///
/// A diagonal proposal (`diagonal`) keeps K numbers where the dense one keeps K x K: the history's
/// variances and the proposal's sds. Throughout this file a covariance of shape [K, 1] is such a
/// diagonal (the variances), and its "Cholesky factor" [K, 1] the sds. A dense proposal costs K^2
/// per step and 8 K^2 bytes per matrix: 3.2 GB each at K = 20,000, where a network starts.
#include "uqnn/core/rng.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn {

/// The largest K for which a proposal is dense unless asked otherwise (AmCovariance::Auto) and
/// for which the start's inverse curvature is a full matrix: 8 MB per K x K matrix.
inline constexpr Index kAmDenseMaxDim = 1000;

struct AdaptiveMetropolisParams {
  double gamma = 0.1;     ///< scale factor gamma > 0
  long t0 = 100;          ///< first adaptation after t0 steps; >= 1
  long t_adapt = 1000;    ///< covariance refreshed every t_adapt steps after t0; >= 1
  double regularization = 1e-8;  ///< the 1e-8 added to C_t's diagonal; >= 0
  /// Initial proposal covariance Sigma_0 [K, K] ([K, 1] variances when diagonal); empty: gamma 2.4^2 / K I.
  Mat initial_covariance;
  /// A diagonal proposal: O(K) memory and time per step instead of O(K^2).
  bool diagonal = false;
  /// When false the history statistics keep updating but Sigma is frozen (after warmup).
  bool adapt = true;
  void validate(Index dim) const;
};

/// The chain state: position, log density, iteration count and the history statistics.
struct AdaptiveMetropolisState {
  Vec position;
  double log_density = 0.0;
  long iteration = 0;     ///< t: number of steps taken
  long history_count = 0; ///< draws in the running mean / covariance (w_0 .. w_t)
  Vec history_mean;
  Mat history_m2;         ///< sum of outer products of deviations (Welford); [K, 1] squares when diagonal
  Mat proposal_cholesky;  ///< lower factor L of Sigma_t (L L^T = Sigma_t); [K, 1] sds when diagonal
};

struct AdaptiveMetropolisInfo {
  double accept_prob = 0.0;
  bool is_accepted = false;
  bool is_divergent = false;       ///< the proposal's log density was not finite
  bool covariance_updated = false; ///< Sigma was refreshed at this step
  bool cholesky_fallback = false;  ///< Sigma needed jitter or the diagonal fallback
};

struct AdaptiveMetropolisStep {
  AdaptiveMetropolisState state;
  AdaptiveMetropolisInfo info;
};

class AdaptiveMetropolis {
 public:
  explicit AdaptiveMetropolis(const LogDensity& density) : density_(&density) {}
  /// Throws uqnn::InputError when log p(position) is not finite.
  AdaptiveMetropolisState init(const Vec& position, const AdaptiveMetropolisParams& params) const;
  AdaptiveMetropolisStep step(Rng& rng, const AdaptiveMetropolisState& state,
                              const AdaptiveMetropolisParams& params) const;
  const LogDensity& density() const { return *density_; }

 private:
  const LogDensity* density_;
};

/// The current sample covariance C_t of the history (divisor n - 1; zero when n < 2); [K, 1]
/// variances for a diagonal proposal.
Mat history_covariance(const AdaptiveMetropolisState& state);

/// The inverse curvature of -log p at `at`: the Hessian of -log p by central differences of the
/// gradient (2 K gradient evaluations, step 1e-4 max(1, |x_j|)), symmetrised, its eigenvalues
/// floored at 1e-8 of the largest (an indefinite Hessian away from a mode still gives a proper
/// covariance), then inverted. For K > `max_dense` only the diagonal is kept and returned as [K, 1]
/// variances (still 2 K evaluations, K memory). This is the Laplace covariance at a mode: the scale
/// and correlations an adaptive Metropolis proposal should start from.
Mat inverse_curvature(const LogDensity& density, const Vec& at, Index max_dense = kAmDenseMaxDim);

/// Lower Cholesky factor of a covariance with a clear fallback: plain LLT; if that fails, LLT of
/// S + tau I with tau = 1e-10, 1e-8, ..., 1e-2 times mean(diag S) (at least 1e-300); if all fail,
/// the diagonal sqrt(max(diag S, tiny)). `used_fallback` reports whether either fallback was needed.
/// A [K, 1] covariance (variances) gives [K, 1] sds, floored the same way.
Mat robust_cholesky(const Mat& covariance, bool* used_fallback = nullptr);

}  // namespace uqnn
