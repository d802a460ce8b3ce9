#pragma once
/// @file SWAG (Maddox et al. 2019; seed 001, "SWAG (NN_SWAG)").
///
/// From pre-trained weights w_0 (snapshot 0), T further SGD steps on the *same* loss as the
/// pre-training, the negative log posterior per datum (QUiNN's code switches to MSE here: defect 1);
/// every c-th step w_t updates the running moments
///   wbar_{n+1} = (n wbar_n + w_t) / (n + 1),  w2bar_{n+1} = (n w2bar_n + w_t^2) / (n + 1)
/// and the deviation w_t - wbar (after the update) joins the last-k list, the columns of D.
/// Sigma_diag = w2bar - wbar^2, clamped at 0 explicitly: rounding can make it slightly negative,
/// and QUiNN's sqrt then gives NaN; the number clamped is reported.
/// Sampling (seed 001): w = wbar + (1/sqrt 2) sqrt(Sigma_diag) z1 + (1/sqrt 2) D z2 / sqrt(k - 1),
/// z2 of the size of D's columns k (fewer than the rank when fewer snapshots were taken; QUiNN draws
/// the rank), never forming the K x K covariance and never changing the stored mean (QUiNN defect 1).
#include <memory>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/optim/epoch_checkpoint.hpp"
#include "uqnn/optim/objective.hpp"
#include "uqnn/core/log_density.hpp"
#include "uqnn/prob/curvature_directions.hpp"

namespace uqnn {

struct SwagParams {
  Index steps = 12;           ///< T (QUiNN n_steps)
  Index snapshot_every = 1;   ///< c
  Index rank = 10;            ///< k, the number of deviation columns kept
  bool low_rank = true;       ///< false: diagonal only (QUiNN cov_type != 'lowrank')
  double learning_rate = 0.01;  ///< constant SGD step size (QUiNN lr_swag default 0.1, its app 0.01);
                                ///< the CLI's default is swag_default_learning_rate()
  double momentum = 0.0;
  Index batch_size = 0;       ///< 0 = full batch (QUiNN: full batch)
  /// The SGD steps' checkpoints (moments, deviations, iterate, momentum, random stream), counted in
  /// steps; none by default (issue 17).
  EpochCheckpoint checkpoint;
  void validate() const;
};

class SwagPosterior : public ApproximatePosterior {
 public:
  /// `deviations` [K, k]; empty (0 columns) gives the diagonal variant.
  SwagPosterior(Vec mean, Vec diagonal_variance, Mat deviations);
  std::string kind() const override { return "swag"; }
  Index dim() const override { return mean_.size(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override { return mean_; }
  /// (1/2) Sigma_diag + (1/2) rowwise ||D||^2 / (k - 1): the variance of seed 001's sampler.
  Vec marginal_variance() const override;
  const Vec& diagonal_variance() const { return diagonal_variance_; }
  const Mat& deviations() const { return deviations_; }

 private:
  Vec mean_, diagonal_variance_;
  Mat deviations_;
};

struct SwagResult {
  std::shared_ptr<const SwagPosterior> approximation;
  Index num_snapshots = 0;          ///< including w_0
  Index num_clamped_variances = 0;  ///< entries of w2bar - wbar^2 that were < 0 and set to 0
  std::vector<double> loss;         ///< loss of each SGD step
  bool interrupted = false;         ///< a stop signal ended the SGD steps early (core/stop_signal.hpp)
  Index resumed_at_step = 0;        ///< > 0: the steps went on from a checkpoint after this many
};

/// The default SWAG learning rate 1 / lambda_max, lambda_max the largest eigenvalue of the Hessian of
/// -log p / N at `theta` (power iteration with exact Hessian-vector products, 50 steps from a fixed
/// start). Why: SGD on a quadratic is stable for lr < 2 / lambda_max, and the stiff directions of a
/// small-noise posterior make any fixed default (QUiNN's 0.01 on MSE) diverge on one data set and
/// stand still on another; half the stability limit keeps the iterates moving but bounded.
double swag_default_learning_rate(const LogDensity& density, const Vec& theta, Index num_data);

/// Constant-rate SGD as approximate Bayesian inference (Mandt, Hoffman & Blei 2017, Theorem 1): on a
/// mean loss over N examples with minibatches of S, the iterates' stationary covariance is closest in
/// KL to the posterior's at the rate eps* = 2 (S / N) D / tr(C), C the covariance of the per-example
/// gradients at the optimum (estimated here on up to 512 rows, a fixed sample drawn from `rng`). The
/// rate returned is eps* capped at 1 / lambda_max (SGD on a quadratic is stable below 2 / lambda_max).
double swag_minibatch_learning_rate(const Objective& objective, const Vec& theta, Index batch_size, double lambda_max, Rng& rng);

/// Runs the SGD phase from the pre-trained `theta` on `objective`; minibatches from `rng`.
SwagResult fit_swag(const Objective& objective, const Vec& theta, const SwagParams& params, Rng& rng);

}  // namespace uqnn
