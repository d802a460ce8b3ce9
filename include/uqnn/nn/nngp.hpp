#pragma once
/// @file The neural network Gaussian process (NNGP): the covariance of an MLP's output under its
/// weight prior when every hidden layer is infinitely wide (Neal 1996; Lee et al. 2018, "Deep
/// Neural Networks as Gaussian Processes", eq. 4; Matthews et al. 2018).
///
/// For weights W_l ~ N(0, sigma_w^2 / fan_in) and biases b_l ~ N(0, sigma_b^2), the pre-activations
/// of every layer are jointly Gaussian in the limit, with covariance
///     K^0(x, x') = sigma_b^2 + sigma_w^2 x.x' / d
///     K^l(x, x') = sigma_b^2 + sigma_w^2 E[phi(u) phi(v)],  (u, v) ~ N(0, [[K^{l-1}(x, x), K^{l-1}(x, x')],
///                                                                        [K^{l-1}(x, x'), K^{l-1}(x', x')]])
/// and the output (after `depth` hidden layers) has covariance K^depth. The expectation is in
/// closed form for
///     relu:      sqrt(k11 k22) (sin t + (pi - t) cos t) / (2 pi),  cos t = k12 / sqrt(k11 k22)
///                (the arc-cosine kernel of degree 1, Cho & Saul 2009)
///     sine:      exp(-(k11 + k22) / 2) sinh(k12)
///     identity:  k12
/// and by a two-dimensional trapezoid rule otherwise (tanh, sigmoid, silu: no closed form). Gauss-
/// Hermite with 32 x 32 nodes was off by 3e-6 at unit variance and 4e-3 at variance 5 (tanh
/// saturates: nearly a step at the nodes' scale); the trapezoid grids are spaced to the
/// activation's scale, 58 nodes per dimension at unit variance, error ~1e-12 (nngp_test.cpp).
#include <string>

#include "uqnn/core/types.hpp"
#include "uqnn/nn/activation.hpp"

namespace uqnn {

struct NngpArchitecture {
  Index depth = 2;                           ///< hidden layers (0: the linear model's kernel)
  Activation activation = Activation::Tanh;
  double weight_variance = 1.0;              ///< sigma_w^2 (weights ~ N(0, sigma_w^2 / fan_in))
  double bias_variance = 0.1;                ///< sigma_b^2
  /// Throws std::invalid_argument naming the field and its valid range.
  void validate() const;
  std::string describe() const;
};

/// sigma_w^2 = 2 for relu and silu (He et al. 2015: the pre-activation variance is kept through
/// depth), 1 otherwise.
double default_nngp_weight_variance(Activation activation);

/// E[phi(u) phi(v)] for (u, v) ~ N(0, [[k11, k12], [k12, k22]]) (k11, k22 > 0).
double nngp_pair_expectation(Activation activation, double k12, double k11, double k22);
/// The same by the 2-D trapezoid rule, whatever the activation (tests check it against the
/// closed forms).
double nngp_pair_expectation_by_quadrature(Activation activation, double k12, double k11, double k22);

/// k(X1, X2) [n1, n2] for inputs [d, n1] and [d, n2].
Mat nngp_covariance(const NngpArchitecture& architecture, const Mat& X1, const Mat& X2);
/// k(x, x) for each column of X (the diagonal of nngp_covariance(X, X), in O(n)).
Vec nngp_variance(const NngpArchitecture& architecture, const Mat& X);

}  // namespace uqnn
