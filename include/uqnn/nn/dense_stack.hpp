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

/// Cached forward quantities needed by the reverse pass, plus the reverse pass's workspace.
///
/// Tapes recycle their matrices through a small per-thread pool: a tape takes a set of buffers
/// when constructed and returns them when destroyed, so evaluating the same network repeatedly (a
/// sampler's gradients) allocates nothing after the first call. Buffers are resized as needed.
template <typename T>
struct DenseStackTape {
  std::vector<MatT<T>> pre;   ///< z_l (kept only when the activation's derivative needs it)
  std::vector<MatT<T>> post;  ///< a_l, post[0] = input
  mutable MatT<T> scratch[2];  ///< the reverse pass's cotangents, alternating between layers
  const MatT<T>& output() const { return post.back(); }

  DenseStackTape() {
    auto& free = pool();
    if (!free.empty()) {
      Buffers& b = free.back();
      pre.swap(b.pre);
      post.swap(b.post);
      scratch[0].swap(b.scratch0);
      scratch[1].swap(b.scratch1);
      free.pop_back();
    }
  }
  ~DenseStackTape() {
    auto& free = pool();
    if (free.size() < kMaxPooled) free.push_back(Buffers{std::move(pre), std::move(post), std::move(scratch[0]), std::move(scratch[1])});
  }
  DenseStackTape(const DenseStackTape&) = delete;
  DenseStackTape& operator=(const DenseStackTape&) = delete;

 private:
  struct Buffers {
    std::vector<MatT<T>> pre, post;
    MatT<T> scratch0, scratch1;
  };
  static constexpr std::size_t kMaxPooled = 8;
  static std::vector<Buffers>& pool() {
    thread_local std::vector<Buffers> buffers;
    return buffers;
  }
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
  const bool keep_pre = activation_needs_preactivation(spec.activation);
  const T* p = theta;
  for (Index l = 1; l <= L; ++l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Index out = spec.widths[ls], in = spec.widths[ls - 1];
    const auto W = detail::weight_map(p, out, in);
    const Eigen::Map<const VecT<T>> b(p + out * in, out);
    p += out * in + out;
    // a_l = act(W a_{l-1} + b): the product goes straight into a_l, the activation in place.
    MatT<T>& a = tape.post[ls];
    a.noalias() = W * tape.post[ls - 1];
    a.colwise() += b;
    const bool activated = l < L || spec.activate_last;
    if (!activated) continue;
    if (keep_pre) {
      tape.pre[ls] = a;
      activate(spec.activation, tape.pre[ls], a);
    } else {
      activate(spec.activation, a, a);
    }
  }
}

/// Reverse pass: adds J^T d_output to grad[0, num_params) and, when `d_input` is given, writes the
/// cotangent of the stack's input. `d_output` is consumed (used as workspace).
template <typename T>
void dense_backward(const DenseStackSpec& spec, const T* theta, const DenseStackTape<T>& tape, MatT<T>& d_output,
                    T* grad, MatT<T>* d_input) {
  const Index L = spec.num_layers();
  Index offset = spec.num_params();  // walk the layers backwards from the end of the stack's block
  MatT<T>* delta = &d_output;
  int next = 0;  // the tape's scratch buffer that receives the next cotangent
  for (Index l = L; l >= 1; --l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Index out = spec.widths[ls], in = spec.widths[ls - 1];
    offset -= out * in + out;
    const bool activated = l < L || spec.activate_last;
    if (activated) activation_backward(spec.activation, tape.pre[ls], tape.post[ls], *delta);
    T* g = grad + offset;
    Eigen::Map<RowMajorMatT<T>> dW(g, out, in);
    Eigen::Map<VecT<T>> db(g + out * in, out);
    dW.noalias() += *delta * tape.post[ls - 1].transpose();
    db.noalias() += delta->rowwise().sum();
    if (l > 1 || d_input) {
      const auto W = detail::weight_map(theta + offset, out, in);
      MatT<T>& previous = tape.scratch[next];
      next ^= 1;
      previous.noalias() = W.transpose() * *delta;
      delta = &previous;
    }
  }
  if (d_input) *d_input = *delta;
}

}  // namespace uqnn
