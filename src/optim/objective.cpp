#include "uqnn/optim/objective.hpp"

#include <fmt/format.h>

namespace uqnn {

double NegativeLogPosteriorObjective::loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  const double n = static_cast<double>(num_data());
  const double value = density_->minibatch_log_density_and_grad(theta, batch, grad);
  grad *= -1.0 / n;
  return -value / n;
}

MeanSquaredErrorObjective::MeanSquaredErrorObjective(std::shared_ptr<const Model> model, Mat inputs, Mat targets)
    : model_(std::move(model)), inputs_(std::move(inputs)), targets_(std::move(targets)) {
  if (inputs_.cols() != targets_.cols() || targets_.rows() != model_->output_dim())
    throw std::invalid_argument(fmt::format("mse objective: {} inputs, {}x{} targets for a model with {} outputs",
                                            inputs_.cols(), targets_.rows(), targets_.cols(), model_->output_dim()));
}

double MeanSquaredErrorObjective::loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  const Mat X = gather_columns(inputs_, batch), T = gather_columns(targets_, batch);
  const double scale = 1.0 / static_cast<double>(batch.size());
  const OutputLoss<double> loss = [&](const Mat& Y, Mat& dY) {
    dY = 2.0 * scale * (Y - T);
    return scale * (Y - T).squaredNorm();
  };
  grad = Vec::Zero(theta.size());
  return model_->value_and_gradient(theta, X, loss, grad);
}

NegativeLogLikelihoodObjective::NegativeLogLikelihoodObjective(std::shared_ptr<const Posterior> posterior, Mat inputs,
                                                               Mat targets)
    : posterior_(std::move(posterior)), inputs_(std::move(inputs)), targets_(std::move(targets)) {
  if (inputs_.cols() != targets_.cols())
    throw std::invalid_argument(fmt::format("nll objective: {} inputs but {} targets", inputs_.cols(), targets_.cols()));
}

double NegativeLogLikelihoodObjective::loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  const bool full = static_cast<Index>(batch.size()) == inputs_.cols();
  const Mat X = full ? Mat() : gather_columns(inputs_, batch), T = full ? Mat() : gather_columns(targets_, batch);
  const double scale = 1.0 / static_cast<double>(batch.size());
  grad = Vec::Zero(theta.size());
  const double value = posterior_->log_likelihood(theta, full ? inputs_ : X, full ? targets_ : T, &grad);
  grad *= -scale;
  return -scale * value;
}

}  // namespace uqnn
