#pragma once
/// @file Laplace approximation (seed 001, "Laplace Approximation (NN_Laplace)"; MacKay 1992):
/// q(theta) = N(theta*, (s H)^-1) at the MAP theta*, with H the curvature of -log p(theta | D)
/// *including the prior precision* (QUiNN adds none: defect 2).
///
/// Composed as curvature backend x structure (DESIGN.md), not one class per combination:
///   backend   exact  - the exact Hessian, column k = -H_post e_k from Posterior::hessian_vector_product
///             fisher - seed 001's diagonal empirical Fisher, sum_i g_i g_i^T with g_i the gradient of
///                      the per-example loss L_i = -log p(y_i | theta). Seed 001 writes the mean
///                      (1/N) sum_i; we use N times it, the curvature of the summed loss the exact
///                      Hessian is, so that diag and full agree in scale (QUiNN defect 2: they differ by N).
///             ggn    - generalized Gauss-Newton sum_i J_i^T Lambda_i J_i, Lambda_i = -d^2 log p(y_i|f)/df^2
///                      (eigenvalues clipped at 0, so PSD); likelihood extras (a learned log sigma) get
///                      their expected Fisher information (2 per observation), with no cross terms, so
///                      the curvature stays positive definite with a learned noise. The default, as in
///                      laplace-torch.
///   structure full (K x K, Cholesky) | diag (K numbers).
/// The prior precision (minus the prior's Hessian diagonal) is added in every combination.
#include <memory>
#include <string>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

enum class CurvatureBackend { Exact, Fisher, GaussNewton };
enum class CurvatureStructure { Full, Diagonal };
/// "exact" | "fisher" | "ggn"; throws InputError otherwise.
CurvatureBackend parse_curvature_backend(const std::string& name);
/// "full" | "diag"; throws InputError otherwise.
CurvatureStructure parse_curvature_structure(const std::string& name);
std::string to_string(CurvatureBackend backend);
std::string to_string(CurvatureStructure structure);

struct LaplaceParams {
  /// laplace-torch's default; QUiNN's la_type 'full' is Exact + Full
  CurvatureBackend backend = CurvatureBackend::GaussNewton;
  CurvatureStructure structure = CurvatureStructure::Full;
  double covariance_scale = 1.0;  ///< s in Sigma = (s H)^-1 (QUiNN's cov_scale)
  /// Upper limit on the memory of K x K matrices (the curvature, its Cholesky factor and inverse),
  /// checked before any is formed; default 2 GiB.
  double max_memory_bytes = 2.0 * 1024 * 1024 * 1024;
  void validate() const;
};

/// Bytes a full-structure Laplace needs for K parameters (three K x K double matrices).
double laplace_full_memory_bytes(Index num_params);

/// Curvature of -log p(theta | D) at theta (prior included), full K x K. Throws InputError when the
/// estimated memory exceeds `max_memory_bytes`.
Mat curvature_matrix(const Posterior& posterior, const Vec& theta, CurvatureBackend backend,
                     double max_memory_bytes = 2.0 * 1024 * 1024 * 1024);
/// Its diagonal (for exact: K Hessian-vector products, O(K) memory).
Vec curvature_diagonal(const Posterior& posterior, const Vec& theta, CurvatureBackend backend);
/// The prior precision diagonal -d^2 log p(theta)/d theta^2 (network prior and the extras' prior).
Vec prior_precision_diagonal(const Posterior& posterior, const Vec& theta);

/// Up to `steps` Newton steps theta <- theta + H^-1 grad log p with the exact Hessian (each accepted
/// only if log p increases, halving otherwise). Exact in one step for a linear-Gaussian model; polishes
/// an Adam MAP so the Laplace centre is a stationary point. Returns the refined theta.
Vec refine_map_newton(const Posterior& posterior, Vec theta, Index steps, double max_memory_bytes = 2.0 * 1024 * 1024 * 1024);

/// Result of maximising the Laplace marginal likelihood over a prior-precision factor alpha
/// (prior precision -> alpha * prior precision) and, for a fixed-sigma Gaussian, the noise sd.
struct LaplaceTuning {
  double prior_precision_factor = 1.0;
  double noise_sd = 0.0;  ///< tuned sd in the posterior's (standardised) units; 0 when not tuned
  double log_marginal_likelihood_before = 0.0, log_marginal_likelihood_after = 0.0;
  Index iterations = 0;
};

class LaplaceApproximation {
 public:
  /// Builds the curvature at `theta_map` (the caller's MAP) and factorises s H. Throws
  /// std::runtime_error with advice (diag / ggn / fisher) when H is not positive definite.
  LaplaceApproximation(std::shared_ptr<const Posterior> posterior, Vec theta_map, LaplaceParams params);

  /// N(theta*, (s H)^-1) as an ApproximatePosterior (GaussianPosterior or DiagonalGaussianPosterior).
  std::shared_ptr<const ApproximatePosterior> approximation() const { return approximation_; }
  const Vec& map() const { return map_; }
  /// H (full structure) or diag(H) as a K x 1 matrix (diagonal structure).
  const Mat& curvature() const { return curvature_; }
  /// log p(D | theta*) + log p(theta*) + (K/2) log 2 pi - (1/2) log det H (the scale s is not applied):
  /// exact for a linear-Gaussian model with the exact Hessian.
  double log_marginal_likelihood() const;
  /// Maximises log_marginal_likelihood over alpha (and the noise sd when `tune_noise`, which needs a
  /// fixed-sigma Gaussian likelihood) with MacKay's fixed-point updates on the eigenvalues of the
  /// likelihood curvature, then rebuilds the approximation with the tuned curvature
  /// H = (sigma0^2 / sigma^2) H_lik + alpha P. The MAP is not refitted (post-hoc, as laplace-torch).
  /// Needs a Gaussian prior. alpha scales the network's prior only; likelihood extras (a learned log
  /// sigma) keep their curvature block, which must be decoupled from the network's (ggn, or the
  /// diagonal structure). With `tune_noise` and a learned sigma (ggn only), the noise is treated as a
  /// hyperparameter: the centre's log sigma becomes the tuned value, sigma^2 = r^2 / (M - gamma)
  /// instead of the MAP's r^2 / M (gamma the effective number of parameters), so the draws predict
  /// with it.
  LaplaceTuning tune(bool tune_noise, Index max_iterations = 1000);

 private:
  void factorise();

  std::shared_ptr<const Posterior> posterior_;
  Vec map_;
  LaplaceParams params_;
  Mat curvature_;             // full H, or the diagonal as a column
  double log_joint_ = 0.0;    // log p(D | theta*) + log p(theta*) with the current prior / noise
  double log_det_ = 0.0;      // log det H
  std::shared_ptr<const ApproximatePosterior> approximation_;
};

}  // namespace uqnn
