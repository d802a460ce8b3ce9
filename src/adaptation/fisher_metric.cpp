#include "uqnn/adaptation/fisher_metric.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

constexpr double kLowerLimit = 1e-20, kUpperLimit = 1e20;  // nuts-rs' limits on the diagonal

void require_pairs(const Mat& draws, const Mat& grads) {
  require(draws.rows() > 0 && draws.cols() >= 2, "draws for the Fisher metric", "K x n with n >= 2");
  require(grads.rows() == draws.rows() && grads.cols() == draws.cols(), "gradients for the Fisher metric",
          "the draws' shape");
}

/// sqrt(var x_i / var g_i) per row.
Vec fisher_variances(const Mat& draws, const Mat& grads) {
  const double n = static_cast<double>(draws.cols());
  const Vec var_x = (draws.colwise() - draws.rowwise().mean()).rowwise().squaredNorm() / n;
  const Vec var_g = (grads.colwise() - grads.rowwise().mean()).rowwise().squaredNorm() / n;
  Vec out(draws.rows());
  for (Index i = 0; i < out.size(); ++i) {
    const double ratio = std::sqrt(var_x[i] / var_g[i]);
    out[i] = std::isfinite(ratio) && ratio > 0 ? std::clamp(ratio, kLowerLimit, kUpperLimit)
             : var_x[i] > 0 && var_g[i] == 0 ? std::clamp(var_x[i], kLowerLimit, kUpperLimit)  // a constant score: the draws' variance
                                             : 1.0;  // did not move (0 / 0)
  }
  return out;
}

/// A^power for a symmetric positive definite A.
Mat spd_power(const Eigen::SelfAdjointEigenSolver<Mat>& eigen, double power) {
  return eigen.eigenvectors() * eigen.eigenvalues().array().pow(power).matrix().asDiagonal() *
         eigen.eigenvectors().transpose();
}

}  // namespace

void LowRankMetricParams::validate() const {
  require(std::isfinite(gamma) && gamma > 0, "low-rank metric gamma", "finite and > 0");
  require(std::isfinite(eigval_cutoff) && eigval_cutoff >= 1, "low-rank metric eigenvalue cutoff", ">= 1");
}

Metric estimate_fisher_diagonal(const Mat& draws, const Mat& grads) {
  require_pairs(draws, grads);
  return make_diagonal_metric(fisher_variances(draws, grads));
}

Metric estimate_low_rank_metric(const Mat& draws, const Mat& grads, const LowRankMetricParams& params) {
  require_pairs(draws, grads);
  params.validate();
  const Index dim = draws.rows();
  const Vec scale = fisher_variances(draws, grads).cwiseSqrt();
  // Whitened by the diagonal and centred: x' = (x - mean) / s, g' = (g - mean) s.
  const Mat x = (draws.colwise() - draws.rowwise().mean()).array().colwise() / scale.array();
  const Mat g = (grads.colwise() - grads.rowwise().mean()).array().colwise() * scale.array();

  // An orthonormal basis Q of span(x', g'); none (the whole space, Q = I) when 2n >= K.
  const bool whole_space = 2 * draws.cols() >= dim;
  Mat basis;
  if (!whole_space) {
    Mat joint(dim, 2 * draws.cols());
    joint << x, g;
    const Eigen::ColPivHouseholderQR<Mat> qr(joint);
    basis = qr.householderQ() * Mat::Identity(dim, std::max<Index>(qr.rank(), 1));
  }
  const Mat px = whole_space ? x : Mat(basis.transpose() * x), pg = whole_space ? g : Mat(basis.transpose() * g);
  const Index d = px.rows();
  const Mat cov_x = px * px.transpose() / params.gamma + Mat::Identity(d, d);
  const Mat cov_g = pg * pg.transpose() / params.gamma + Mat::Identity(d, d);

  // Sigma = C_g^-1/2 (C_g^1/2 C_x C_g^1/2)^1/2 C_g^-1/2, the solution of Sigma C_g Sigma = C_x.
  const Eigen::SelfAdjointEigenSolver<Mat> eigen_g(cov_g);
  const Mat g_half = spd_power(eigen_g, 0.5), g_inverse_half = spd_power(eigen_g, -0.5);
  const Mat middle = g_half * cov_x * g_half;
  const Eigen::SelfAdjointEigenSolver<Mat> eigen_middle(0.5 * (middle + middle.transpose()));
  const Mat sigma = g_inverse_half * spd_power(eigen_middle, 0.5) * g_inverse_half;
  const Eigen::SelfAdjointEigenSolver<Mat> eigen_sigma(0.5 * (sigma + sigma.transpose()));

  std::vector<Index> kept;
  for (Index j = 0; j < d; ++j) {
    const double value = eigen_sigma.eigenvalues()[j];
    if (std::isfinite(value) && value > 0 && (value > params.eigval_cutoff || value < 1.0 / params.eigval_cutoff))
      kept.push_back(j);
  }
  Mat vectors(dim, static_cast<Index>(kept.size()));
  Vec values(static_cast<Index>(kept.size()));
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const auto column = static_cast<Index>(k);
    vectors.col(column) = whole_space ? Vec(eigen_sigma.eigenvectors().col(kept[k]))
                                      : Vec(basis * eigen_sigma.eigenvectors().col(kept[k]));
    values[column] = eigen_sigma.eigenvalues()[kept[k]];
  }
  return make_low_rank_metric(scale, std::move(vectors), std::move(values));
}

}  // namespace uqnn
