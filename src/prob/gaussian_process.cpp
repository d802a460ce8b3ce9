#include "uqnn/prob/gaussian_process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

Eigen::LLT<Mat> cholesky_with_jitter(const Mat& K, double jitter, double* jitter_used) {
  if (K.rows() != K.cols()) throw std::invalid_argument("cholesky_with_jitter: the matrix is not square");
  const double scale = K.rows() > 0 ? std::max(K.diagonal().mean(), 1e-300) : 1.0;
  double current = jitter;
  for (int attempt = 0; attempt < 20; ++attempt) {
    Mat A = K;
    A.diagonal().array() += current;
    Eigen::LLT<Mat> llt(A);
    if (llt.info() == Eigen::Success && llt.matrixLLT().diagonal().minCoeff() > 0) {
      if (jitter_used) *jitter_used = current;
      return llt;
    }
    const double next = current > 0 ? 10.0 * current : 1e-10 * scale;
    if (next > 1e-2 * scale) break;
    current = next;
  }
  throw std::runtime_error(fmt::format("Cholesky factorisation failed with jitter up to {:.3g} (mean diagonal {:.3g}): "
                                       "the kernel matrix is not positive definite",
                                       current, scale));
}

GpKernel parse_gp_kernel(const std::string& name) {
  if (name == "rbf") return GpKernel::Rbf;
  if (name == "matern52") return GpKernel::Matern52;
  if (name == "linear") return GpKernel::Linear;
  if (name == "nngp") return GpKernel::Nngp;
  throw InputError("--gp-kernel '" + name + "' is not known: valid are rbf, matern52, linear, nngp");
}

std::string gp_kernel_name(GpKernel kernel) {
  switch (kernel) {
    case GpKernel::Rbf: return "rbf";
    case GpKernel::Matern52: return "matern52";
    case GpKernel::Linear: return "linear";
    case GpKernel::Nngp: return "nngp";
  }
  return "?";
}

void GpHyperparameters::validate() const {
  require(std::isfinite(signal_variance) && signal_variance > 0, "gp signal_variance", "finite and > 0");
  require(length_scales.size() >= 1, "gp length_scales", "one shared value or one per input (non-empty)");
  require(length_scales.allFinite() && (length_scales.array() > 0).all(), "gp length_scales", "finite and > 0");
  require(std::isfinite(noise_variance) && noise_variance > 0, "gp noise_variance", "finite and > 0");
}

GaussianProcess::GaussianProcess(GpKernel kernel, GpHyperparameters hyperparameters)
    : kernel_(kernel), hyper_(std::move(hyperparameters)) {
  if (kernel_ == GpKernel::Nngp) throw std::invalid_argument("gaussian process: the nngp kernel needs its architecture");
  hyper_.validate();
}

GaussianProcess::GaussianProcess(NngpArchitecture architecture, GpHyperparameters hyperparameters)
    : kernel_(GpKernel::Nngp), hyper_(std::move(hyperparameters)), nngp_(architecture) {
  hyper_.validate();
  nngp_.validate();
}

namespace {

/// Inputs divided by their length scales (shared or per input).
Mat scaled(const Mat& X, const Vec& length_scales) {
  if (length_scales.size() == 1) return X / length_scales[0];
  if (length_scales.size() != X.rows())
    throw std::invalid_argument(fmt::format("gaussian process: {} length scales for {} inputs", length_scales.size(), X.rows()));
  return length_scales.cwiseInverse().asDiagonal() * X;
}

}  // namespace

Mat squared_distances(const Mat& A, const Mat& B) {
  const Vec a = A.colwise().squaredNorm().transpose(), b = B.colwise().squaredNorm().transpose();
  Mat D = -2.0 * A.transpose() * B;
  D.colwise() += a;
  D.rowwise() += b.transpose();
  return D.cwiseMax(0.0);  // round-off can make tiny distances negative
}

Mat GaussianProcess::covariance(const Mat& X1, const Mat& X2) const {
  if (X1.rows() != X2.rows()) throw std::invalid_argument("gaussian process: inputs of different dimension");
  const double s2 = hyper_.signal_variance;
  const Mat A = scaled(X1, hyper_.length_scales), B = scaled(X2, hyper_.length_scales);
  switch (kernel_) {
    case GpKernel::Rbf: return s2 * (-0.5 * squared_distances(A, B)).array().exp().matrix();
    case GpKernel::Matern52: {
      const Eigen::ArrayXXd r = squared_distances(A, B).array().sqrt();
      const double c = std::sqrt(5.0);
      return (s2 * (1.0 + c * r + (5.0 / 3.0) * r.square()) * (-c * r).exp()).matrix();
    }
    case GpKernel::Linear: return (s2 * (1.0 + (A.transpose() * B).array())).matrix();
    // The same matrix for X1 and X2 (k(X, X)) lets nngp_covariance compute one triangle.
    case GpKernel::Nngp: return s2 * (&X1 == &X2 ? nngp_covariance(nngp_, A, A) : nngp_covariance(nngp_, A, B));
  }
  return {};
}

Mat GaussianProcess::covariance_derivative(const Mat& X, Index j) const {
  const Index num_scales = hyper_.length_scales.size();
  if (j < 0 || j > num_scales) throw std::invalid_argument("covariance_derivative: index out of range");
  if (j == 0) return covariance(X);  // dk / d log s^2 = k
  if (kernel_ == GpKernel::Nngp) throw std::logic_error("gaussian process: the nngp kernel's input scale is fixed");
  const double s2 = hyper_.signal_variance;
  const Mat A = scaled(X, hyper_.length_scales);
  // D_j = sum over the inputs this length scale covers of (x_i - x'_i)^2 / l_i^2 (= d r^2 / d log l_j * -1/2).
  Mat D;
  Mat P;  // linear kernel: sum of x_i x'_i / l_i^2 over the covered inputs
  if (num_scales == 1) {
    D = squared_distances(A, A);
    P = A.transpose() * A;
  } else {
    const Mat row = A.row(j - 1);
    D = squared_distances(row, row);
    P = row.transpose() * row;
  }
  switch (kernel_) {
    case GpKernel::Rbf: return covariance(X).cwiseProduct(D);  // k * D
    case GpKernel::Matern52: {
      const Eigen::ArrayXXd r = squared_distances(A, A).array().sqrt();
      const double c = std::sqrt(5.0);
      // dk/dr * dr/dlog l = s^2 (5/3) (1 + sqrt5 r) exp(-sqrt5 r) * D (no 1/r: finite at r = 0).
      return (s2 * (5.0 / 3.0) * (1.0 + c * r) * (-c * r).exp() * D.array()).matrix();
    }
    case GpKernel::Linear: return -2.0 * s2 * P;
    case GpKernel::Nngp: break;
  }
  return {};
}

Vec GaussianProcess::log_parameters() const {
  const Index k = hyper_.length_scales.size();
  Vec p(k + 2);
  p[0] = std::log(hyper_.signal_variance);
  p.segment(1, k) = hyper_.length_scales.array().log().matrix();
  p[k + 1] = std::log(hyper_.noise_variance);
  return p;
}

GaussianProcess GaussianProcess::with_log_parameters(const Vec& p) const {
  if (kernel_ != GpKernel::Nngp) return from_log_parameters(kernel_, p);
  GaussianProcess g = from_log_parameters(GpKernel::Rbf, p);  // the hyperparameters' layout is the kernels' common one
  return GaussianProcess(nngp_, g.hyperparameters());
}

GaussianProcess GaussianProcess::from_log_parameters(GpKernel kernel, const Vec& p) {
  if (p.size() < 3) throw std::invalid_argument("gaussian process: log parameters need at least 3 entries");
  GpHyperparameters h;
  h.signal_variance = std::exp(p[0]);
  h.length_scales = p.segment(1, p.size() - 2).array().exp().matrix();
  h.noise_variance = std::exp(p[p.size() - 1]);
  return GaussianProcess(kernel, h);
}

double GaussianProcess::log_marginal_likelihood(const Mat& X, const Vec& y, Vec* grad) const {
  const Index n = X.cols();
  if (y.size() != n) throw std::invalid_argument(fmt::format("gaussian process: {} targets for {} inputs", y.size(), n));
  Mat K = covariance(X);
  K.diagonal().array() += hyper_.noise_variance;
  double jitter = 0.0;
  const Eigen::LLT<Mat> llt = cholesky_with_jitter(K, 0.0, &jitter);
  const Vec alpha = llt.solve(y);
  const double log_det = 2.0 * llt.matrixLLT().diagonal().array().log().sum();
  const double value = -0.5 * y.dot(alpha) - 0.5 * log_det - 0.5 * static_cast<double>(n) * std::log(2.0 * std::numbers::pi);
  if (grad) {
    // R&W eq. 5.9: 1/2 tr((a a^T - K^-1) dK/dt). K^-1 from the Cholesky factor (needed whole for
    // the trace); O(n^3) like the factorisation itself.
    const Mat W = alpha * alpha.transpose() - llt.solve(Mat::Identity(n, n));
    const Index k = hyper_.length_scales.size();
    grad->resize(k + 2);
    (*grad)[0] = 0.5 * W.cwiseProduct(K.topLeftCorner(n, n) - hyper_.noise_variance * Mat::Identity(n, n)).sum();  // dK/d log s^2 = k
    for (Index j = 1; j <= k; ++j)
      (*grad)[j] = kernel_ == GpKernel::Nngp ? 0.0 : 0.5 * W.cwiseProduct(covariance_derivative(X, j)).sum();
    (*grad)[k + 1] = 0.5 * hyper_.noise_variance * W.trace();  // dK / d log s_n^2 = s_n^2 I
  }
  return value;
}

std::string GaussianProcess::describe() const {
  std::string scales;
  for (Index i = 0; i < hyper_.length_scales.size(); ++i)
    scales += fmt::format("{}{:.4g}", i ? "," : "", hyper_.length_scales[i]);
  return fmt::format("{}(signal_variance={:.4g}, length_scales=[{}], noise_variance={:.4g}{})", gp_kernel_name(kernel_),
                     hyper_.signal_variance, scales, hyper_.noise_variance,
                     kernel_ == GpKernel::Nngp ? ", " + nngp_.describe() : std::string());
}

}  // namespace uqnn
