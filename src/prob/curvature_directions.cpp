#include "uqnn/prob/curvature_directions.hpp"

#include <cmath>
#include <stdexcept>

namespace uqnn {
namespace {

Vec fixed_start(Index dim) {
  Vec v = Vec::LinSpaced(dim, 1.0, 2.0);
  return v.normalized();
}

/// H v / num_data for H the Hessian of -log p.
Vec curvature_times(const LogDensity& density, const Vec& theta, const Vec& v, Index num_data) {
  return -density.hessian_vector_product(theta, v) / static_cast<double>(num_data);
}

}  // namespace

CurvatureDirection stiffest_direction(const LogDensity& density, const Vec& theta, Index num_data, int iterations) {
  Vec v = fixed_start(theta.size());
  double lambda = 0.0;
  for (int i = 0; i < iterations; ++i) {
    const Vec hv = curvature_times(density, theta, v, num_data);
    lambda = v.dot(hv);
    const double norm = hv.norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) break;
    v = hv / norm;
  }
  if (!(std::abs(lambda) > 0.0) || !std::isfinite(lambda))
    throw std::runtime_error("the curvature of the log density at these weights is zero or not finite");
  return {std::abs(lambda), v};
}

CurvatureDirection flattest_direction(const LogDensity& density, const Vec& theta, Index num_data, double stiffest, int iterations) {
  Vec v = fixed_start(theta.size());
  for (int i = 0; i < iterations; ++i) {
    const Vec shifted = stiffest * v - curvature_times(density, theta, v, num_data);
    const double norm = shifted.norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) break;
    v = shifted / norm;
  }
  return {v.dot(curvature_times(density, theta, v, num_data)), v};
}

}  // namespace uqnn
