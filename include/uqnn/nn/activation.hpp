#pragma once
/// @file Element-wise activations and their derivatives, vectorised for float and double.
///
/// Why vectorise: std::tanh on doubles runs at ~0.03 G/s here, which alone would cost more than a
/// whole B2 gradient (BENCHMARKS.md). For double we build tanh and the sigmoid from Eigen's
/// vectorised exp; for float Eigen's own rational tanh is used. Dual numbers (Hessian-vector
/// products) take the generic scalar path.
#include <cmath>
#include <string>
#include <type_traits>

#include "uqnn/core/types.hpp"
#include "uqnn/nn/dual.hpp"

namespace uqnn {

enum class Activation { Tanh, Relu, Silu, Sigmoid, Sine, Identity };

/// Parses "tanh", "relu", "silu", "sigmoid", "sine" (or "sin"), "identity" (or "linear").
Activation parse_activation(const std::string& name);
std::string to_string(Activation activation);

namespace detail {

/// tanh(x) for double arrays: sign(x) (1 - e^{-2|x|}) / (1 + e^{-2|x|}), with the odd Taylor series
/// for |x| < 0.01 where 1 - e^{-2|x|} would cancel (relative error below 1e-15 on both branches).
template <typename Derived>
auto fast_tanh(const Eigen::ArrayBase<Derived>& x) {
  using Scalar = typename Derived::Scalar;
  const auto ax = x.abs();
  const auto t = (Scalar(-2) * ax).exp();
  const auto x2 = x * x;
  const auto series = x * (Scalar(1) + x2 * (Scalar(-1.0 / 3.0) + x2 * Scalar(2.0 / 15.0)));
  return (ax < Scalar(1e-2)).select(series, x.sign() * (Scalar(1) - t) / (Scalar(1) + t));
}

}  // namespace detail

/// A = activation(Z), element-wise.
template <typename T>
void activate(Activation activation, const MatT<T>& Z, MatT<T>& A) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto z = Z.array();
    switch (activation) {
      case Activation::Tanh:
        if constexpr (std::is_same_v<T, float>) A = z.tanh().matrix();
        else A = detail::fast_tanh(z).matrix();
        return;
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
    case Activation::Relu:
      d *= Z.array().unaryExpr([](const T& x) -> T { return x > T(0) ? T(1) : T(0); });
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
      if constexpr (std::is_floating_point_v<T>) {
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
  return activation == Activation::Relu || activation == Activation::Silu || activation == Activation::Sine;
}

}  // namespace uqnn
