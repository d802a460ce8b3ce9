#pragma once
/// @file A stack of dense layers on a slice of theta: the building block of Mlp, RNet's pre/post
/// layers and DeepONet's branch and trunk nets.
///
/// Layer l maps a_{l-1} [fan_in, n] to z_l = W_l a_{l-1} + b_l, a_l = act(z_l) (the last layer is
/// linear unless `activate_last`). W_l is stored row-major [fan_out, fan_in] followed by b_l, as in
/// PyTorch's nn.Linear, so theta vectors exchange with PyTorch unchanged.
#include <algorithm>
#include <string>
#include <vector>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/nn/activation.hpp"
#include "uqnn/nn/narrow_product.hpp"

namespace uqnn {

/// Initialisation of a dense layer's weights (biases start at zero).
enum class InitScheme {
  Glorot,  ///< U(-a, a), a = sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010); default for tanh-like
  He,      ///< N(0, 2 / fan_in) (He et al. 2015); default for relu-like
  Torch,   ///< U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases, PyTorch's nn.Linear default
};
/// One initialisation scheme of the closed set (`--init`, model.json).
struct InitSchemeKind {
  std::string name = {};
  InitScheme value = InitScheme::Glorot;
  std::string summary = {};
  std::vector<std::string> aliases = {};  ///< other spellings accepted (xavier, kaiming)
};
const Registry<InitSchemeKind>& init_scheme_kinds();
/// The scheme called `name` (or an alias); InputError naming the valid ones otherwise.
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
  std::vector<MatT<T>> post;  ///< a_l; the input of the first layer that ran is `input`, not post
  const MatT<T>* input = nullptr;  ///< that input: the caller's X (not copied), or post's slot when moved in
  Index first_layer = 1;           ///< the first layer that ran
  mutable MatT<T> scratch[2];  ///< the reverse pass's cotangents, alternating between layers
  /// The stack's output: a_L, or the input itself when no layer ran (first_layer = L + 1).
  const MatT<T>& output() const { return first_layer == static_cast<Index>(post.size()) ? *input : post.back(); }
  /// a_{l-1}, the input of layer l (1-based; l >= first_layer).
  const MatT<T>& layer_input(Index l) const { return l == first_layer ? *input : post[static_cast<std::size_t>(l - 1)]; }

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

/// dW += delta input^T ([out, n] [n, in]): a reduction over the n examples. Eigen's GEMM packs
/// both operands on every call and wastes most of its micro-kernel when out or in is tiny (a
/// network's 1-2 outputs, a data set's handful of features), so layers with one to four SIMD
/// packets of outputs or of inputs (the last may be partial) go through NarrowKernel (2-3x), others with a few outputs through one
/// matrix-vector product per output row (2.5x) and those with a handful of inputs through one per
/// input column (1.8x): the same sums in another order (2x16 networks of seed 003, n = 250-1200).
template <typename T, typename WeightGradient>
void add_weight_gradient(WeightGradient&& dW, const MatT<T>& delta, const MatT<T>& input) {
  constexpr Index kFew = 8;
  if constexpr (std::is_same_v<T, Dual>) {
    dW += dual_product(delta, input.transpose());
    return;
  }
  if (add_transposed_product<T>(dW, delta, input)) return;
  if (dW.rows() <= kFew / 2) {
    for (Index o = 0; o < dW.rows(); ++o) dW.row(o).noalias() += delta.row(o) * input.transpose();
  } else if (dW.cols() <= kFew) {
    for (Index k = 0; k < dW.cols(); ++k) dW.col(k).noalias() += delta * input.row(k).transpose();
  } else {
    // Over at most kExamplesPerProduct examples at a time: Eigen's GEMM on the whole depth (n up to
    // 10^4) runs at its full rate or at half of it depending on the process's state, not the
    // operands (100 x 100 from 1000 examples: 244 or 488 us on a Zen 5 host; B3's gradient 1.04
    // or 1.34 ms between runs of one binary), while products over 256 examples hold the full rate.
    constexpr Index kExamplesPerProduct = 256;
    const Index n = delta.cols();
    for (Index j = 0; j < n; j += kExamplesPerProduct) {
      const Index width = std::min(kExamplesPerProduct, n - j);
      dW.noalias() += delta.middleCols(j, width) * input.middleCols(j, width).transpose();
    }
  }
}
}  // namespace detail

/// Forward pass of the stack whose parameters start at `theta`; fills `tape`, which refers to X
/// (tape.input: X must outlive the reverse pass; a temporary X is moved into the tape instead).
/// With `first_layer` = k > 1, X is the (cached) output a_{k-1} of layer k - 1 and only layers
/// k..L run (earlier tape entries are stale): the subspace gradient's cache of leading layers whose
/// parameters are all fixed (seed 000 section 3.3).
///
/// A layer whose product goes through NarrowKernel applies relu, tanh or sigmoid as it stores its
/// outputs (detail::PacketActivation); other layers and activations take a separate pass.
template <typename T>
void dense_forward(const DenseStackSpec& spec, const T* theta, const MatT<T>& X, DenseStackTape<T>& tape,
                   Index first_layer = 1) {
  const Index L = spec.num_layers();
  tape.post.resize(static_cast<std::size_t>(L + 1));
  tape.pre.resize(static_cast<std::size_t>(L + 1));
  tape.input = &X;  // not copied: B1's X is tiny, bike sharing's 13,903 x 12 was copied per gradient
  tape.first_layer = first_layer;
  const bool keep_pre = activation_needs_preactivation(spec.activation);
  const T* p = theta;
  for (Index l = 1; l < first_layer; ++l) p += spec.widths[static_cast<std::size_t>(l)] * spec.widths[static_cast<std::size_t>(l - 1)] + spec.widths[static_cast<std::size_t>(l)];
  for (Index l = first_layer; l <= L; ++l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Index out = spec.widths[ls], in = spec.widths[ls - 1];
    // a_l = act(W a_{l-1} + b): the product goes straight into a_l, the activation in place.
    MatT<T>& a = tape.post[ls];
    const MatT<T>& input = tape.layer_input(l);
    const bool activated = l < L || spec.activate_last;
    bool fused = false;
    const bool has_packet_form = activated && !keep_pre && detail::with_packet_activation<T>(spec.activation, [&](auto activation) {
      fused = detail::weight_product<T, decltype(activation)>(p, out, in, input, p + out * in, a);
    });
    if (!has_packet_form) detail::weight_product(p, out, in, input, p + out * in, a);
    p += out * in + out;
    if (!activated || fused) continue;
    if (keep_pre) {
      tape.pre[ls] = a;
      activate(spec.activation, tape.pre[ls], a);
    } else {
      activate(spec.activation, a, a);
    }
  }
}

/// As above for a temporary X, which the tape keeps.
template <typename T>
void dense_forward(const DenseStackSpec& spec, const T* theta, MatT<T>&& X, DenseStackTape<T>& tape, Index first_layer = 1) {
  tape.post.resize(static_cast<std::size_t>(spec.num_layers() + 1));
  MatT<T>& kept = tape.post[static_cast<std::size_t>(first_layer - 1)];
  kept = std::move(X);
  dense_forward(spec, theta, static_cast<const MatT<T>&>(kept), tape, first_layer);
}

/// Which parameters of a dense stack need their gradient: the subspace gradient of VI-HMC skips
/// the weight-gradient work of the others and stops the reverse pass below the first layer that
/// has an active parameter (seed 000 section 3.3: PyTorch computes every gradient; we do not).
struct DenseStackMask {
  /// Per layer (index l - 1): local indices (0 .. out*in + out - 1, weight row-major then bias) of
  /// the active parameters, increasing.
  std::vector<IndexVec> active;
  /// Per layer: compute the whole weight gradient by one matrix product (many active weights)
  /// rather than one dot product per active weight.
  std::vector<char> full_weight_gradient;
  Index first_active_layer = 1;  ///< 1-based; num_layers() + 1 when nothing is active

  /// The mask of `spec` for active indices local to the stack's block (any order, in range).
  static DenseStackMask from_active(const DenseStackSpec& spec, const IndexVec& active_local);
  bool any_active() const { return first_active_layer <= static_cast<Index>(active.size()); }
};

/// Reverse pass: adds J^T d_output to grad[0, num_params) and, when `d_input` is given, writes the
/// cotangent of the stack's input. `d_output` is consumed (used as workspace). With a `mask`
/// (and no `d_input`) only the mask's active entries of grad are meaningful: the others may be
/// left unchanged or receive partial sums.
template <typename T>
void dense_backward(const DenseStackSpec& spec, const T* theta, const DenseStackTape<T>& tape, MatT<T>& d_output,
                    T* grad, MatT<T>* d_input, const DenseStackMask* mask = nullptr) {
  const Index L = spec.num_layers();
  const Index lowest = (mask && !d_input) ? mask->first_active_layer : 1;  // layers below need nothing
  Index offset = spec.num_params();  // walk the layers backwards from the end of the stack's block
  MatT<T>* delta = &d_output;
  int next = 0;  // the tape's scratch buffer that receives the next cotangent
  for (Index l = L; l >= lowest; --l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Index out = spec.widths[ls], in = spec.widths[ls - 1];
    offset -= out * in + out;
    const bool activated = l < L || spec.activate_last;
    T* g = grad + offset;
    Eigen::Map<RowMajorMatT<T>> dW(g, out, in);
    Eigen::Map<VecT<T>> db(g + out * in, out);
    const IndexVec* active = mask ? &mask->active[ls - 1] : nullptr;
    const MatT<T>& input = tape.layer_input(l);
    // The activation's derivative, dW and db in one pass over delta where the kernel takes it.
    bool fused = false;
    if (activated && !active)
      detail::with_packet_activation<T>(spec.activation, [&](auto activation) {
        fused = detail::add_activated_weight_gradient<T, decltype(activation)>(dW, db, *delta, tape.post[ls], input);
      });
    if (!fused) {
      if (activated) activation_backward(spec.activation, tape.pre[ls], tape.post[ls], *delta);
      if (!active || mask->full_weight_gradient[ls - 1]) {
        detail::add_weight_gradient(dW, *delta, input);
      } else if (!active->empty() && active->front() < out * in) {
        // A few active weights: one dot product each, on transposed copies so rows are contiguous.
        const MatT<T> delta_t = delta->transpose(), input_t = input.transpose();
        for (Index k : *active) {
          if (k >= out * in) break;
          g[k] += delta_t.col(k / in).dot(input_t.col(k % in));
        }
      }
      if (!active || !active->empty()) detail::add_row_sums<T>(db, *delta);
    }
    if (l > lowest || d_input) {
      // W^T delta: W^T is [in, out] column-major, which is W's row-major storage as it stands.
      MatT<T>& previous = tape.scratch[next];
      next ^= 1;
      detail::narrow_product(theta + offset, in, in, out, *delta, static_cast<const T*>(nullptr), previous);
      delta = &previous;
    }
  }
  if (d_input) *d_input = *delta;
}

/// One dense stack's share of a subspace gradient on inputs fixed at construction: its mask and
/// the cached output of its leading layers whose parameters are all fixed (computed once at the
/// base point). Used by Mlp and by DeepOnet's branch and trunk.
struct DenseStackSubspace {
  DenseStackSpec spec;
  DenseStackMask mask;
  Index first_layer = 1;  ///< forward passes start here
  Mat input;              ///< X, or the output of layer first_layer - 1 on X at the base point

  /// `base_params` points at the stack's block of the base point; `active_local` indexes that block.
  DenseStackSubspace(const DenseStackSpec& stack, const double* base_params, const IndexVec& active_local, const Mat& X);
  void forward(const double* params, DenseStackTape<double>& tape) const {
    dense_forward(spec, params, input, tape, first_layer);
  }
  /// Adds the active parameters' gradient to grad (the stack's block); consumes d_output.
  void backward(const double* params, const DenseStackTape<double>& tape, Mat& d_output, double* grad) const {
    dense_backward(spec, params, tape, d_output, grad, static_cast<Mat*>(nullptr), &mask);
  }
};

}  // namespace uqnn
