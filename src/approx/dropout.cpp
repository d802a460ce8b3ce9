#include "uqnn/approx/dropout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "uqnn/core/error.hpp"

namespace uqnn {

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

// ---------------------------------------------------------------------------------------------
// MC dropout on a Cnn

CnnDropout::CnnDropout(std::shared_ptr<const Cnn> network, double drop_probability)
    : network_(std::move(network)), p_(drop_probability) {
  if (!(p_ >= 0.0 && p_ < 1.0)) throw std::invalid_argument(fmt::format("dropout_p = {} must be in [0, 1)", p_));
  const auto& layers = network_->layers();
  for (std::size_t l = 1; l < layers.size(); ++l)
    if (layers[l].type == CnnLayerType::Linear)
      layers_.push_back({layers[l].offset, layers[l].out, layers[l].in_shape.size()});
  if (layers_.empty())
    throw InputError("--method dropout drops the features that feed the fully connected layers, and this network has none after "
                     "its input: end --layers in fc layers (the output layer counts: conv8k3,pool2 ends in one)");
}

Vec CnnDropout::sample_scale(Rng& rng, Index size) const {
  Vec scale = Vec::Ones(size);
  const double keep = 1.0 - p_;
  for (const DroppedLayer& d : layers_)
    for (Index j = 0; j < d.in; ++j) {
      const double m = rng.uniform() < keep ? 1.0 / keep : 0.0;
      if (m == 1.0) continue;
      for (Index o = 0; o < d.out; ++o) scale(d.offset + o * d.in + j) = m;
    }
  return scale;
}

Vec CnnDropout::variance_factor(Index size) const {
  Vec v = Vec::Zero(size);
  for (const DroppedLayer& d : layers_) v.segment(d.offset, d.out * d.in).setConstant(p_ / (1.0 - p_));
  return v;
}

CnnDropoutObjective::CnnDropoutObjective(std::shared_ptr<const CnnDropout> dropout, std::shared_ptr<const Posterior> posterior,
                                         std::uint64_t seed, std::uint64_t stream, Index examples_per_mask)
    : dropout_(std::move(dropout)), posterior_(std::move(posterior)), examples_per_mask_(examples_per_mask), rng_(seed, stream) {
  if (posterior_->model().num_params() != dropout_->network().num_params())
    throw std::invalid_argument("dropout objective: the posterior's network differs from the dropout network");
  if (examples_per_mask_ < 1) throw std::invalid_argument("dropout objective: examples_per_mask must be >= 1");
}

double CnnDropoutObjective::loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  const Posterior& post = *posterior_;
  const double n = static_cast<double>(batch.size()), N = static_cast<double>(post.num_data());
  grad = Vec::Zero(theta.size());
  double log_lik = 0.0;
  Vec g;
  for (std::size_t start = 0; start < batch.size(); start += static_cast<std::size_t>(examples_per_mask_)) {
    const std::size_t stop = std::min(batch.size(), start + static_cast<std::size_t>(examples_per_mask_));
    const IndexVec group(batch.begin() + static_cast<std::ptrdiff_t>(start), batch.begin() + static_cast<std::ptrdiff_t>(stop));
    const Vec scale = dropout_->sample_scale(rng_, theta.size());
    g = Vec::Zero(theta.size());
    // d/dtheta log lik(theta * scale) = scale * (the gradient at theta * scale)
    log_lik += post.log_likelihood(theta.cwiseProduct(scale), gather_columns(post.inputs(), group), gather_columns(post.targets(), group), &g);
    grad -= scale.cwiseProduct(g) / n;
  }
  Vec g_prior = Vec::Zero(theta.size());
  const double value = -log_lik / n - post.log_prior(theta, &g_prior) / N;
  grad -= g_prior / N;
  return value;
}

}  // namespace uqnn
