#include "uqnn/nn/rnet.hpp"

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

RNet::RNet(RNetSpec spec) : spec_(std::move(spec)) {
  require(spec_.width >= 1, "rnet width", ">= 1");
  require(spec_.num_layers >= 0, "rnet num_layers", ">= 0");
  require(spec_.weight_order >= -1, "rnet weight_order", ">= 0, or -1 for non-parametric");
  has_pre_ = spec_.pre_layer || spec_.input_dim != spec_.width;
  has_post_ = spec_.post_layer || spec_.output_dim != spec_.width;
  pre_ = DenseStackSpec{{spec_.input_dim, spec_.width}, spec_.activation, true};
  post_ = DenseStackSpec{{spec_.width, spec_.output_dim}, Activation::Identity, false};
  if (has_pre_) pre_offset_ = pre_.add_to_layout(layout_, "pre");
  residual_offset_ = layout_.size();
  for (Index k = 0; k < num_coefficients(); ++k) {
    layout_.add_matrix("res.weight" + std::to_string(k), spec_.width, spec_.width, spec_.width);
    layout_.add_vector("res.bias" + std::to_string(k), spec_.width, spec_.width);
  }
  if (has_post_) post_offset_ = post_.add_to_layout(layout_, "post");
}

Index RNet::num_coefficients() const {
  return spec_.weight_order < 0 ? spec_.num_layers + 1 : spec_.weight_order + 1;
}

double RNet::basis(Index update, Index k) const {
  if (spec_.weight_order < 0) return update == k ? 1.0 : 0.0;
  const double t = static_cast<double>(update) / static_cast<double>(spec_.num_layers + 1);
  return k == 0 ? 1.0 : std::pow(t, static_cast<double>(k));
}

Vec RNet::initial_params(Rng& rng) const {
  Vec theta(num_params());
  if (has_pre_) pre_.initialize(theta, pre_offset_, spec_.init, rng);
  const DenseStackSpec square{{spec_.width, spec_.width}, spec_.activation, true};
  for (Index k = 0; k < num_coefficients(); ++k)
    square.initialize(theta, residual_offset_ + k * (spec_.width * spec_.width + spec_.width), spec_.init, rng);
  if (has_post_) post_.initialize(theta, post_offset_, spec_.init, rng);
  return theta;
}

nlohmann::json RNet::to_json() const {
  return with_precision({{"kind", "rnet"},
          {"input_dim", spec_.input_dim},
          {"output_dim", spec_.output_dim},
          {"width", spec_.width},
          {"num_layers", spec_.num_layers},
          {"weight_order", spec_.weight_order},
          {"residual", spec_.residual},
          {"pre_layer", spec_.pre_layer},
          {"post_layer", spec_.post_layer},
          {"activation", to_string(spec_.activation)},
          {"init", to_string(spec_.init)}});
}

}  // namespace uqnn
