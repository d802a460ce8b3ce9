#pragma once
/// @file The stiffest and the flattest direction of a log density at a point, by power iteration
/// with exact Hessian-vector products. Along an eigenvector u of the Hessian H of -log p, a Gaussian
/// posterior's variance is exactly 1 / (u' H u); along any unit u it is at least that (Cauchy-Schwarz
/// on u' H^-1 u), so the curvature gives a floor below which an approximation's spread is too narrow.
#include "uqnn/core/log_density.hpp"
#include "uqnn/core/types.hpp"

#include <vector>

namespace uqnn {

struct CurvatureDirection {
  double curvature = 0.0;  ///< u' H u / num_data, H the Hessian of -log p (the Rayleigh quotient)
  Vec direction;           ///< unit norm
};

/// The largest eigenvalue of H / num_data and its eigenvector: `iterations` power steps from a fixed
/// start, so the result is a deterministic function of theta. Throws std::runtime_error when the
/// curvature is zero or not finite.
CurvatureDirection stiffest_direction(const LogDensity& density, const Vec& theta, Index num_data, int iterations = 50);

/// The `count` smallest eigenvalues of H / num_data and their eigenvectors, flattest first, by
/// orthogonal (subspace) iteration on stiffest I - H / num_data and a Rayleigh-Ritz step. Not
/// converged (a small spectral gap), a direction's Rayleigh quotient is above the eigenvalue it
/// approximates, and 1 / (num_data * curvature) is still a floor of the posterior's variance along
/// it. A curvature <= 0 means -log p is not convex there.
std::vector<CurvatureDirection> flattest_directions(const LogDensity& density, const Vec& theta, Index num_data, double stiffest,
                                                    Index count, int iterations = 100);

}  // namespace uqnn
