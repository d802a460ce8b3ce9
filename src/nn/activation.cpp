#include "uqnn/nn/activation.hpp"

#include "uqnn/core/error.hpp"
#include "uqnn/nn/dense_stack.hpp"

namespace uqnn {

const Registry<ActivationKind>& activation_kinds() {
  static const Registry<ActivationKind> kinds(
      "--activation", {{.name = "tanh", .value = Activation::Tanh, .summary = "hyperbolic tangent"},
                       {.name = "relu", .value = Activation::Relu, .summary = "max(0, x)"},
                       {.name = "silu", .value = Activation::Silu, .summary = "x sigmoid(x)", .aliases = {"swish"}},
                       {.name = "sigmoid", .value = Activation::Sigmoid, .summary = "1 / (1 + exp(-x))"},
                       {.name = "sine", .value = Activation::Sine, .summary = "sin(x)", .aliases = {"sin"}},
                       {.name = "identity", .value = Activation::Identity, .summary = "x (a linear network)", .aliases = {"linear"}}});
  return kinds;
}

Activation parse_activation(const std::string& name) { return activation_kinds().find(name).value; }

std::string to_string(Activation activation) {
  for (const ActivationKind& kind : activation_kinds())
    if (kind.value == activation) return kind.name;
  return "?";
}

const Registry<InitSchemeKind>& init_scheme_kinds() {
  static const Registry<InitSchemeKind> kinds(
      "--init", {{.name = "glorot", .value = InitScheme::Glorot, .summary = "U(-a, a), a = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010)", .aliases = {"xavier"}},
                 {.name = "he", .value = InitScheme::He, .summary = "N(0, 2 / fan_in) (He et al. 2015)", .aliases = {"kaiming"}},
                 {.name = "torch", .value = InitScheme::Torch, .summary = "U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's nn.Linear"}});
  return kinds;
}

InitScheme parse_init_scheme(const std::string& name) { return init_scheme_kinds().find(name).value; }

std::string to_string(InitScheme scheme) {
  for (const InitSchemeKind& kind : init_scheme_kinds())
    if (kind.value == scheme) return kind.name;
  return "?";
}

InitScheme default_init_scheme(Activation activation) {
  return (activation == Activation::Relu || activation == Activation::Silu) ? InitScheme::He : InitScheme::Glorot;
}

}  // namespace uqnn
