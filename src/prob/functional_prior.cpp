#include "uqnn/prob/functional_prior.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

FunctionalPrior::FunctionalPrior(std::shared_ptr<const Model> model, GaussianProcess process, double relative_jitter,
                                 bool include_noise, Vec output_means)
    : model_(std::move(model)),
      process_(std::move(process)),
      relative_jitter_(relative_jitter),
      include_noise_(include_noise),
      output_means_(std::move(output_means)) {
  if (!model_) throw std::invalid_argument("functional prior: model must not be null");
  if (output_means_.size() != 0 && output_means_.size() != model_->output_dim())
    throw std::invalid_argument("functional prior: output_means needs one entry per network output");
  require(output_means_.allFinite(), "functional prior output_means", "finite");
  require(std::isfinite(relative_jitter) && relative_jitter >= 0, "gp_jitter", "finite and >= 0");
}

MeasurementCovariance FunctionalPrior::factorize(const Mat& points) const {
  if (points.rows() != model_->input_dim())
    throw std::invalid_argument("functional prior: measurement points have the wrong input dimension");
  MeasurementCovariance c;
  c.points = points;
  Mat K = process_.covariance(points);
  if (include_noise_) K.diagonal().array() += process_.hyperparameters().noise_variance;
  c.cholesky = cholesky_with_jitter(K, relative_jitter_ * process_.hyperparameters().signal_variance, &c.jitter);
  c.log_determinant = 2.0 * c.cholesky.matrixLLT().diagonal().array().log().sum();
  return c;
}

double FunctionalPrior::log_density_of_outputs(const Mat& outputs, const MeasurementCovariance& covariance,
                                               Mat* output_grad) const {
  const Index M = covariance.points.cols();
  if (outputs.cols() != M) throw std::invalid_argument("functional prior: outputs and measurement points differ in number");
  const Index O = outputs.rows();
  if (output_means_.size() != 0 && output_means_.size() != O)
    throw std::invalid_argument("functional prior: outputs and output_means differ in number");
  // alpha = K^-1 (F - m)^T ([M, O]) by two triangular solves.
  const Mat centred = output_means_.size() == 0 ? outputs : Mat(outputs.colwise() - output_means_);
  const Mat alpha = covariance.cholesky.solve(centred.transpose());
  const double quadratic = centred.transpose().cwiseProduct(alpha).sum();
  if (output_grad) *output_grad = -alpha.transpose();
  return -0.5 * quadratic - 0.5 * static_cast<double>(O) * covariance.log_determinant -
         0.5 * static_cast<double>(O * M) * std::log(2.0 * std::numbers::pi);
}

double FunctionalPrior::log_density(const Vec& theta, const MeasurementCovariance& covariance, Vec* grad) const {
  if (!grad) return log_density_of_outputs(model_->forward(theta, covariance.points), covariance);
  if (grad->size() != model_->num_params()) throw std::invalid_argument("functional prior: gradient has the wrong size");
  // One forward + reverse pass: the "loss" is log P0 itself and its output gradient -K^-1 f seeds
  // the backward pass, which adds J^T (-K^-1 f) to grad (seed 002 eq. 6).
  const OutputLoss<double> loss = [this, &covariance](const Mat& F, Mat& dF) {
    return log_density_of_outputs(F, covariance, &dF);
  };
  return model_->value_and_gradient(theta, covariance.points, loss, *grad);
}

}  // namespace uqnn
