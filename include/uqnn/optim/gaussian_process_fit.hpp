#pragma once
/// @file Type-II maximum likelihood for a GP prior's hyperparameters (Adam on their logs): the GP
/// lives in prob/, the optimiser here, so the fit sits in the training layer above both.
#include "uqnn/core/rng.hpp"
#include "uqnn/prob/dirichlet_gaussian_process.hpp"
#include "uqnn/prob/gaussian_process.hpp"

namespace uqnn {

/// Settings of the type-II maximum-likelihood fit (Adam on the log hyperparameters).
struct GpFitParams {
  GpKernel kernel = GpKernel::Rbf;
  NngpArchitecture nngp;                 ///< the network of the nngp kernel
  bool per_input_length_scales = false;  ///< ARD: one length scale per input dimension (not nngp)
  Index iterations = 100;                ///< Adam steps (seed 002 App. E: 100 epochs)
  double learning_rate = 0.1;            ///< Adam learning rate on the log scale
  Index max_points = 1000;               ///< fit on a random subset of at most this many points
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
};

/// Fits the hyperparameters to (X [input_dim, n], y [n]) by maximising log p(y | X) from
/// s^2 = var(y), l = median pairwise distance (per input: that input's sd), s_n^2 = var(y) / 10.
/// The subset (when n > max_points) and nothing else is drawn from `rng`. The best iterate (the
/// largest log marginal likelihood seen) is returned. nngp fits s^2 and s_n^2 only (its kernel
/// matrix is then computed once: s^2 = var(y) / mean k(x, x) to start).
GaussianProcess fit_gaussian_process(const Mat& X, const Vec& y, const GpFitParams& params, Rng& rng);

/// Pre-trains the Dirichlet-based GP of Milios et al. (2018) (prob/dirichlet_gaussian_process.hpp)
/// on inputs X [input_dim, n] and class labels [n] in {0, ..., num_classes - 1}: Adam on the
/// kernel's log hyperparameters (s^2 and the length scales; the noise is the label
/// transformation's), from the same start as fit_gaussian_process with s^2 = the pooled variance
/// of the centred transformed targets, on the same random subset of at most max_points points.
/// The best iterate is returned with the classes' prior means.
DirichletGaussianProcess fit_dirichlet_gaussian_process(const Mat& X, const Vec& labels, Index num_classes,
                                                        double alpha_epsilon, const GpFitParams& params, Rng& rng);

}  // namespace uqnn
