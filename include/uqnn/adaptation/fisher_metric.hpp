#pragma once
/// @file Metrics estimated from draw/gradient pairs by minimising the Fisher divergence between the
/// posterior and a Gaussian (Seyboldt, Carlson & Carpenter 2025, "Preconditioning Hamiltonian Monte
/// Carlo by minimizing Fisher divergence"; nutpie / nuts-rs `low_rank.rs`).
///
/// Why gradients: for a Gaussian posterior N(mu, Sigma) the scores g = grad log p have covariance
/// Sigma^-1, so the draws' covariance C_x and the scores' covariance C_g determine Sigma as the one
/// SPD matrix with Sigma C_g Sigma = C_x, the geometric mean of C_x and C_g^-1. With n draws it is
/// exact in the 2n-dimensional span of the draws and scores, where the draws alone give only n
/// directions; its diagonal version sqrt(var x / var g) converges in far fewer draws than var x.
#include "uqnn/mcmc/metric.hpp"

namespace uqnn {

struct LowRankMetricParams {
  /// Regularisation in the draws' and scores' span: C / gamma + I (nuts-rs' gamma, 1e-5).
  double gamma = 1e-5;
  /// Eigenvalues of the whitened covariance inside [1 / cutoff, cutoff] are set to 1 (the diagonal
  /// already describes those directions); nuts-rs' eigval_cutoff, 2.
  double eigval_cutoff = 2.0;
  void validate() const;
};

/// The diagonal inverse metric sqrt(var(x_i) / var(g_i)) from draws and gradients (K x n, one
/// column per draw, n >= 2). Coordinates that did not move or whose gradient did not change get 1;
/// entries are clamped to [1e-20, 1e20] as in nuts-rs.
Metric estimate_fisher_diagonal(const Mat& draws, const Mat& grads);

/// The low-rank-plus-diagonal inverse metric S (I + U (Lambda - 1) U^T) S: S^2 the Fisher diagonal;
/// U and Lambda the eigenpairs outside [1/cutoff, cutoff] of the geometric mean of the whitened
/// draws' and scores' covariances in their joint span (of dimension <= min(K, 2n)).
Metric estimate_low_rank_metric(const Mat& draws, const Mat& grads, const LowRankMetricParams& params = {});

}  // namespace uqnn
