#pragma once
/// @file Element-wise activations and their derivatives, vectorised for float and double.
///
/// Why vectorise: std::tanh on doubles runs at ~0.03 G/s here, which alone would cost more than a
/// whole B2 gradient (BENCHMARKS.md). For double, tanh, sigmoid, silu, sin and cos run our packet
/// kernels of activation_kernels.hpp: at most 2 ulp from the correctly rounded value over the whole
/// range (tests/unit/nn/activation_test.cpp; the previous tanh reached 5.2 ulp, and sin ran
/// std::sin per element), on the 512-bit packet, which measured faster than 256-bit on Zen 4 too
/// (docs/performance.md, "Activations"). Float keeps Eigen's kernels: 2-ulp float versions
/// measured 0.32-0.52x their speed (activation_kernels.hpp says more). Dual numbers
/// (Hessian-vector products) take the generic scalar path.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "uqnn/core/registry.hpp"
#include "uqnn/core/types.hpp"
#include "uqnn/nn/activation_kernels.hpp"
#include "uqnn/nn/dual.hpp"

namespace uqnn {

enum class Activation { Tanh, Relu, Silu, Sigmoid, Sine, Identity };

/// One activation of the closed set (`--activation`, model.json, Python's `activation=`).
struct ActivationKind {
  std::string name = {};
  Activation value = Activation::Tanh;
  std::string summary = {};
  std::vector<std::string> aliases = {};  ///< other spellings accepted (swish, sin, linear)
};
/// Every activation, in the order --help lists them.
const Registry<ActivationKind>& activation_kinds();
/// The activation called `name` (or an alias); InputError naming the valid ones otherwise.
Activation parse_activation(const std::string& name);
std::string to_string(Activation activation);

namespace detail {

/// The packet width the kernels use: Eigen's widest for the build (8 doubles / 16 floats with
/// AVX-512), which measured faster than the 256-bit half on Zen 4 (bench/activation_bench.cpp).
template <typename T>
using ActivationPacket = typename Eigen::internal::packet_traits<T>::type;


}  // namespace detail

/// A = activation(Z), element-wise; A may be Z itself (in place).
template <typename T>
void activate(Activation activation, const MatT<T>& Z, MatT<T>& A) {
  if constexpr (std::is_same_v<T, double>) {
    using Packet = detail::ActivationPacket<double>;
    switch (activation) {
      case Activation::Relu: A = Z.array().max(0.0).matrix(); return;
      case Activation::Identity: A = Z; return;
      default: break;
    }
    A.resize(Z.rows(), Z.cols());  // a no-op when A is Z
    switch (activation) {
      case Activation::Tanh: detail::tanh_array<Packet>(Z.data(), A.data(), Z.size()); return;
      case Activation::Sigmoid: detail::sigmoid_array<Packet>(Z.data(), A.data(), Z.size()); return;
      case Activation::Silu: detail::silu_array<Packet>(Z.data(), A.data(), Z.size()); return;
      case Activation::Sine: detail::sincos_array<Packet, false>(Z.data(), A.data(), Z.size()); return;
      default: return;
    }
  } else if constexpr (std::is_floating_point_v<T>) {  // float: Eigen's kernels (see the file comment)
    const auto z = Z.array();
    switch (activation) {
      case Activation::Tanh: A = z.tanh().matrix(); return;
      case Activation::Relu: A = z.max(T(0)).matrix(); return;
      case Activation::Sigmoid: A = (T(1) / (T(1) + (-z).exp())).matrix(); return;
      case Activation::Silu: A = (z / (T(1) + (-z).exp())).matrix(); return;
      case Activation::Sine: A = z.sin().matrix(); return;
      case Activation::Identity: A = Z; return;
    }
  } else {
    using std::exp;
    using std::sin;
    using std::tanh;
    switch (activation) {
      case Activation::Tanh: A = Z.unaryExpr([](const T& x) -> T { return tanh(x); }); return;
      case Activation::Relu: A = Z.unaryExpr([](const T& x) -> T { return x > T(0) ? x : T(0); }); return;
      case Activation::Sigmoid: A = Z.unaryExpr([](const T& x) -> T { return T(1) / (T(1) + exp(-x)); }); return;
      case Activation::Silu: A = Z.unaryExpr([](const T& x) -> T { return x / (T(1) + exp(-x)); }); return;
      case Activation::Sine: A = Z.unaryExpr([](const T& x) -> T { return sin(x); }); return;
      case Activation::Identity: A = Z; return;
    }
  }
}

/// In place: dZ <- dA .* activation'(Z), using the stored A where that is cheaper.
template <typename T>
void activation_backward(Activation activation, const MatT<T>& Z, const MatT<T>& A, MatT<T>& dA) {
  auto d = dA.array();
  switch (activation) {
    case Activation::Tanh: d *= (T(1) - A.array().square()); return;
    case Activation::Sigmoid: d *= A.array() * (T(1) - A.array()); return;
    case Activation::Relu:  // relu(z) > 0 exactly when z > 0: the output suffices (no copy of Z kept)
      d *= A.array().unaryExpr([](const T& a) -> T { return a > T(0) ? T(1) : T(0); });
      return;
    case Activation::Silu: {
      // silu(z) = z s(z); silu'(z) = s(z) (1 + z (1 - s(z))) with s(z) = silu(z) / z rewritten
      // through A to avoid 0/0: s = 1 / (1 + e^{-z}).
      MatT<T> s;
      activate(Activation::Sigmoid, Z, s);
      d *= s.array() * (T(1) + Z.array() * (T(1) - s.array()));
      return;
    }
    case Activation::Sine:
      if constexpr (std::is_same_v<T, double>) {
        MatT<T> c(Z.rows(), Z.cols());
        detail::sincos_array<detail::ActivationPacket<T>, true>(Z.data(), c.data(), Z.size());
        d *= c.array();
      } else if constexpr (std::is_floating_point_v<T>) {
        d *= Z.array().cos();
      } else {
        using std::cos;
        d *= Z.array().unaryExpr([](const T& x) -> T { return cos(x); });
      }
      return;
    case Activation::Identity: return;
  }
}

/// True when the derivative needs the pre-activation Z (not only A).
inline bool activation_needs_preactivation(Activation activation) {
  return activation == Activation::Silu || activation == Activation::Sine;
}

namespace detail {

/// Packet forms of activate() and of activation_backward()'s derivative through A, for the
/// activations whose derivative needs only A (relu, tanh, sigmoid). A dense layer fuses them into
/// its products (nn/narrow_product.hpp): the forward product applies `value` before it stores its
/// outputs, and the weight gradient's pass applies `derivative` to the cotangent it loads, instead
/// of a separate pass over the layer's n x width activations each (seed 003's 2x16 relu network on
/// bike sharing: two of the gradient's eight passes over 13,903 x 16 values). Each computes what
/// the element-wise functions above compute, with the same operations.
template <typename T, Activation Kind>
struct PacketActivation {
  using Packet = ActivationPacket<T>;
  static Packet value(const Packet& z) {
    namespace ei = Eigen::internal;
    const Packet one = ei::pset1<Packet>(T(1));
    if constexpr (Kind == Activation::Relu) {
      return ei::pmax(z, ei::pzero(z));
    } else if constexpr (Kind == Activation::Tanh) {
      if constexpr (std::is_same_v<T, double>) return tanh_packet(z);
      else return ei::ptanh(z);
    } else {
      static_assert(Kind == Activation::Sigmoid);
      if constexpr (std::is_same_v<T, double>) return sigmoid_packet(z);
      else return ei::pdiv(one, ei::padd(one, ei::pexp(ei::pnegate(z))));
    }
  }
  /// dA .* activation'(z) written through a = activation(z).
  static Packet derivative(const Packet& dA, const Packet& a) {
    namespace ei = Eigen::internal;
    const Packet one = ei::pset1<Packet>(T(1));
    if constexpr (Kind == Activation::Relu) {
      return ei::pmul(dA, ei::pand(one, ei::pcmp_lt(ei::pzero(a), a)));  // dA * (a > 0 ? 1 : 0)
    } else if constexpr (Kind == Activation::Tanh) {
      return ei::pmul(dA, ei::psub(one, ei::pmul(a, a)));
    } else {
      return ei::pmul(dA, ei::pmul(a, ei::psub(one, a)));
    }
  }
};

/// Calls f(PacketActivation<T, activation>{}) and returns true when the activation has a packet
/// form above (T float or double); returns false, doing nothing, otherwise.
template <typename T, typename F>
bool with_packet_activation(Activation activation, F&& f) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    switch (activation) {
      case Activation::Relu: f(PacketActivation<T, Activation::Relu>{}); return true;
      case Activation::Tanh: f(PacketActivation<T, Activation::Tanh>{}); return true;
      case Activation::Sigmoid: f(PacketActivation<T, Activation::Sigmoid>{}); return true;
      default: return false;
    }
  }
  return false;
}

}  // namespace detail

}  // namespace uqnn
