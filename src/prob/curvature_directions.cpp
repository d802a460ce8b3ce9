#include "uqnn/prob/curvature_directions.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
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

std::vector<CurvatureDirection> flattest_directions(const LogDensity& density, const Vec& theta, Index num_data, double stiffest,
                                                    Index count, int iterations) {
  const Index K = theta.size(), m = std::min(count, K);
  // A fixed, well-spread start: column j varies as cos(j x) over the coordinates.
  Mat V(K, m);
  for (Index j = 0; j < m; ++j)
    for (Index k = 0; k < K; ++k) V(k, j) = std::cos(static_cast<double>((j + 1) * (k + 1)) * 0.7 + static_cast<double>(j));
  Mat W(K, m);
  for (int i = 0; i < iterations; ++i) {
    V = Eigen::HouseholderQR<Mat>(V).householderQ() * Mat::Identity(K, m);
    for (Index j = 0; j < m; ++j) W.col(j) = stiffest * V.col(j) - curvature_times(density, theta, V.col(j), num_data);
    if (!W.allFinite()) break;
    V = W;
  }
  V = Eigen::HouseholderQR<Mat>(V).householderQ() * Mat::Identity(K, m);
  Mat HV(K, m);
  for (Index j = 0; j < m; ++j) HV.col(j) = curvature_times(density, theta, V.col(j), num_data);
  const Mat T = V.transpose() * HV;
  const Eigen::SelfAdjointEigenSolver<Mat> ritz(0.5 * (T + T.transpose()));  // eigenvalues ascending: flattest first
  std::vector<CurvatureDirection> out;
  for (Index j = 0; j < m; ++j) out.push_back({ritz.eigenvalues()(j), (V * ritz.eigenvectors().col(j)).normalized()});
  return out;
}

}  // namespace uqnn
