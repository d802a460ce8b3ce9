#pragma once
/// @file GaussianProcess: a zero-mean GP regression model (RBF, Matern 5/2 or linear kernel) with
/// its log marginal likelihood and gradient, and the type-II maximum-likelihood fit that gives the
/// "pre-trained GP prior" of functional SG-MCMC.
///
/// Why: fSGLD / fSGHMC (seed 002 sec. 3, App. D "pre-trained GP prior p(f)", App. E "pre-trained
/// on the training points for 100 epochs") place a GP prior on the network's outputs whose
/// hyperparameters are first fitted to the data by maximising
///     log p(y | X) = -1/2 y^T (K + s_n^2 I)^-1 y - 1/2 log|K + s_n^2 I| - n/2 log(2 pi)
/// (Rasmussen & Williams 2006, eq. 2.30), with gradient w.r.t. a hyperparameter t_j
///     d/dt_j log p = 1/2 tr((a a^T - (K + s_n^2 I)^-1) dK/dt_j),  a = (K + s_n^2 I)^-1 y   (eq. 5.9).
/// Every solve goes through a Cholesky factor (with jitter added when the factorisation fails).
/// Hyperparameters are optimised on the log scale (positivity without clamping).
/// Kernels, r^2 = sum_i (x_i - x'_i)^2 / l_i^2 (one shared l or one per input, "ARD"):
///     rbf:      k = s^2 exp(-r^2 / 2)
///     matern52: k = s^2 (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)
///     linear:   k = s^2 (1 + sum_i x_i x'_i / l_i^2)  (the prior of f = w.x + b with w_i ~ N(0, s^2 / l_i^2),
///               b ~ N(0, s^2); used to check functional priors against weight priors)
///     nngp:     k = s^2 K_NNGP(x / l, x' / l): the infinite-width limit of an MLP (nn/nngp.hpp). Its
///               input scale is its first layer's weight variance: l stays as constructed, and the
///               marginal likelihood's gradient w.r.t. log l is reported as 0 (the fit keeps l = 1).
/// References: Rasmussen & Williams (2006), "Gaussian Processes for Machine Learning", ch. 2, 4, 5;
/// seed 002 sec. 3.1 and App. E.
#include <Eigen/Cholesky>
#include <string>

#include "uqnn/core/rng.hpp"
#include "uqnn/core/types.hpp"
#include "uqnn/nn/nngp.hpp"

namespace uqnn {

/// Cholesky factor of K + jitter I: tries `jitter` (may be 0), then 10x larger values up to
/// 1e-2 times the mean diagonal (the GPyTorch / GPflow practice). `jitter_used` receives the
/// jitter that succeeded. Throws std::runtime_error when none does (K is then not a covariance).
Eigen::LLT<Mat> cholesky_with_jitter(const Mat& K, double jitter, double* jitter_used = nullptr);

enum class GpKernel { Rbf, Matern52, Linear, Nngp };

/// "rbf", "matern52", "linear", "nngp" -> GpKernel; throws InputError naming the valid values.
GpKernel parse_gp_kernel(const std::string& name);
std::string gp_kernel_name(GpKernel kernel);

/// Hyperparameters of a GaussianProcess.
struct GpHyperparameters {
  double signal_variance = 1.0;       ///< s^2 > 0
  Vec length_scales = Vec::Ones(1);   ///< l > 0: one shared value, or one per input dimension
  double noise_variance = 0.1;        ///< s_n^2 > 0 (observation noise of the marginal likelihood)
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
};

class GaussianProcess {
 public:
  /// rbf, matern52 or linear (nngp needs its architecture: the constructor below).
  GaussianProcess(GpKernel kernel, GpHyperparameters hyperparameters);
  /// The nngp kernel of `architecture`.
  GaussianProcess(NngpArchitecture architecture, GpHyperparameters hyperparameters);

  GpKernel kernel() const { return kernel_; }
  const GpHyperparameters& hyperparameters() const { return hyper_; }

  /// k(X1, X2), [n1, n2] for inputs [input_dim, n1] and [input_dim, n2] (no noise term).
  Mat covariance(const Mat& X1, const Mat& X2) const;
  /// k(X, X) (no noise term).
  Mat covariance(const Mat& X) const { return covariance(X, X); }

  /// [log s^2, log l_1 .. log l_k, log s_n^2]: the coordinates the fit optimises.
  Vec log_parameters() const;
  static GaussianProcess from_log_parameters(GpKernel kernel, const Vec& log_parameters);
  /// The same kernel (and nngp architecture) with other log parameters.
  GaussianProcess with_log_parameters(const Vec& log_parameters) const;
  const NngpArchitecture& nngp_architecture() const { return nngp_; }

  /// log p(y | X) of the targets y (one per column of X); when `grad` is given it receives the
  /// gradient w.r.t. log_parameters(). Throws std::invalid_argument on a shape mismatch.
  double log_marginal_likelihood(const Mat& X, const Vec& y, Vec* grad = nullptr) const;

  /// dk(X, X)/d log-parameter j (j indexes log_parameters() without the noise entry).
  Mat covariance_derivative(const Mat& X, Index j) const;

  std::string describe() const;

 private:
  GpKernel kernel_;
  GpHyperparameters hyper_;
  NngpArchitecture nngp_;  ///< used by the nngp kernel only
};

/// r^2 between the columns of A and B ([A.cols(), B.cols()]).
Mat squared_distances(const Mat& A, const Mat& B);

}  // namespace uqnn
