#pragma once
/// @file A stack of dense layers on a slice of theta: the building block of Mlp, RNet's pre/post
/// layers and DeepONet's branch and trunk nets.
///
/// Layer l maps a_{l-1} [fan_in, n] to z_l = W_l a_{l-1} + b_l, a_l = act(z_l) (the last layer is
/// linear unless `activate_last`). W_l is stored row-major [fan_out, fan_in] followed by b_l, as in
/// PyTorch's nn.Linear, so theta vectors exchange with PyTorch unchanged.
#include <string>
#include <vector>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/nn/activation.hpp"

namespace uqnn {

/// Initialisation of a dense layer's weights (biases start at zero).
enum class InitScheme {
  Glorot,  ///< U(-a, a), a = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010); default for tanh-like
  He,      ///< N(0, 2 / fan_in) (He et al. 2015); default for relu-like
  Torch,   ///< U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases, PyTorch's nn.Linear default
};
InitScheme parse_init_scheme(const std::string& name);
std::string to_string(InitScheme scheme);
/// Glorot for tanh, sigmoid, sine and identity; He for relu and silu.
InitScheme default_init_scheme(Activation activation);

struct DenseStackSpec {
  std::vector<Index> widths;  ///< [input, hidden..., output]; at least two entries
  Activation activation = Activation::Tanh;
  bool activate_last = false;

  Index num_layers() const { return static_cast<Index>(widths.size()) - 1; }
  Index num_params() const;
  /// Adds "prefix{l}.weight" and "prefix{l}.bias" blocks (l = 1..L) to `layout`; returns the offset.
  Index add_to_layout(ParamLayout& layout, const std::string& prefix) const;
  /// Writes initial weights into theta[offset, offset + num_params()).
  void initialize(Vec& theta, Index offset, InitScheme scheme, Rng& rng) const;
};

/// Cached forward quantities needed by the reverse pass.
template <typename T>
struct DenseStackTape {
  std::vector<MatT<T>> pre;   ///< z_l (kept only when the activation's derivative needs it)
  std::vector<MatT<T>> post;  ///< a_l, post[0] = input
  const MatT<T>& output() const { return post.back(); }
};

namespace detail {
template <typename T>
Eigen::Map<const RowMajorMatT<T>> weight_map(const T* theta, Index rows, Index cols) {
  return Eigen::Map<const RowMajorMatT<T>>(theta, rows, cols);
}
}  // namespace detail

/// Forward pass of the stack whose parameters start at `theta`; fills `tape` (post[0] = X).
template <typename T>
void dense_forward(const DenseStackSpec& spec, const T* theta, const MatT<T>& X, DenseStackTape<T>& tape) {
  const Index L = spec.num_layers();
  tape.post.resize(static_cast<std::size_t>(L + 1));
  tape.pre.resize(static_cast<std::size_t>(L + 1));
  tape.post[0] = X;
  const T* p = theta;
  for (Index l = 1; l <= L; ++l) {
    const Index out = spec.widths[static_cast<std::size_t>(l)], in = spec.widths[static_cast<std::size_t>(l - 1)];
    const auto W = detail::weight_map(p, out, in);
    const Eigen::Map<const VecT<T>> b(p + out * in, out);
    p += out * in + out;
    auto& z = tape.pre[static_cast<std::size_t>(l)];
    z.noalias() = W * tape.post[static_cast<std::size_t>(l - 1)];
    z.colwise() += b;
    const bool activated = l < L || spec.activate_last;
    if (!activated) {
      tape.post[static_cast<std::size_t>(l)].swap(z);
    } else {
      activate(spec.activation, z, tape.post[static_cast<std::size_t>(l)]);
      if (!activation_needs_preactivation(spec.activation)) z.resize(0, 0);
    }
  }
}

/// Reverse pass: adds J^T d_output to grad[0, num_params) and, when `d_input` is given, writes the
/// cotangent of the stack's input. `d_output` is consumed (used as workspace).
template <typename T>
void dense_backward(const DenseStackSpec& spec, const T* theta, const DenseStackTape<T>& tape, MatT<T>& d_output,
                    T* grad, MatT<T>* d_input) {
  const Index L = spec.num_layers();
  // Offsets of each layer's parameters.
  std::vector<Index> offset(static_cast<std::size_t>(L + 1), 0);
  for (Index l = 1; l < L; ++l)
    offset[static_cast<std::size_t>(l + 1)] = offset[static_cast<std::size_t>(l)] +
        spec.widths[static_cast<std::size_t>(l)] * spec.widths[static_cast<std::size_t>(l - 1)] + spec.widths[static_cast<std::size_t>(l)];
  MatT<T> delta;
  delta.swap(d_output);
  for (Index l = L; l >= 1; --l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Index out = spec.widths[ls], in = spec.widths[ls - 1];
    const bool activated = l < L || spec.activate_last;
    if (activated) activation_backward(spec.activation, tape.pre[ls], tape.post[ls], delta);
    T* g = grad + offset[ls];
    Eigen::Map<RowMajorMatT<T>> dW(g, out, in);
    Eigen::Map<VecT<T>> db(g + out * in, out);
    dW.noalias() += delta * tape.post[ls - 1].transpose();
    db.noalias() += delta.rowwise().sum();
    if (l > 1 || d_input) {
      const auto W = detail::weight_map(theta + offset[ls], out, in);
      MatT<T> previous;
      previous.noalias() = W.transpose() * delta;
      delta.swap(previous);
    }
  }
  if (d_input) d_input->swap(delta);
}

}  // namespace uqnn
