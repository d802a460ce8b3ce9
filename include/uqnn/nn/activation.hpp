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

/// out[i] = tanh(in[i]) for n doubles (`out` may equal `in`), vectorised with Eigen's packet
/// primitives (8 doubles per AVX-512 register): sign(x) (1 - e^{-2|x|}) / (1 + e^{-2|x|}) with
/// Eigen's vectorised exp, and for |x| < 0.1, where 1 - e^{-2|x|} would cancel, the odd Taylor series
/// through x^13 (truncation below 2e-17 relative). Relative error ~1e-15 on both branches.
/// Why not an Eigen array expression: `select` and `sign` have no packet path in Eigen 3.4, so such
/// an expression runs the scalar std::exp per element (~0.2 G/s instead of several G/s).
inline void tanh_kernel(const double* in, double* out, Index n) {
  namespace ei = Eigen::internal;
  using Packet = ei::packet_traits<double>::type;
  constexpr Index kWidth = ei::unpacket_traits<Packet>::size;
  const Packet one = ei::pset1<Packet>(1.0), minus_two = ei::pset1<Packet>(-2.0);
  const Packet threshold = ei::pset1<Packet>(0.1), sign_mask = ei::pset1<Packet>(-0.0);
  const Packet c3 = ei::pset1<Packet>(-1.0 / 3.0), c5 = ei::pset1<Packet>(2.0 / 15.0),
               c7 = ei::pset1<Packet>(-17.0 / 315.0), c9 = ei::pset1<Packet>(62.0 / 2835.0),
               c11 = ei::pset1<Packet>(-1382.0 / 155925.0), c13 = ei::pset1<Packet>(21844.0 / 6081075.0);
  const auto packet = [&](const Packet& x) {
    const Packet ax = ei::pabs(x);
    const Packet e = ei::pexp(ei::pmul(minus_two, ax));
    const Packet t = ei::pdiv(ei::psub(one, e), ei::padd(one, e));
    const Packet large = ei::por(t, ei::pand(x, sign_mask));  // t >= 0: copy the sign of x
    const Packet x2 = ei::pmul(x, x);
    Packet s = ei::pmadd(x2, c13, c11);
    s = ei::pmadd(x2, s, c9);
    s = ei::pmadd(x2, s, c7);
    s = ei::pmadd(x2, s, c5);
    s = ei::pmadd(x2, s, c3);
    s = ei::pmadd(x2, s, one);
    const Packet small = ei::pmul(x, s);
    return ei::pselect(ei::pcmp_lt(ax, threshold), small, large);
  };
  Index i = 0;
  for (; i + kWidth <= n; i += kWidth) ei::pstoreu(out + i, packet(ei::ploadu<Packet>(in + i)));
  if (i < n) {  // the tail through a padded buffer, so every element takes the same arithmetic
    alignas(64) double buffer[kWidth] = {};
    for (Index k = i; k < n; ++k) buffer[k - i] = in[k];
    ei::pstoreu(buffer, packet(ei::ploadu<Packet>(buffer)));
    for (Index k = i; k < n; ++k) out[k] = buffer[k - i];
  }
}

}  // namespace detail

/// A = activation(Z), element-wise; A may be Z itself (in place).
template <typename T>
void activate(Activation activation, const MatT<T>& Z, MatT<T>& A) {
  if constexpr (std::is_floating_point_v<T>) {
    const auto z = Z.array();
    switch (activation) {
      case Activation::Tanh:
        if constexpr (std::is_same_v<T, float>) {
          A = z.tanh().matrix();
        } else {
          A.resize(Z.rows(), Z.cols());
          detail::tanh_kernel(Z.data(), A.data(), Z.size());
        }
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
  return activation == Activation::Silu || activation == Activation::Sine;
}

}  // namespace uqnn
