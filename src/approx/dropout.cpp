#include "uqnn/approx/dropout.hpp"

#include <fmt/format.h>

namespace uqnn {

DropoutPosterior::DropoutPosterior(std::shared_ptr<const DropoutMlp> model, Vec theta)
    : model_(std::move(model)), theta_(std::move(theta)) {
  if (theta_.size() < model_->num_params())
    throw std::invalid_argument(fmt::format("dropout posterior: theta has {} entries, the network {}", theta_.size(), model_->num_params()));
}

std::vector<Vec> DropoutPosterior::sample(Rng& rng, Index n) const {
  const Index P = model_->num_params();
  std::vector<Vec> out;
  for (Index s = 0; s < n; ++s) {
    Vec theta = theta_;
    theta.head(P) = model_->apply_mask(theta_.head(P), model_->sample_masks(rng, 1));
    out.push_back(std::move(theta));
  }
  return out;
}

Vec DropoutPosterior::marginal_variance() const {
  Vec v = Vec::Zero(dim());
  const double p = model_->drop_probability(), factor = p / (1.0 - p);
  const auto& widths = model_->network().stack().widths;
  Index o = widths[1] * widths[0] + widths[1];
  for (std::size_t l = 2; l < widths.size(); ++l) {
    const Index size = widths[l] * widths[l - 1];
    v.segment(o, size) = factor * theta_.segment(o, size).array().square().matrix();
    o += size + widths[l];
  }
  return v;
}

DropoutObjective::DropoutObjective(std::shared_ptr<const DropoutMlp> model, std::shared_ptr<const Posterior> posterior,
                                   std::uint64_t seed, std::uint64_t stream)
    : model_(std::move(model)), posterior_(std::move(posterior)), rng_(seed, stream) {
  if (posterior_->model().num_params() != model_->num_params())
    throw std::invalid_argument("dropout objective: the posterior's network differs from the dropout network");
}

double DropoutObjective::loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  const Posterior& post = *posterior_;
  const Index P = model_->num_params(), E = post.likelihood().num_extra();
  const Mat X = gather_columns(post.inputs(), batch), T = gather_columns(post.targets(), batch);
  const double n = static_cast<double>(batch.size()), N = static_cast<double>(post.num_data());
  const Vec extra = theta.tail(E);
  Vec d_extra = Vec::Zero(E);
  const OutputLoss<double> loss = [&](const Mat& Y, Mat& dY) {
    const double ll = post.likelihood().log_likelihood(Y, T, extra, &dY, &d_extra);
    dY *= -1.0 / n;
    return -ll / n;
  };
  Vec g_net = Vec::Zero(P);
  double value = model_->value_and_gradient(theta.head(P), X, model_->sample_masks(rng_, X.cols()), loss, g_net);
  grad = Vec::Zero(theta.size());
  grad.head(P) = g_net;
  grad.tail(E) = -d_extra / n;
  Vec g_prior = Vec::Zero(theta.size());
  value -= post.log_prior(theta, &g_prior) / N;
  grad -= g_prior / N;
  return value;
}

}  // namespace uqnn
