#pragma once
/// @file FunctionalPrior: a Gaussian-process prior over a network's outputs at measurement points,
/// log P0(f(X_M; theta)), and its gradient w.r.t. the network parameters.
///
/// Seed 002 sec. 3.1 (below eq. 5): the functional prior is evaluated on finite measurement points
/// X_M, where it is the multivariate Gaussian f^{X_M} ~ N(0, K), K = k(X_M, X_M) + jitter I, so
///     log P0 = -1/2 sum_o f_o^T K^-1 f_o - (O/2) log|K| - (O M / 2) log(2 pi)
/// (one independent GP per output o, same kernel), d log P0 / d f_o = -K^-1 f_o, and by the chain
/// rule grad_theta log P0 = J^T (-K^-1 f) (eq. 6's J^T grad_f log P0). J^T v is one reverse pass of
/// the network with output seeds v (Model::value_and_gradient), never the Jacobian itself.
/// K is factorised by Cholesky (cholesky_with_jitter): no explicit inverse. `jitter` (relative to
/// the signal variance) keeps K positive definite. With `include_noise` the GP's fitted noise
/// variance s_n^2 is added to the diagonal as well (like FBNN's injected noise, Sun et al. 2019):
/// smooth kernels on dense or repeated measurement points are nearly singular, the prior's
/// curvature K^-1 then reaches 1 / jitter, and SG-MCMC at the paper's step sizes diverges (we saw
/// it on the 1-D example); s_n^2 bounds it by 1 / s_n^2. Without it the prior is over the
/// noise-free f exactly.
/// References: seed 002 eqs. (5)-(6), (9); Rasmussen & Williams (2006) eq. (2.30) and A.4.
#include <Eigen/Cholesky>
#include <memory>

#include "uqnn/nn/model.hpp"
#include "uqnn/prob/gaussian_process.hpp"

namespace uqnn {

/// K = k(X_M, X_M) + jitter I factorised once, reusable while X_M does not change.
struct MeasurementCovariance {
  Mat points;                ///< X_M [input_dim, M]
  Eigen::LLT<Mat> cholesky;  ///< of K
  double log_determinant = 0.0;
  double jitter = 0.0;       ///< absolute jitter that was added (besides the noise variance, if included)
};

class FunctionalPrior {
 public:
  /// `relative_jitter` >= 0: jitter = relative_jitter * signal variance (raised 10x at a time if
  /// the factorisation fails). Default 1e-4. `include_noise`: add the GP's noise variance (see above).
  /// `output_means`: empty (zero mean) or one per network output.
  FunctionalPrior(std::shared_ptr<const Model> model, GaussianProcess process, double relative_jitter = 1e-4,
                  bool include_noise = false, Vec output_means = Vec());

  const Model& model() const { return *model_; }
  const GaussianProcess& process() const { return process_; }
  double relative_jitter() const { return relative_jitter_; }
  bool includes_noise() const { return include_noise_; }
  /// The constant prior mean of each output (empty: zero).
  const Vec& output_means() const { return output_means_; }

  /// Factorises the prior covariance at X_M.
  MeasurementCovariance factorize(const Mat& points) const;

  /// log N(F_o | m_o, K) summed over the outputs o, for outputs F [output_dim, M]; when `output_grad`
  /// is given it receives d/dF = -K^-1 (F - m)^T (transposed back to [output_dim, M]).
  double log_density_of_outputs(const Mat& outputs, const MeasurementCovariance& covariance, Mat* output_grad = nullptr) const;

  /// log P0(f(X_M; theta)) for network parameters `theta` (num_params of the model); its gradient
  /// w.r.t. theta is ADDED to `grad` (size num_params) when given. One forward and (with grad) one
  /// reverse pass of the network on X_M.
  double log_density(const Vec& theta, const MeasurementCovariance& covariance, Vec* grad = nullptr) const;
  /// The same with X_M factorised on the fly.
  double log_density(const Vec& theta, const Mat& points, Vec* grad = nullptr) const {
    return log_density(theta, factorize(points), grad);
  }

 private:
  std::shared_ptr<const Model> model_;
  GaussianProcess process_;
  double relative_jitter_;
  bool include_noise_;
  Vec output_means_;
};

}  // namespace uqnn
