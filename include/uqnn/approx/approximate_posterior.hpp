#pragma once
/// @file ApproximatePosterior: the one interface of every optimisation-based solver (deep ensembles,
/// randomized MAP, VI, Laplace, SWAG, MC dropout).
///
/// Why one interface: every approximation ends as parameter vectors theta (network parameters
/// followed by likelihood extras), so predictions, metrics and figures go through the same path
/// as MCMC draws (predictive/predictive.hpp). References: laplace-torch's API (Daxberger et al.
/// 2021); DESIGN.md "Interfaces worth having".
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "uqnn/core/rng.hpp"

namespace uqnn {

class ApproximatePosterior {
 public:
  virtual ~ApproximatePosterior() = default;
  /// "gaussian", "diagonal_gaussian", "ensemble", "swag", "dropout".
  virtual std::string kind() const = 0;
  virtual Index dim() const = 0;
  /// n independent draws of theta (for an ensemble: see EnsemblePosterior::sample).
  virtual std::vector<Vec> sample(Rng& rng, Index n) const = 0;
  /// E[theta] under the approximation.
  virtual Vec mean() const = 0;
  /// Var[theta_k] under the approximation, per coordinate.
  virtual Vec marginal_variance() const = 0;
  /// True when log_prob is defined (a density w.r.t. Lebesgue measure on R^dim).
  virtual bool has_log_prob() const { return false; }
  /// log q(theta), normalised. Throws std::logic_error when the approximation has no density.
  virtual double log_prob(const Vec& /*theta*/) const {
    throw std::logic_error(kind() + " approximation has no density (log_prob undefined)");
  }
};

/// N(mean, (precision)^-1) with the precision given in full; factorised once by Cholesky (LLT).
/// Sampling solves L^T x = z (P = L L^T), so the covariance is never inverted explicitly.
class GaussianPosterior : public ApproximatePosterior {
 public:
  /// Throws std::runtime_error when `precision` is not symmetric positive definite.
  GaussianPosterior(Vec mean, const Mat& precision);
  std::string kind() const override { return "gaussian"; }
  Index dim() const override { return mean_.size(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override { return mean_; }
  Vec marginal_variance() const override { return variance_; }
  bool has_log_prob() const override { return true; }
  double log_prob(const Vec& theta) const override;
  /// The covariance P^-1 (forms a dim x dim matrix).
  Mat covariance() const;
  /// log det P.
  double log_det_precision() const { return log_det_precision_; }

 private:
  Vec mean_;
  Mat lower_;  ///< L with P = L L^T
  Vec variance_;
  double log_det_precision_ = 0.0;
};

/// Independent Gaussians N(mean_k, sd_k^2) (mean-field VI, diagonal Laplace).
class DiagonalGaussianPosterior : public ApproximatePosterior {
 public:
  DiagonalGaussianPosterior(Vec mean, Vec sd);
  std::string kind() const override { return "diagonal_gaussian"; }
  Index dim() const override { return mean_.size(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override { return mean_; }
  Vec marginal_variance() const override { return sd_.array().square(); }
  bool has_log_prob() const override { return true; }
  double log_prob(const Vec& theta) const override;
  const Vec& sd() const { return sd_; }

 private:
  Vec mean_, sd_;
};

/// An approximation over a subset of the coordinates, the others fixed at `base` (last-layer Laplace:
/// the layers below the last keep their MAP values). Draws are `base` with the active coordinates
/// replaced by the inner approximation's draws; the fixed coordinates have variance 0, so there is
/// no density on R^dim.
class SubsetPosterior : public ApproximatePosterior {
 public:
  /// `active`: distinct indices into `base`, one per coordinate of `inner`.
  SubsetPosterior(Vec base, IndexVec active, std::shared_ptr<const ApproximatePosterior> inner);
  std::string kind() const override { return "subset_" + inner_->kind(); }
  Index dim() const override { return base_.size(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override;
  Vec marginal_variance() const override;
  const IndexVec& active() const { return active_; }
  const ApproximatePosterior& inner() const { return *inner_; }

 private:
  Vec base_;
  IndexVec active_;
  std::shared_ptr<const ApproximatePosterior> inner_;
};

/// A Gaussian whose precision is block diagonal with Kronecker-factored blocks (K-FAC Laplace,
/// Ritter et al. 2018; laplace-torch's KronLaplace): for block b, with its parameters arranged as a
/// matrix X_b [rows, cols] (row-major in `index`), the precision in the joint eigenbasis of its two
/// factors G = U_G diag(g) U_G^T and A = U_A diag(a) U_A^T is diagonal,
///     P_b = (U_G (x) U_A) diag(Lambda_b) (U_G (x) U_A)^T,   Lambda_b(p, q) e.g. tau g_p a_q + delta,
/// so a draw is X_b = mean + U_G (Z ./ sqrt(Lambda_b)) U_A^T with Z standard normal
/// ((U_G (x) U_A) vec(Z) = vec(U_G Z U_A^T) for row-major vec), and
///     Var(X_b(o, j)) = sum_{p,q} U_G(o, p)^2 U_A(j, q)^2 / Lambda_b(p, q).
/// Coordinates in `diagonal_index` have independent precisions; coordinates in no block are fixed at
/// the mean (variance 0: then there is no density on R^dim).
class KroneckerGaussianPosterior : public ApproximatePosterior {
 public:
  struct Block {
    IndexVec index;         ///< theta index of X(o, j) at o * cols + j
    Mat output_vectors;     ///< U_G [rows, rows]
    Mat input_vectors;      ///< U_A [cols, cols]
    Mat precision;          ///< Lambda [rows, cols], > 0
  };
  KroneckerGaussianPosterior(Vec mean, std::vector<Block> blocks, IndexVec diagonal_index, Vec diagonal_precision);
  std::string kind() const override { return "kronecker_gaussian"; }
  Index dim() const override { return mean_.size(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override { return mean_; }
  Vec marginal_variance() const override;
  /// True when every coordinate is in a block or the diagonal part.
  bool has_log_prob() const override { return covers_all_; }
  double log_prob(const Vec& theta) const override;
  const std::vector<Block>& blocks() const { return blocks_; }

 private:
  Vec mean_;
  std::vector<Block> blocks_;
  IndexVec diagonal_index_;
  Vec diagonal_precision_;
  bool covers_all_ = false;
};

/// A uniform mixture of point masses at the members (deep ensembles, randomized MAP).
/// mean() and marginal_variance() are seed 001's ensemble formulas (variance with 1/(J-1)).
class EnsemblePosterior : public ApproximatePosterior {
 public:
  explicit EnsemblePosterior(std::vector<Vec> members);
  std::string kind() const override { return "ensemble"; }
  Index dim() const override { return members_.front().size(); }
  /// n == number of members: the members themselves, in order (no randomness); otherwise n
  /// members drawn uniformly with replacement.
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override;
  Vec marginal_variance() const override;
  const std::vector<Vec>& members() const { return members_; }

 private:
  std::vector<Vec> members_;
};

/// A uniform mixture of approximations (QUiNN's NN_SWAG and NN_Laplace are ensembles of J members
/// whose prediction picks a member, i.e. MultiSWAG; seed 001 / QUINN.md). Draw s comes from
/// component s mod J (stratified: every member contributes equally, with less variance than a
/// random member per draw).
class MixturePosterior : public ApproximatePosterior {
 public:
  explicit MixturePosterior(std::vector<std::shared_ptr<const ApproximatePosterior>> components);
  std::string kind() const override { return "mixture"; }
  Index dim() const override { return components_.front()->dim(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override;
  /// Law of total variance: mean of the components' variances + variance (1/J) of their means.
  Vec marginal_variance() const override;
  const std::vector<std::shared_ptr<const ApproximatePosterior>>& components() const { return components_; }

 private:
  std::vector<std::shared_ptr<const ApproximatePosterior>> components_;
};

}  // namespace uqnn
