#include "uqnn/nn/activation.hpp"

#include "uqnn/core/error.hpp"
#include "uqnn/nn/dense_stack.hpp"

namespace uqnn {

Activation parse_activation(const std::string& name) {
  if (name == "tanh") return Activation::Tanh;
  if (name == "relu") return Activation::Relu;
  if (name == "silu" || name == "swish") return Activation::Silu;
  if (name == "sigmoid") return Activation::Sigmoid;
  if (name == "sine" || name == "sin") return Activation::Sine;
  if (name == "identity" || name == "linear") return Activation::Identity;
  throw InputError("unknown activation '" + name + "': valid are tanh, relu, silu, sigmoid, sine, identity");
}

std::string to_string(Activation activation) {
  switch (activation) {
    case Activation::Tanh: return "tanh";
    case Activation::Relu: return "relu";
    case Activation::Silu: return "silu";
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Sine: return "sine";
    case Activation::Identity: return "identity";
  }
  return "?";
}

InitScheme parse_init_scheme(const std::string& name) {
  if (name == "glorot" || name == "xavier") return InitScheme::Glorot;
  if (name == "he" || name == "kaiming") return InitScheme::He;
  if (name == "torch") return InitScheme::Torch;
  throw InputError("unknown initialisation '" + name + "': valid are glorot, he, torch");
}

std::string to_string(InitScheme scheme) {
  switch (scheme) {
    case InitScheme::Glorot: return "glorot";
    case InitScheme::He: return "he";
    case InitScheme::Torch: return "torch";
  }
  return "?";
}

InitScheme default_init_scheme(Activation activation) {
  return (activation == Activation::Relu || activation == Activation::Silu) ? InitScheme::He : InitScheme::Glorot;
}

}  // namespace uqnn
