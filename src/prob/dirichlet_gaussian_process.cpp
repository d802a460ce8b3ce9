#include "uqnn/prob/dirichlet_gaussian_process.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace uqnn {

DirichletTargets dirichlet_targets(const Vec& labels, Index num_classes, double alpha_epsilon) {
  if (num_classes < 2) throw std::invalid_argument("dirichlet_targets: num_classes must be >= 2");
  if (!(std::isfinite(alpha_epsilon) && alpha_epsilon > 0))
    throw std::invalid_argument("dirichlet_targets: alpha_epsilon must be finite and > 0");
  const Index n = labels.size();
  DirichletTargets d;
  d.targets.resize(num_classes, n);
  d.noise.resize(num_classes, n);
  // Milios et al. (2018) sec. 4: alpha = y + alpha_eps, s^2 = log(1/alpha + 1), y~ = log alpha - s^2 / 2.
  const auto transform = [](double alpha, double& target, double& noise) {
    noise = std::log(1.0 / alpha + 1.0);
    target = std::log(alpha) - 0.5 * noise;
  };
  double target_on = 0, noise_on = 0, target_off = 0, noise_off = 0;
  transform(1.0 + alpha_epsilon, target_on, noise_on);
  transform(alpha_epsilon, target_off, noise_off);
  for (Index i = 0; i < n; ++i) {
    const double y = labels[i];
    if (!(y >= 0 && y < static_cast<double>(num_classes) && y == std::floor(y)))
      throw std::invalid_argument(fmt::format("dirichlet_targets: label {} (example {}) is not a class in [0, {}]", y, i,
                                              num_classes - 1));
    for (Index c = 0; c < num_classes; ++c) {
      const bool on = static_cast<Index>(y) == c;
      d.targets(c, i) = on ? target_on : target_off;
      d.noise(c, i) = on ? noise_on : noise_off;
    }
  }
  return d;
}

double dirichlet_log_marginal_likelihood(const GaussianProcess& process, const Mat& X, const DirichletTargets& data,
                                         const Vec& means, Vec* grad) {
  const Index n = X.cols(), C = data.targets.rows();
  if (data.targets.cols() != n || data.noise.rows() != C || data.noise.cols() != n || means.size() != C)
    throw std::invalid_argument("dirichlet_log_marginal_likelihood: shapes of X, targets, noise and means differ");
  const Mat K = process.covariance(X);
  Mat W = Mat::Zero(n, n);  // sum_c (a_c a_c^T - (K + D_c)^-1)
  double value = 0;
  for (Index c = 0; c < C; ++c) {
    Mat A = K;
    A.diagonal() += data.noise.row(c).transpose();
    const Eigen::LLT<Mat> llt = cholesky_with_jitter(A, 0.0);
    const Vec r = (data.targets.row(c).array() - means[c]).matrix().transpose();
    const Vec alpha = llt.solve(r);
    value += -0.5 * r.dot(alpha) - llt.matrixLLT().diagonal().array().log().sum() -
             0.5 * static_cast<double>(n) * std::log(2.0 * std::numbers::pi);
    if (grad) W += alpha * alpha.transpose() - llt.solve(Mat::Identity(n, n));
  }
  if (grad) {
    const Index k = process.hyperparameters().length_scales.size();
    grad->setZero(k + 2);
    (*grad)[0] = 0.5 * W.cwiseProduct(K).sum();  // dK / d log s^2 = K
    for (Index j = 1; j <= k; ++j)
      (*grad)[j] = process.kernel() == GpKernel::Nngp ? 0.0 : 0.5 * W.cwiseProduct(process.covariance_derivative(X, j)).sum();
  }
  return value;
}

}  // namespace uqnn
