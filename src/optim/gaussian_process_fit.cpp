#include "uqnn/optim/gaussian_process_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "uqnn/core/error.hpp"
#include "uqnn/optim/optimizer.hpp"

namespace uqnn {

void GpFitParams::validate() const {
  require(iterations >= 0, "gp iterations", ">= 0");
  require(std::isfinite(learning_rate) && learning_rate > 0, "gp learning_rate", "finite and > 0");
  require(max_points >= 2, "gp max_points", ">= 2");
  if (kernel == GpKernel::Nngp) {
    if (per_input_length_scales)
      throw std::invalid_argument("gp_ard: the nngp kernel has no length scales to fit (its input scale is the first layer's "
                                  "weight variance)");
    nngp.validate();
  }
}

namespace {

/// Maximises value_and_gradient(p, grad) (a log marginal likelihood and its gradient) over the log
/// hyperparameters p by Adam at params.learning_rate for params.iterations steps from `p`, and returns
/// the best p seen: the value is not monotone along Adam's path. Stops at a non-finite gradient.
template <typename ValueAndGradient>
Vec maximise_by_adam(Vec p, const GpFitParams& params, ValueAndGradient&& value_and_gradient) {
  OptimizerParams adam;
  adam.learning_rate = params.learning_rate;
  auto optimizer = make_optimizer(adam, p.size());
  Vec best = p, grad(p.size());
  double best_value = -std::numeric_limits<double>::infinity();
  for (Index it = 0; it <= params.iterations; ++it) {
    const double value = value_and_gradient(p, grad);
    if (std::isfinite(value) && value > best_value) {
      best_value = value;
      best = p;
    }
    if (it == params.iterations || !grad.allFinite()) break;
    const Vec descent = -grad;  // the optimiser minimises
    optimizer->step(p, descent, params.learning_rate);
  }
  return best;
}

/// nngp: the kernel matrix K0 does not change with s^2 and s_n^2, so it is decomposed once,
/// K0 = U diag(lambda) U^T, and with z = U^T y
///     log p(y) = -1/2 sum_i z_i^2 / (s^2 lambda_i + s_n^2) - 1/2 sum_i log(s^2 lambda_i + s_n^2) - n/2 log 2 pi,
/// whose gradient w.r.t. t = log s^2 (or log s_n^2) is 1/2 sum_i (z_i^2 / c_i^2 - 1 / c_i) dc_i/dt.
GaussianProcess fit_nngp(const Mat& X, const Vec& y, const GpFitParams& params) {
  GpHyperparameters start;
  const Mat K0 = nngp_covariance(params.nngp, X, X);
  const Eigen::SelfAdjointEigenSolver<Mat> eig(K0);
  const Vec lambda = eig.eigenvalues().cwiseMax(0.0), z = eig.eigenvectors().transpose() * y;
  const double var_y = std::max((y.array() - y.mean()).square().mean(), 1e-12);
  const double n = static_cast<double>(y.size());
  const auto value_and_gradient = [&](const Vec& p, Vec& grad) {
    const double s2 = std::exp(p[0]), noise = std::exp(p[1]);
    const Eigen::ArrayXd c = s2 * lambda.array() + noise;
    const Eigen::ArrayXd w = z.array().square() / c.square() - c.inverse();
    grad.resize(2);
    grad[0] = 0.5 * (w * s2 * lambda.array()).sum();
    grad[1] = 0.5 * (w * noise).sum();
    return -0.5 * (z.array().square() / c).sum() - 0.5 * c.log().sum() - 0.5 * n * kLog2Pi;
  };
  Vec p(2);
  p << std::log(var_y / std::max(K0.diagonal().mean(), 1e-300)), std::log(var_y / 10.0);
  const Vec best = maximise_by_adam(p, params, value_and_gradient);
  start.signal_variance = std::exp(best[0]);
  start.noise_variance = std::exp(best[1]);
  start.length_scales = Vec::Ones(1);
  return GaussianProcess(params.nngp, start);
}

/// s^2 = var_y, s_n^2 = var_y / 10, l = the median pairwise distance (per input: that input's sd; linear: 1).
GpHyperparameters starting_hyperparameters(const Mat& Xf, double var_y, const GpFitParams& params) {
  GpHyperparameters start;
  start.signal_variance = var_y;
  start.noise_variance = var_y / 10.0;
  if (params.per_input_length_scales && params.kernel != GpKernel::Linear) {
    start.length_scales.resize(Xf.rows());
    for (Index i = 0; i < Xf.rows(); ++i) {
      const double sd = std::sqrt((Xf.row(i).array() - Xf.row(i).mean()).square().mean());
      start.length_scales[i] = sd > 0 ? sd : 1.0;
    }
  } else if (params.per_input_length_scales) {
    start.length_scales = Vec::Ones(Xf.rows());
  } else {
    const Mat D = squared_distances(Xf, Xf);
    std::vector<double> d;
    for (Index j = 0; j < D.cols(); ++j)
      for (Index i = 0; i < j; ++i)
        if (D(i, j) > 0) d.push_back(std::sqrt(D(i, j)));
    double median = 1.0;
    if (!d.empty()) {
      std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
      median = d[d.size() / 2];
    }
    start.length_scales = Vec::Constant(1, params.kernel == GpKernel::Linear ? 1.0 : median);
  }
  return start;
}

/// The random subset of at most params.max_points columns the fit uses (the only draws from `rng`).
IndexVec fit_subset(Index n, const GpFitParams& params, Rng& rng) {
  if (n <= params.max_points) {
    IndexVec all(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
    return all;
  }
  IndexVec perm = rng.permutation(n);
  perm.resize(static_cast<std::size_t>(params.max_points));
  return perm;
}

}  // namespace

GaussianProcess fit_gaussian_process(const Mat& X, const Vec& y, const GpFitParams& params, Rng& rng) {
  params.validate();
  if (X.cols() != y.size()) throw std::invalid_argument("fit_gaussian_process: X and y sizes differ");
  if (X.cols() < 2) throw std::invalid_argument("fit_gaussian_process: needs at least 2 points");
  Mat Xf = X;
  Vec yf = y;
  if (X.cols() > params.max_points) {
    const IndexVec perm = rng.permutation(X.cols());
    Xf.resize(X.rows(), params.max_points);
    yf.resize(params.max_points);
    for (Index i = 0; i < params.max_points; ++i) {
      Xf.col(i) = X.col(perm[static_cast<std::size_t>(i)]);
      yf[i] = y[perm[static_cast<std::size_t>(i)]];
    }
  }
  if (params.kernel == GpKernel::Nngp) return fit_nngp(Xf, yf, params);
  const double var_y = std::max((yf.array() - yf.mean()).square().mean(), 1e-12);
  const GpHyperparameters start = starting_hyperparameters(Xf, var_y, params);
  const Vec best = maximise_by_adam(GaussianProcess(params.kernel, start).log_parameters(), params, [&](const Vec& p, Vec& grad) {
    return GaussianProcess::from_log_parameters(params.kernel, p).log_marginal_likelihood(Xf, yf, &grad);
  });
  return GaussianProcess::from_log_parameters(params.kernel, best);
}

}  // namespace uqnn

namespace uqnn {

DirichletGaussianProcess fit_dirichlet_gaussian_process(const Mat& X, const Vec& labels, Index num_classes,
                                                        double alpha_epsilon, const GpFitParams& params, Rng& rng) {
  params.validate();
  if (X.cols() != labels.size()) throw std::invalid_argument("fit_dirichlet_gaussian_process: X and labels sizes differ");
  if (X.cols() < 2) throw std::invalid_argument("fit_dirichlet_gaussian_process: needs at least 2 points");
  const IndexVec subset = fit_subset(X.cols(), params, rng);
  const Index n = static_cast<Index>(subset.size());
  Mat Xf(X.rows(), n);
  Vec yf(n);
  for (Index i = 0; i < n; ++i) {
    Xf.col(i) = X.col(subset[static_cast<std::size_t>(i)]);
    yf[i] = labels[subset[static_cast<std::size_t>(i)]];
  }
  const DirichletTargets data = dirichlet_targets(yf, num_classes, alpha_epsilon);
  const Vec means = data.targets.rowwise().mean();
  // Start: s^2 = the variance of the centred targets, pooled over the classes; l as for regression.
  const double var_y = std::max((data.targets.colwise() - means).array().square().mean(), 1e-12);
  GpHyperparameters start = starting_hyperparameters(Xf, var_y, params);
  if (params.kernel == GpKernel::Nngp) start.length_scales = Vec::Ones(1);  // its input scale is the architecture's
  const GaussianProcess initial = params.kernel == GpKernel::Nngp ? GaussianProcess(params.nngp, start)
                                                                  : GaussianProcess(params.kernel, start);
  // The noise entry's gradient is 0: it stays put.
  const Vec best = maximise_by_adam(initial.log_parameters(), params, [&](const Vec& p, Vec& grad) {
    return dirichlet_log_marginal_likelihood(initial.with_log_parameters(p), Xf, data, means, &grad);
  });
  return {initial.with_log_parameters(best), means};
}

}  // namespace uqnn
