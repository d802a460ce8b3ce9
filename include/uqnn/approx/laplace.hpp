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
///   structure full (K x K, Cholesky) | diag (K numbers) | kron (K-FAC, Ritter et al. 2018: per dense
///             layer, the GGN block of its parameters [W b] approximated as G (x) A with
///             A = sum_i a_i a_i^T over the layer's inputs (1 appended for the bias) and
///             G = (1/N) sum_i B_i^T Lambda_i B_i, B_i = d f(x_i) / d z (the layer's pre-activations);
///             exact for one example, or for a linear model with a Gaussian likelihood. Layers are
///             independent of each other; GGN curvature and an MLP only).
///   subset    all | last-layer (the output layer only, the layers below fixed at the MAP: laplace-torch's
///             default subset). Likelihood extras (a learned noise) stay in the subset.
/// The prior precision (minus the prior's Hessian diagonal) is added in every combination.
#include <memory>
#include <string>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

enum class CurvatureBackend { Exact, Fisher, GaussNewton };
enum class CurvatureStructure { Full, Diagonal, Kronecker };
enum class LaplaceSubset { All, LastLayer };
/// "exact" | "fisher" | "ggn"; throws InputError otherwise.
CurvatureBackend parse_curvature_backend(const std::string& name);
/// "full" | "diag" | "kron"; throws InputError otherwise.
CurvatureStructure parse_curvature_structure(const std::string& name);
/// "all" | "last-layer"; throws InputError otherwise.
LaplaceSubset parse_laplace_subset(const std::string& name);
std::string to_string(LaplaceSubset subset);
std::string to_string(CurvatureBackend backend);
std::string to_string(CurvatureStructure structure);

struct LaplaceParams {
  /// laplace-torch's default; QUiNN's la_type 'full' is Exact + Full
  CurvatureBackend backend = CurvatureBackend::GaussNewton;
  CurvatureStructure structure = CurvatureStructure::Full;
  LaplaceSubset subset = LaplaceSubset::All;
  double covariance_scale = 1.0;  ///< s in Sigma = (s H)^-1 (QUiNN's cov_scale)
  /// Upper limit on the memory of K x K matrices (the curvature, its Cholesky factor and inverse),
  /// checked before any is formed; default 2 GiB.
  double max_memory_bytes = 2.0 * 1024 * 1024 * 1024;
  void validate() const;
};

/// Bytes a full-structure Laplace needs for K parameters (three K x K double matrices).
double laplace_full_memory_bytes(Index num_params);

/// The coordinates of theta a Laplace approximation over `subset` covers, ascending (network
/// parameters, then every likelihood extra). last-layer: the network's output layer, which must be a
/// dense layer (a ".weight" block with one row per output, then its ".bias"); InputError otherwise.
IndexVec laplace_active_parameters(const Posterior& posterior, LaplaceSubset subset);

/// Curvature of -log p(theta | D) at theta (prior included), over the coordinates `active` (ascending;
/// nullptr: all K), [S x S] for S of them. Throws InputError when the estimated memory exceeds
/// `max_memory_bytes`.
Mat curvature_matrix(const Posterior& posterior, const Vec& theta, CurvatureBackend backend,
                     double max_memory_bytes = 2.0 * 1024 * 1024 * 1024, const IndexVec* active = nullptr);
/// Its diagonal (for exact: S Hessian-vector products, O(K) memory).
Vec curvature_diagonal(const Posterior& posterior, const Vec& theta, CurvatureBackend backend,
                       const IndexVec* active = nullptr);

/// The K-FAC factors of one dense layer's GGN block (likelihood only, no prior): its parameters
/// arranged as [W b] [rows = fan_out, cols = fan_in + 1], row-major in `index`, have the block
/// G (x) A (row-major vec: output outer, input inner).
struct KroneckerFactors {
  IndexVec index;
  Mat output_factor;  ///< G [rows, rows]
  Mat input_factor;   ///< A [cols, cols]
};
/// The factors of every layer of an Mlp whose parameters are in `active` (a layer is active whole
/// or not at all). Throws InputError for a model other than an Mlp with biases.
std::vector<KroneckerFactors> kronecker_factors(const Posterior& posterior, const Vec& theta, const IndexVec& active);
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
  Index iterations = 0;    ///< Newton steps
  bool converged = false;  ///< the gradient vanished, or no step raised the evidence further
};

/// One curvature structure (full, diagonal, Kronecker-factored), defined in laplace.cpp.
class LaplaceCurvature;

class LaplaceApproximation {
 public:
  /// Builds the curvature at `theta_map` (the caller's MAP) and factorises s H. Throws
  /// std::runtime_error with advice (diag / ggn / fisher) when H is not positive definite.
  LaplaceApproximation(std::shared_ptr<const Posterior> posterior, Vec theta_map, LaplaceParams params);
  ~LaplaceApproximation();

  /// N(theta*, (s H)^-1) as an ApproximatePosterior (GaussianPosterior or DiagonalGaussianPosterior).
  std::shared_ptr<const ApproximatePosterior> approximation() const { return approximation_; }
  const Vec& map() const { return map_; }
  /// The coordinates the approximation covers (laplace_active_parameters); the others stay at the MAP.
  const IndexVec& active() const { return active_; }
  /// H over the active coordinates (full structure), diag(H) as an S x 1 matrix (diagonal
  /// structure), or for kron the diagonal of the coordinates outside its layers (the extras).
  const Mat& curvature() const;
  /// Eigenvalues of P^-1/2 H P^-1/2 over the active coordinates (P the prior precision at the MAP,
  /// 1 where the prior is flat): near 1 where the data hardly constrain a direction. Exact for kron,
  /// and for full with at most 2000 coordinates; otherwise the diagonal's ratios.
  Vec curvature_over_prior() const;
  /// log p(D | theta*) + log p(theta*) + (S/2) log 2 pi - (1/2) log det H over the S active
  /// coordinates (the scale s is not applied): exact for a linear-Gaussian model with the exact
  /// Hessian. For a subset, log p(theta*) still includes the fixed coordinates' prior (a constant).
  double log_marginal_likelihood() const;
  /// Maximises log_marginal_likelihood over alpha (and the noise sd when `tune_noise`, which needs a
  /// fixed-sigma Gaussian likelihood) by Newton's method in (log alpha, log tau), where it is
  /// concave, on the eigenvalues of the likelihood curvature (its stationary point is MacKay's
  /// alpha q = gamma, sigma^2 = r^2 / (M - gamma)), then rebuilds the approximation with the tuned curvature
  /// H = (sigma0^2 / sigma^2) H_lik + alpha P. The MAP is not refitted (post-hoc, as laplace-torch).
  /// Needs a Gaussian prior. alpha scales the network's prior only; likelihood extras (a learned log
  /// sigma) keep their curvature block, which must be decoupled from the network's (ggn, or the
  /// diagonal structure). With `tune_noise` and a learned sigma (ggn only), the noise is treated as a
  /// hyperparameter: the centre's log sigma becomes the tuned value, sigma^2 = r^2 / (M - gamma)
  /// instead of the MAP's r^2 / M (gamma the effective number of parameters), so the draws predict
  /// with it.
  LaplaceTuning tune(bool tune_noise, Index max_iterations = 100);
  /// Sets the prior precision over the active network coordinates to alpha times the prior's
  /// (Gaussian priors; InputError otherwise), keeping the likelihood's curvature, and rebuilds the
  /// approximation and its log marginal likelihood: one step of a search over alpha on held-out data
  /// (laplace-torch's grid search, Daxberger et al. 2021). Not combined with tune().
  void set_prior_precision_factor(double alpha);
  double prior_precision_factor() const { return prior_factor_; }

 private:
  void factorise();

  std::shared_ptr<const Posterior> posterior_;
  Vec map_;
  LaplaceParams params_;
  IndexVec active_;
  std::unique_ptr<LaplaceCurvature> curvature_;  // H in the structure of params_.structure
  double log_joint_ = 0.0;  // log p(D | theta*) + log p(theta*) with the current prior / noise
  double log_det_ = 0.0;    // log det H
  double prior_factor_ = 1.0;  // alpha of set_prior_precision_factor
  std::shared_ptr<const ApproximatePosterior> approximation_;
};

}  // namespace uqnn
