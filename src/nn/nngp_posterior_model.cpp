#include "uqnn/nn/nngp_posterior_model.hpp"

#include <fmt/format.h>

#include <cmath>

namespace uqnn {

NngpPosteriorModel::NngpPosteriorModel(NngpArchitecture architecture, double signal_variance, double noise_variance, Mat inputs,
                                       Mat targets)
    : architecture_(architecture),
      signal_variance_(signal_variance),
      noise_variance_(noise_variance),
      inputs_(std::move(inputs)),
      targets_(std::move(targets)) {
  architecture_.validate();
  if (!(std::isfinite(signal_variance_) && signal_variance_ > 0) || !(std::isfinite(noise_variance_) && noise_variance_ > 0))
    throw std::invalid_argument("nngp posterior: the signal and noise variances must be finite and > 0");
  if (targets_.rows() != 1 || targets_.cols() != inputs_.cols() || inputs_.cols() == 0 || inputs_.rows() == 0)
    throw std::invalid_argument(fmt::format("nngp posterior: {} x {} inputs and {} x {} targets (one target row, one column per input)",
                                            inputs_.rows(), inputs_.cols(), targets_.rows(), targets_.cols()));
  Mat K = signal_variance_ * nngp_covariance(architecture_, inputs_, inputs_);
  K.diagonal().array() += noise_variance_;
  llt_.compute(K);
  if (llt_.info() != Eigen::Success) throw std::runtime_error("nngp posterior: the kernel matrix plus noise is not positive definite");
  alpha_ = llt_.solve(Vec(targets_.row(0).transpose()));
  layout_.add_vector("gp.quantile", 1, 1);
}

std::pair<Mat, Mat> NngpPosteriorModel::mean_and_sd(const Mat& X) const {
  if (X.rows() != inputs_.rows())
    throw std::invalid_argument(fmt::format("nngp posterior: inputs with {} rows, the model has {}", X.rows(), inputs_.rows()));
  std::shared_ptr<const Evaluated> last;
  {
    const std::lock_guard<std::mutex> lock(last_mutex_);
    last = last_;
  }
  if (last && last->inputs.cols() == X.cols() && (last->inputs.array() == X.array()).all()) return {last->mean, last->sd};
  const Mat Ks = signal_variance_ * nngp_covariance(architecture_, inputs_, X);  // [n, m]
  const Mat mean = (alpha_.transpose() * Ks);
  const Mat V = llt_.matrixL().solve(Ks);  // L^-1 k(X, x): v = s^2 k(x, x) - ||L^-1 k(X, x)||^2
  const Vec variance = signal_variance_ * nngp_variance(architecture_, X) - V.colwise().squaredNorm().transpose();
  auto evaluated = std::make_shared<Evaluated>(Evaluated{X, mean, variance.cwiseMax(0.0).cwiseSqrt().transpose()});
  const std::lock_guard<std::mutex> lock(last_mutex_);
  last_ = evaluated;
  return {evaluated->mean, evaluated->sd};
}

double NngpPosteriorModel::log_marginal_likelihood() const {
  const Vec y = targets_.row(0).transpose();
  return -0.5 * y.dot(alpha_) - Mat(llt_.matrixL()).diagonal().array().log().sum() -
         0.5 * static_cast<double>(y.size()) * kLog2Pi;
}

Mat NngpPosteriorModel::forward(const Vec& theta, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  const auto [mean, sd] = mean_and_sd(X);
  return mean + theta[0] * sd;
}

double NngpPosteriorModel::value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const {
  check_model_shapes(*this, theta, X);
  check_model_gradient_size(*this, grad);
  const auto [mean, sd] = mean_and_sd(X);
  Mat output_grad(1, X.cols());
  const double value = loss(mean + theta[0] * sd, output_grad);
  grad[0] += output_grad.cwiseProduct(sd).sum();  // d f / d z = sd
  return value;
}

Vec NngpPosteriorModel::hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X, const OutputLoss<Dual>& loss) const {
  check_model_shapes(*this, theta, X);
  const auto [mean, sd] = mean_and_sd(X);
  // f is linear in z: H v = J^T Lambda J v with J = sd, from the loss's output gradient along J v.
  MatT<Dual> outputs(1, X.cols()), output_grad(1, X.cols());
  for (Index j = 0; j < X.cols(); ++j) outputs(0, j) = make_dual(mean(0, j) + theta[0] * sd(0, j), v[0] * sd(0, j));
  loss(outputs, output_grad);
  double hv = 0.0;
  for (Index j = 0; j < X.cols(); ++j) hv += dual_tangent(output_grad(0, j)) * sd(0, j);
  return Vec::Constant(1, hv);
}

Mat NngpPosteriorModel::jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  return v[0] * mean_and_sd(X).second;
}

Mat NngpPosteriorModel::jacobian(const Vec& theta, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  return mean_and_sd(X).second.transpose();  // [n, 1]
}

nlohmann::json NngpPosteriorModel::to_json() const {
  std::vector<std::vector<double>> inputs(static_cast<std::size_t>(inputs_.cols()));
  for (Index j = 0; j < inputs_.cols(); ++j) inputs[static_cast<std::size_t>(j)].assign(inputs_.col(j).data(), inputs_.col(j).data() + inputs_.rows());
  return {{"kind", "nngp_posterior"},
          {"architecture",
           {{"depth", architecture_.depth},
            {"activation", to_string(architecture_.activation)},
            {"weight_variance", architecture_.weight_variance},
            {"bias_variance", architecture_.bias_variance}}},
          {"signal_variance", signal_variance_},
          {"noise_variance", noise_variance_},
          {"inputs", inputs},
          {"targets", std::vector<double>(targets_.data(), targets_.data() + targets_.size())}};
}

}  // namespace uqnn
