#include "uqnn/nn/cnn.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <type_traits>

#include "uqnn/core/error.hpp"
#include "uqnn/nn/narrow_product.hpp"

namespace uqnn {

namespace {

// ---------------------------------------------------------------------------------------------
// Compiling the description: shapes, parameter blocks, checks.

std::string cnn_layer_label(const CnnLayer& l, const std::string& where) {
  return fmt::format("{} ({}{})", where, to_string(l.type), l.name.empty() ? "" : " " + l.name);
}

Index cnn_output_extent(Index in, Index kernel, Index stride, Index pad) { return (in + 2 * pad - kernel) / stride + 1; }

void check_cnn_window(const CnnLayer& l, const ImageShape& in, const std::string& label) {
  if (l.kernel_h < 1 || l.kernel_w < 1 || l.stride_h < 1 || l.stride_w < 1 || l.pad_h < 0 || l.pad_w < 0)
    throw InputError(fmt::format("{}: kernel {}x{}, stride {}x{} and padding {}x{} must be >= 1, >= 1 and >= 0", label,
                                 l.kernel_h, l.kernel_w, l.stride_h, l.stride_w, l.pad_h, l.pad_w));
  if (in.height + 2 * l.pad_h < l.kernel_h || in.width + 2 * l.pad_w < l.kernel_w)
    throw InputError(fmt::format("{}: kernel {}x{} is larger than its input {}x{} with padding {}x{}", label, l.kernel_h,
                                 l.kernel_w, in.height, in.width, l.pad_h, l.pad_w));
}

/// Assigns names to unnamed layers with parameters, fills shapes and offsets, adds the blocks.
/// Parameters and per-example activations a network may have (8 GB per draw, or per example, in double).
constexpr double kMaxCnnSize = 1e9;

void check_cnn_size(double size, const std::string& what, const std::string& label) {
  if (size > kMaxCnnSize) throw InputError(fmt::format("{}: {} {:.3g}, more than the {:g} uqnn takes", label, what, size, kMaxCnnSize));
}

void compile_cnn_layers(std::vector<CnnLayer>& layers, ImageShape shape, ParamLayout& layout, std::set<std::string>& names,
                    const std::string& where) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    CnnLayer& l = layers[i];
    const std::string label = cnn_layer_label(l, fmt::format("{}layer {}", where, i + 1));
    l.in_shape = shape;
    l.offset = layout.size();
    const auto named = [&](const char* kind) {
      if (l.name.empty()) l.name = fmt::format("{}{}", kind, layout.blocks().size());
      if (!names.insert(l.name).second)
        throw InputError(fmt::format("{}: the name '{}' is used by another layer (parameter names must be unique)", label, l.name));
    };
    ImageShape out = shape;
    switch (l.type) {
      case CnnLayerType::Conv: {
        named("conv");
        check_cnn_window(l, shape, label);
        if (l.out < 1 || l.groups < 1 || shape.channels % l.groups != 0 || l.out % l.groups != 0)
          throw InputError(fmt::format("{}: {} input and {} output channels must be >= 1 and divisible by groups {}", label,
                                       shape.channels, l.out, l.groups));
        check_cnn_size(static_cast<double>(layout.size()) + static_cast<double>(l.out) * static_cast<double>(shape.channels / l.groups) *
                           static_cast<double>(l.kernel_h) * static_cast<double>(l.kernel_w),
                   "parameters", label);
        const Index fan_in = shape.channels / l.groups * l.kernel_h * l.kernel_w;
        layout.add_matrix(l.name + ".weight", l.out, fan_in, fan_in);
        if (l.bias) layout.add_vector(l.name + ".bias", l.out, fan_in);
        out = {l.out, cnn_output_extent(shape.height, l.kernel_h, l.stride_h, l.pad_h),
               cnn_output_extent(shape.width, l.kernel_w, l.stride_w, l.pad_w)};
        break;
      }
      case CnnLayerType::MaxPool:
      case CnnLayerType::AvgPool:
        check_cnn_window(l, shape, label);
        if (2 * l.pad_h > l.kernel_h || 2 * l.pad_w > l.kernel_w)
          throw InputError(fmt::format("{}: padding {}x{} must be at most half the kernel {}x{} (as in PyTorch)", label,
                                       l.pad_h, l.pad_w, l.kernel_h, l.kernel_w));
        out = {shape.channels, cnn_output_extent(shape.height, l.kernel_h, l.stride_h, l.pad_h),
               cnn_output_extent(shape.width, l.kernel_w, l.stride_w, l.pad_w)};
        break;
      case CnnLayerType::GlobalAvgPool: out = {shape.channels, 1, 1}; break;
      case CnnLayerType::Flatten: out = {shape.size(), 1, 1}; break;
      case CnnLayerType::Linear:
        named("fc");
        if (l.out < 1) throw InputError(fmt::format("{}: {} output features must be >= 1", label, l.out));
        check_cnn_size(static_cast<double>(layout.size()) + static_cast<double>(l.out) * static_cast<double>(shape.size()), "parameters", label);
        layout.add_matrix(l.name + ".weight", l.out, shape.size(), shape.size());
        if (l.bias) layout.add_vector(l.name + ".bias", l.out, shape.size());
        out = {l.out, 1, 1};
        break;
      case CnnLayerType::Activation: break;
      case CnnLayerType::GroupNorm:
        named("gn");
        if (l.groups < 1 || shape.channels % l.groups != 0)
          throw InputError(fmt::format("{}: {} channels must be divisible by its {} groups", label, shape.channels, l.groups));
        if (!(l.eps > 0)) throw InputError(fmt::format("{}: eps {} must be > 0", label, l.eps));
        layout.add_vector(l.name + ".weight", shape.channels, 1);
        layout.add_vector(l.name + ".bias", shape.channels, 1);
        break;
      case CnnLayerType::FilterResponseNorm:
        named("frn");
        if (!(l.eps > 0)) throw InputError(fmt::format("{}: eps {} must be > 0", label, l.eps));
        layout.add_vector(l.name + ".weight", shape.channels, 1);
        layout.add_vector(l.name + ".bias", shape.channels, 1);
        layout.add_vector(l.name + ".tau", shape.channels, 1);
        break;
      case CnnLayerType::BatchNorm: {
        named("bn");
        const auto C = static_cast<std::size_t>(shape.channels);
        if (l.running_mean.empty()) l.running_mean.assign(C, 0.0);
        if (l.running_var.empty()) l.running_var.assign(C, 1.0);
        if (l.running_mean.size() != C || l.running_var.size() != C)
          throw InputError(fmt::format("{}: running_mean and running_var need {} entries (one per channel), not {} and {}", label,
                                       C, l.running_mean.size(), l.running_var.size()));
        for (double v : l.running_var)
          if (!(v + l.eps > 0)) throw InputError(fmt::format("{}: running_var + eps must be > 0", label));
        layout.add_vector(l.name + ".weight", shape.channels, 1);
        layout.add_vector(l.name + ".bias", shape.channels, 1);
        break;
      }
      case CnnLayerType::Residual: {
        if (l.body.empty()) throw InputError(fmt::format("{}: a residual block needs a body", label));
        compile_cnn_layers(l.body, shape, layout, names, fmt::format("{}layer {} body ", where, i + 1));
        compile_cnn_layers(l.shortcut, shape, layout, names, fmt::format("{}layer {} shortcut ", where, i + 1));
        out = l.body.back().out_shape;
        const ImageShape through = l.shortcut.empty() ? shape : l.shortcut.back().out_shape;
        if (!(out == through))
          throw InputError(fmt::format("{}: its body gives {} but its shortcut {} (they are added)", label, out.to_string(),
                                       through.to_string()));
        break;
      }
    }
    check_cnn_size(static_cast<double>(out.channels) * static_cast<double>(out.height) * static_cast<double>(out.width),
               "values per example in its output", label);
    if (out.channels < 1 || out.height < 1 || out.width < 1)
      throw InputError(fmt::format("{}: its output {} is empty", label, out.to_string()));
    l.out_shape = out;
    l.num_params = layout.size() - l.offset;
    shape = out;
  }
}

// ---------------------------------------------------------------------------------------------
// The passes. T is double, float or Dual (Hessian-vector products).

/// dst (=|+=) a b: Eigen's GEMM, or three double GEMMs for dual numbers (narrow_product.hpp).
template <typename T, typename Dst, typename A, typename B>
void cnn_gemm(Dst&& dst, const A& a, const B& b, bool accumulate) {
  if constexpr (std::is_same_v<T, Dual>) {
    if (accumulate) dst += detail::dual_product(a, b);
    else dst = detail::dual_product(a, b);
  } else {
    if (accumulate) dst.noalias() += a * b;
    else dst.noalias() = a * b;
  }
}

template <typename T>
struct CnnTape {
  MatT<T> out;
  MatT<T> aux;    ///< GroupNorm, FRN: the normalised input; Residual: the sum before the activation (if needed)
  MatT<T> stats;  ///< GroupNorm: 1 / sd per [group, example]; FRN: per [channel, example]
  std::vector<std::int32_t> argmax;  ///< MaxPool: the input entry (within its example) of each output
  std::vector<CnnTape> body, shortcut;
};

/// Examples per cnn_im2col chunk: about 2^18 entries of the column matrix (2 MB in double).
Index im2col_chunk_examples(Index P, Index K, Index n) { return std::clamp<Index>((Index{1} << 18) / std::max<Index>(1, P * K), 1, std::max<Index>(n, 1)); }

/// The range [first, last) of output positions o along one axis whose input i = o s - p + k lies in [0, extent).
inline std::pair<Index, Index> im2col_valid_range(Index k, Index stride, Index pad, Index extent, Index outputs) {
  // i >= 0: o >= (p - k) / s rounded up; i < extent: o <= (extent - 1 + p - k) / s rounded down.
  const Index low = pad - k, high = extent - 1 + pad - k;
  const Index first = low <= 0 ? 0 : (low + stride - 1) / stride;
  const Index last = high < 0 ? 0 : std::min(outputs, high / stride + 1);
  return {first, std::max(first, last)};
}

/// Columns of one example: cols[p + ld * ((c kh + ki) kw + kj)] = x[c, oh s - p + ki, ow s - p + kj] (0 outside).
template <typename T>
void cnn_im2col(const CnnLayer& l, const T* x, T* cols, Index ld) {
  const ImageShape& in = l.in_shape;
  const Index Ho = l.out_shape.height, Wo = l.out_shape.width;
  for (Index c = 0; c < in.channels; ++c) {
    const T* plane = x + c * in.plane();
    for (Index ki = 0; ki < l.kernel_h; ++ki) {
      const auto [oh0, oh1] = im2col_valid_range(ki, l.stride_h, l.pad_h, in.height, Ho);
      for (Index kj = 0; kj < l.kernel_w; ++kj) {
        T* dst = cols + ld * ((c * l.kernel_h + ki) * l.kernel_w + kj);
        const auto [ow0, ow1] = im2col_valid_range(kj, l.stride_w, l.pad_w, in.width, Wo);
        if (l.stride_h == 1 && l.stride_w == 1 && Wo == in.width && oh0 < oh1 && ow0 < ow1) {
          // A "same" convolution of stride 1: the output rows oh0..oh1-1 read input rows of the
          // same pitch, so their valid entries are one contiguous run of the input plane. One
          // copy of the run (its entries between the valid ones come from the neighbouring input
          // columns), then the padding entries zeroed: a few calls per (c, ki, kj) instead of three
          // per output row (rows are 7 to 28 values: the calls, not the bytes, were the cost).
          const T* src = plane + (oh0 - l.pad_h + ki) * in.width + (kj - l.pad_w);
          std::fill(dst, dst + oh0 * Wo, T(0));
          std::copy(src + ow0, src + (oh1 - 1 - oh0) * Wo + ow1, dst + oh0 * Wo + ow0);
          for (Index oh = oh0; oh < oh1; ++oh) {
            T* row = dst + oh * Wo;
            for (Index ow = 0; ow < ow0; ++ow) row[ow] = T(0);
            for (Index ow = ow1; ow < Wo; ++ow) row[ow] = T(0);
          }
          std::fill(dst + oh1 * Wo, dst + Ho * Wo, T(0));
          continue;
        }
        for (Index oh = 0; oh < Ho; ++oh) {
          T* row = dst + oh * Wo;
          if (oh < oh0 || oh >= oh1) {
            std::fill(row, row + Wo, T(0));
            continue;
          }
          const T* src = plane + (oh * l.stride_h - l.pad_h + ki) * in.width + (kj - l.pad_w);
          std::fill(row, row + ow0, T(0));
          if (l.stride_w == 1) std::copy(src + ow0, src + ow1, row + ow0);
          else
            for (Index ow = ow0; ow < ow1; ++ow) row[ow] = src[ow * l.stride_w];
          std::fill(row + ow1, row + Wo, T(0));
        }
      }
    }
  }
}

/// The adjoint of cnn_im2col: dx[c, ih, iw] += the columns' entries that came from it.
template <typename T>
void cnn_col2im_add(const CnnLayer& l, const T* cols, Index ld, T* dx) {
  const ImageShape& in = l.in_shape;
  const Index Ho = l.out_shape.height, Wo = l.out_shape.width;
  for (Index c = 0; c < in.channels; ++c) {
    T* plane = dx + c * in.plane();
    for (Index ki = 0; ki < l.kernel_h; ++ki) {
      const auto [oh0, oh1] = im2col_valid_range(ki, l.stride_h, l.pad_h, in.height, Ho);
      for (Index kj = 0; kj < l.kernel_w; ++kj) {
        const T* src = cols + ld * ((c * l.kernel_h + ki) * l.kernel_w + kj);
        const auto [ow0, ow1] = im2col_valid_range(kj, l.stride_w, l.pad_w, in.width, Wo);
        for (Index oh = oh0; oh < oh1; ++oh) {
          const T* row = src + oh * Wo;
          T* dst = plane + (oh * l.stride_h - l.pad_h + ki) * in.width + (kj - l.pad_w);
          for (Index ow = ow0; ow < ow1; ++ow) dst[ow * l.stride_w] += row[ow];
        }
      }
    }
  }
}

template <typename T>
void cnn_conv_forward(const CnnLayer& l, const T* theta, const MatT<T>& X, MatT<T>& Y) {
  const Index n = X.cols(), P = l.out_shape.plane(), Cout = l.out, G = l.groups;
  const Index K = l.in_shape.channels * l.kernel_h * l.kernel_w, Kg = K / G, Cg = Cout / G;
  const T* W = theta + l.offset;
  const T* b = l.bias ? W + Cout * Kg : nullptr;
  Y.resize(Cout * P, n);
  const Index m = im2col_chunk_examples(P, K, n);
  thread_local MatT<T> cols, prod;  // per-thread buffers: a sampler's gradients come again and again
  for (Index start = 0; start < n; start += m) {
    const Index mm = std::min(m, n - start), ld = mm * P;
    cols.resize(ld, K);
    for (Index e = 0; e < mm; ++e) cnn_im2col(l, X.col(start + e).data(), cols.data() + e * P, ld);
    prod.resize(ld, Cout);
    // [mm P, Kg] [Kg, Cg] per group: the weights [Cout, Kg] row-major are the transposed [Kg, Cout].
    for (Index g = 0; g < G; ++g)
      cnn_gemm<T>(prod.middleCols(g * Cg, Cg), cols.middleCols(g * Kg, Kg), Eigen::Map<const MatT<T>>(W + g * Cg * Kg, Kg, Cg), false);
    for (Index e = 0; e < mm; ++e)
      for (Index c = 0; c < Cout; ++c) {
        auto dst = Y.col(start + e).segment(c * P, P);
        if (b) dst = prod.col(c).segment(e * P, P).array() + b[c];
        else dst = prod.col(c).segment(e * P, P);
      }
  }
}

template <typename T>
void cnn_conv_backward(const CnnLayer& l, const T* theta, const MatT<T>& X, const MatT<T>& dY, T* grad, MatT<T>* dX) {
  const Index n = X.cols(), P = l.out_shape.plane(), Cout = l.out, G = l.groups;
  const Index K = l.in_shape.channels * l.kernel_h * l.kernel_w, Kg = K / G, Cg = Cout / G;
  const T* W = theta + l.offset;
  T* gW = grad + l.offset;
  T* gb = l.bias ? gW + Cout * Kg : nullptr;
  if (dX) dX->setZero(l.in_shape.size(), n);
  const Index m = im2col_chunk_examples(P, K, n);
  thread_local MatT<T> cols, d, dcols;
  for (Index start = 0; start < n; start += m) {
    const Index mm = std::min(m, n - start), ld = mm * P;
    d.resize(ld, Cout);
    for (Index e = 0; e < mm; ++e)
      for (Index c = 0; c < Cout; ++c) d.col(c).segment(e * P, P) = dY.col(start + e).segment(c * P, P);
    if (gb)
      for (Index c = 0; c < Cout; ++c) gb[c] += d.col(c).sum();
    cols.resize(ld, K);
    for (Index e = 0; e < mm; ++e) cnn_im2col(l, X.col(start + e).data(), cols.data() + e * P, ld);
    for (Index g = 0; g < G; ++g) {
      Eigen::Map<MatT<T>> gWg(gW + g * Cg * Kg, Kg, Cg);
      cnn_gemm<T>(gWg, cols.middleCols(g * Kg, Kg).transpose(), d.middleCols(g * Cg, Cg), true);
    }
    if (!dX) continue;
    dcols.resize(ld, K);
    for (Index g = 0; g < G; ++g)
      cnn_gemm<T>(dcols.middleCols(g * Kg, Kg), d.middleCols(g * Cg, Cg), Eigen::Map<const RowMajorMatT<T>>(W + g * Cg * Kg, Cg, Kg), false);
    for (Index e = 0; e < mm; ++e) cnn_col2im_add(l, dcols.data() + e * P, ld, dX->col(start + e).data());
  }
}

/// Calls visit(o, window) for every output position o of a pooling layer (one image, all channels),
/// where window(f) calls f(i) for the input positions i of o's window that lie inside the image
/// (padding contributes nothing), row by row: the loop that max and average pooling share.
template <typename Visit>
void for_each_pool_window(const CnnLayer& l, Visit&& visit) {
  const ImageShape &in = l.in_shape, &os = l.out_shape;
  for (Index c = 0; c < os.channels; ++c)
    for (Index oh = 0; oh < os.height; ++oh)
      for (Index ow = 0; ow < os.width; ++ow) {
        const Index h0 = oh * l.stride_h - l.pad_h, w0 = ow * l.stride_w - l.pad_w;
        const auto window = [&](auto&& f) {
          for (Index ih = std::max<Index>(h0, 0); ih < std::min(h0 + l.kernel_h, in.height); ++ih)
            for (Index iw = std::max<Index>(w0, 0); iw < std::min(w0 + l.kernel_w, in.width); ++iw)
              f(c * in.plane() + ih * in.width + iw);
        };
        visit(c * os.plane() + oh * os.width + ow, window);
      }
}

template <typename T>
void cnn_max_pool_forward(const CnnLayer& l, const MatT<T>& X, CnnTape<T>& tape) {
  const ImageShape &in = l.in_shape, &os = l.out_shape;
  const Index n = X.cols();
  tape.out.resize(os.size(), n);
  tape.argmax.resize(static_cast<std::size_t>(os.size() * n));
  for (Index j = 0; j < n; ++j) {
    const T* x = X.col(j).data();
    T* y = tape.out.col(j).data();
    std::int32_t* arg = tape.argmax.data() + j * os.size();
    if (l.pad_h == 0 && l.pad_w == 0) {  // every window inside the input: no bounds to check
      for (Index c = 0; c < os.channels; ++c)
        for (Index oh = 0; oh < os.height; ++oh)
          for (Index ow = 0; ow < os.width; ++ow) {
            const Index first = c * in.plane() + oh * l.stride_h * in.width + ow * l.stride_w;
            Index best = first;
            for (Index ki = 0; ki < l.kernel_h; ++ki)
              for (Index kj = 0; kj < l.kernel_w; ++kj) {
                const Index at = first + ki * in.width + kj;
                if (x[at] > x[best]) best = at;  // the first maximum, as PyTorch's CPU kernel
              }
            const Index o = c * os.plane() + oh * os.width + ow;
            y[o] = x[best];
            arg[o] = static_cast<std::int32_t>(best);
          }
      continue;
    }
    for_each_pool_window(l, [&](Index o, const auto& window) {
      Index best = -1;
      window([&](Index at) {
        if (best < 0 || x[at] > x[best]) best = at;  // the first maximum, as PyTorch's CPU kernel
      });
      y[o] = x[best];
      arg[o] = static_cast<std::int32_t>(best);
    });
  }
}

template <typename T>
void cnn_avg_pool_forward(const CnnLayer& l, const MatT<T>& X, MatT<T>& Y) {
  const ImageShape& os = l.out_shape;
  const Index n = X.cols();
  const T scale = T(1.0 / static_cast<double>(l.kernel_h * l.kernel_w));
  Y.resize(os.size(), n);
  for (Index j = 0; j < n; ++j) {
    const T* x = X.col(j).data();
    T* y = Y.col(j).data();
    for_each_pool_window(l, [&](Index o, const auto& window) {
      T sum(0);
      window([&](Index i) { sum += x[i]; });
      y[o] = sum * scale;
    });
  }
}

template <typename T>
void cnn_avg_pool_backward(const CnnLayer& l, const MatT<T>& dY, MatT<T>& dX) {
  const ImageShape& in = l.in_shape;
  const Index n = dY.cols();
  const T scale = T(1.0 / static_cast<double>(l.kernel_h * l.kernel_w));
  dX.setZero(in.size(), n);
  for (Index j = 0; j < n; ++j) {
    const T* dy = dY.col(j).data();
    T* dx = dX.col(j).data();
    for_each_pool_window(l, [&](Index o, const auto& window) {
      const T g = dy[o] * scale;
      window([&](Index i) { dx[i] += g; });
    });
  }
}

template <typename T>
void cnn_group_norm_forward(const CnnLayer& l, const T* theta, const MatT<T>& X, CnnTape<T>& tape) {
  using std::sqrt;
  const Index n = X.cols(), C = l.in_shape.channels, HW = l.in_shape.plane(), G = l.groups, M = C / G * HW;
  const T* gamma = theta + l.offset;
  const T* beta = gamma + C;
  tape.aux.resize(X.rows(), n);
  tape.stats.resize(G, n);
  tape.out.resize(X.rows(), n);
  const T inv_m = T(1.0 / static_cast<double>(M));
  for (Index j = 0; j < n; ++j)
    for (Index g = 0; g < G; ++g) {
      const auto x = X.col(j).segment(g * M, M).array();
      const T mean = x.sum() * inv_m;
      const T var = (x - mean).square().sum() * inv_m;
      const T rstd = T(1) / sqrt(var + T(l.eps));
      tape.stats(g, j) = rstd;
      tape.aux.col(j).segment(g * M, M) = ((x - mean) * rstd).matrix();
    }
  for (Index j = 0; j < n; ++j)
    for (Index c = 0; c < C; ++c)
      tape.out.col(j).segment(c * HW, HW) = (tape.aux.col(j).segment(c * HW, HW).array() * gamma[c] + beta[c]).matrix();
}

template <typename T>
void cnn_group_norm_backward(const CnnLayer& l, const T* theta, const CnnTape<T>& tape, const MatT<T>& dY, T* grad, MatT<T>* dX) {
  const Index n = dY.cols(), C = l.in_shape.channels, HW = l.in_shape.plane(), G = l.groups, M = C / G * HW;
  const T* gamma = theta + l.offset;
  T* dgamma = grad + l.offset;
  T* dbeta = dgamma + C;
  for (Index j = 0; j < n; ++j)
    for (Index c = 0; c < C; ++c) {
      const auto dy = dY.col(j).segment(c * HW, HW);
      dgamma[c] += dy.dot(tape.aux.col(j).segment(c * HW, HW));
      dbeta[c] += dy.sum();
    }
  if (!dX) return;
  dX->resize(dY.rows(), n);
  const T inv_m = T(1.0 / static_cast<double>(M));
  for (Index j = 0; j < n; ++j) {
    for (Index c = 0; c < C; ++c) dX->col(j).segment(c * HW, HW) = dY.col(j).segment(c * HW, HW) * gamma[c];  // d xhat
    for (Index g = 0; g < G; ++g) {
      auto dxhat = dX->col(j).segment(g * M, M);
      const auto xhat = tape.aux.col(j).segment(g * M, M);
      const T mean_d = dxhat.sum() * inv_m, mean_dx = dxhat.dot(xhat) * inv_m;
      dxhat = ((dxhat.array() - mean_d - xhat.array() * mean_dx) * tape.stats(g, j)).matrix();
    }
  }
}

template <typename T>
void cnn_frn_forward(const CnnLayer& l, const T* theta, const MatT<T>& X, CnnTape<T>& tape) {
  using std::sqrt;
  const Index n = X.cols(), C = l.in_shape.channels, HW = l.in_shape.plane();
  const T *gamma = theta + l.offset, *beta = gamma + C, *tau = beta + C;
  tape.aux.resize(X.rows(), n);
  tape.stats.resize(C, n);
  tape.out.resize(X.rows(), n);
  const T inv_m = T(1.0 / static_cast<double>(HW));
  for (Index j = 0; j < n; ++j)
    for (Index c = 0; c < C; ++c) {
      const auto x = X.col(j).segment(c * HW, HW).array();
      const T rstd = T(1) / sqrt(x.square().sum() * inv_m + T(l.eps));
      tape.stats(c, j) = rstd;
      auto xhat = tape.aux.col(j).segment(c * HW, HW);
      xhat = (x * rstd).matrix();
      auto y = tape.out.col(j).segment(c * HW, HW);
      for (Index i = 0; i < HW; ++i) {
        const T v = gamma[c] * xhat[i] + beta[c];
        y[i] = v > tau[c] ? v : tau[c];  // TLU: max(y, tau)
      }
    }
}

template <typename T>
void cnn_frn_backward(const CnnLayer& l, const T* theta, const CnnTape<T>& tape, const MatT<T>& dY, T* grad, MatT<T>* dX) {
  const Index n = dY.cols(), C = l.in_shape.channels, HW = l.in_shape.plane();
  const T *gamma = theta + l.offset, *beta = gamma + C, *tau = beta + C;
  T *dgamma = grad + l.offset, *dbeta = dgamma + C, *dtau = dbeta + C;
  if (dX) dX->resize(dY.rows(), n);
  const T inv_m = T(1.0 / static_cast<double>(HW));
  VecT<T> dxhat(HW);
  for (Index j = 0; j < n; ++j)
    for (Index c = 0; c < C; ++c) {
      const auto xhat = tape.aux.col(j).segment(c * HW, HW);
      const auto dz = dY.col(j).segment(c * HW, HW);
      for (Index i = 0; i < HW; ++i) {
        const T v = gamma[c] * xhat[i] + beta[c];
        if (v > tau[c]) {
          dgamma[c] += dz[i] * xhat[i];
          dbeta[c] += dz[i];
          dxhat[i] = dz[i] * gamma[c];
        } else {
          dtau[c] += dz[i];
          dxhat[i] = T(0);
        }
      }
      if (!dX) continue;
      const T mean_dx = dxhat.dot(xhat) * inv_m;
      dX->col(j).segment(c * HW, HW) = ((dxhat.array() - xhat.array() * mean_dx) * tape.stats(c, j)).matrix();
    }
}

template <typename T>
void cnn_batch_norm_forward(const CnnLayer& l, const T* theta, const MatT<T>& X, MatT<T>& Y) {
  const Index n = X.cols(), C = l.in_shape.channels, HW = l.in_shape.plane();
  const T *gamma = theta + l.offset, *beta = gamma + C;
  Y.resize(X.rows(), n);
  for (Index c = 0; c < C; ++c) {
    const T scale = gamma[c] * T(1.0 / std::sqrt(l.running_var[static_cast<std::size_t>(c)] + l.eps));
    const T shift = beta[c] - scale * T(l.running_mean[static_cast<std::size_t>(c)]);
    for (Index j = 0; j < n; ++j) Y.col(j).segment(c * HW, HW) = (X.col(j).segment(c * HW, HW).array() * scale + shift).matrix();
  }
}

template <typename T>
void cnn_batch_norm_backward(const CnnLayer& l, const T* theta, const MatT<T>& X, const MatT<T>& dY, T* grad, MatT<T>* dX) {
  const Index n = X.cols(), C = l.in_shape.channels, HW = l.in_shape.plane();
  const T* gamma = theta + l.offset;
  T *dgamma = grad + l.offset, *dbeta = dgamma + C;
  if (dX) dX->resize(X.rows(), n);
  for (Index c = 0; c < C; ++c) {
    const double rs = 1.0 / std::sqrt(l.running_var[static_cast<std::size_t>(c)] + l.eps);
    const T mean = T(l.running_mean[static_cast<std::size_t>(c)]);
    for (Index j = 0; j < n; ++j) {
      const auto dy = dY.col(j).segment(c * HW, HW);
      dgamma[c] += dy.dot(((X.col(j).segment(c * HW, HW).array() - mean) * T(rs)).matrix());
      dbeta[c] += dy.sum();
      if (dX) dX->col(j).segment(c * HW, HW) = dy * (gamma[c] * T(rs));
    }
  }
}

template <typename T>
const MatT<T>& cnn_forward_list(const std::vector<CnnLayer>& layers, const T* theta, const MatT<T>& X, std::vector<CnnTape<T>>& tapes);
template <typename T>
void cnn_backward_list(const std::vector<CnnLayer>& layers, const T* theta, const MatT<T>& X, const std::vector<CnnTape<T>>& tapes,
                   MatT<T>& dY, T* grad, MatT<T>* dX);

template <typename T>
void cnn_forward_layer(const CnnLayer& l, const T* theta, const MatT<T>& X, CnnTape<T>& tape) {
  const Index n = X.cols();
  switch (l.type) {
    case CnnLayerType::Conv: cnn_conv_forward(l, theta, X, tape.out); return;
    case CnnLayerType::MaxPool: cnn_max_pool_forward(l, X, tape); return;
    case CnnLayerType::AvgPool: cnn_avg_pool_forward(l, X, tape.out); return;
    case CnnLayerType::GlobalAvgPool: {
      const Index C = l.in_shape.channels, HW = l.in_shape.plane();
      const T scale = T(1.0 / static_cast<double>(HW));
      tape.out.resize(C, n);
      for (Index j = 0; j < n; ++j)
        for (Index c = 0; c < C; ++c) tape.out(c, j) = X.col(j).segment(c * HW, HW).sum() * scale;
      return;
    }
    case CnnLayerType::Flatten: tape.out = X; return;
    case CnnLayerType::Linear: {
      const Index in = l.in_shape.size();
      const T* W = theta + l.offset;
      cnn_gemm<T>(tape.out, Eigen::Map<const RowMajorMatT<T>>(W, l.out, in), X, false);
      if (l.bias) tape.out.colwise() += Eigen::Map<const VecT<T>>(W + l.out * in, l.out);
      return;
    }
    case CnnLayerType::Activation: activate(l.activation, X, tape.out); return;
    case CnnLayerType::GroupNorm: cnn_group_norm_forward(l, theta, X, tape); return;
    case CnnLayerType::FilterResponseNorm: cnn_frn_forward(l, theta, X, tape); return;
    case CnnLayerType::BatchNorm: cnn_batch_norm_forward(l, theta, X, tape.out); return;
    case CnnLayerType::Residual: {
      const MatT<T>& body = cnn_forward_list(l.body, theta, X, tape.body);
      const MatT<T>& shortcut = l.shortcut.empty() ? X : cnn_forward_list(l.shortcut, theta, X, tape.shortcut);
      if (activation_needs_preactivation(l.activation)) {
        tape.aux = body + shortcut;
        activate(l.activation, tape.aux, tape.out);
      } else {
        tape.out = body + shortcut;
        activate(l.activation, tape.out, tape.out);
      }
      return;
    }
  }
}

/// Adds the layer's parameter gradient to grad and, when dX is given, writes its input's cotangent.
/// dY may be used as workspace.
template <typename T>
void cnn_backward_layer(const CnnLayer& l, const T* theta, const MatT<T>& X, const CnnTape<T>& tape, MatT<T>& dY, T* grad, MatT<T>* dX) {
  const Index n = X.cols();
  switch (l.type) {
    case CnnLayerType::Conv: cnn_conv_backward(l, theta, X, dY, grad, dX); return;
    case CnnLayerType::MaxPool: {
      if (!dX) return;
      const Index out_size = l.out_shape.size();
      dX->setZero(l.in_shape.size(), n);
      for (Index j = 0; j < n; ++j) {
        const std::int32_t* arg = tape.argmax.data() + j * out_size;
        T* dx = dX->col(j).data();
        const T* dy = dY.col(j).data();
        for (Index o = 0; o < out_size; ++o) dx[arg[o]] += dy[o];
      }
      return;
    }
    case CnnLayerType::AvgPool:
      if (dX) cnn_avg_pool_backward(l, dY, *dX);
      return;
    case CnnLayerType::GlobalAvgPool: {
      if (!dX) return;
      const Index C = l.in_shape.channels, HW = l.in_shape.plane();
      const T scale = T(1.0 / static_cast<double>(HW));
      dX->resize(l.in_shape.size(), n);
      for (Index j = 0; j < n; ++j)
        for (Index c = 0; c < C; ++c) dX->col(j).segment(c * HW, HW).setConstant(dY(c, j) * scale);
      return;
    }
    case CnnLayerType::Flatten:
      if (dX) dX->swap(dY);
      return;
    case CnnLayerType::Linear: {
      const Index in = l.in_shape.size();
      const T* W = theta + l.offset;
      Eigen::Map<RowMajorMatT<T>> gW(grad + l.offset, l.out, in);
      cnn_gemm<T>(gW, dY, X.transpose(), true);
      if (l.bias) Eigen::Map<VecT<T>>(grad + l.offset + l.out * in, l.out) += dY.rowwise().sum();
      if (dX) cnn_gemm<T>(*dX, Eigen::Map<const RowMajorMatT<T>>(W, l.out, in).transpose(), dY, false);
      return;
    }
    case CnnLayerType::Activation:
      if (!dX) return;
      activation_backward(l.activation, X, tape.out, dY);
      dX->swap(dY);
      return;
    case CnnLayerType::GroupNorm: cnn_group_norm_backward(l, theta, tape, dY, grad, dX); return;
    case CnnLayerType::FilterResponseNorm: cnn_frn_backward(l, theta, tape, dY, grad, dX); return;
    case CnnLayerType::BatchNorm: cnn_batch_norm_backward(l, theta, X, dY, grad, dX); return;
    case CnnLayerType::Residual: {
      activation_backward(l.activation, tape.aux, tape.out, dY);  // dY is now the sum's cotangent
      MatT<T> d_body = dY, d_from_body;
      cnn_backward_list(l.body, theta, X, tape.body, d_body, grad, dX ? &d_from_body : nullptr);
      if (l.shortcut.empty()) {
        if (dX) *dX = d_from_body + dY;
        return;
      }
      MatT<T> d_from_shortcut;
      cnn_backward_list(l.shortcut, theta, X, tape.shortcut, dY, grad, dX ? &d_from_shortcut : nullptr);
      if (dX) *dX = d_from_body + d_from_shortcut;
      return;
    }
  }
}

template <typename T>
const MatT<T>& cnn_forward_list(const std::vector<CnnLayer>& layers, const T* theta, const MatT<T>& X, std::vector<CnnTape<T>>& tapes) {
  tapes.resize(layers.size());
  const MatT<T>* input = &X;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    cnn_forward_layer(layers[i], theta, *input, tapes[i]);
    input = &tapes[i].out;
  }
  return *input;
}

template <typename T>
void cnn_backward_list(const std::vector<CnnLayer>& layers, const T* theta, const MatT<T>& X, const std::vector<CnnTape<T>>& tapes,
                   MatT<T>& dY, T* grad, MatT<T>* dX) {
  // Two buffers in turn: the cotangent of a layer's output, and of its input.
  MatT<T> spare;
  MatT<T>* current = &dY;
  MatT<T>* other = &spare;
  for (std::size_t i = layers.size(); i-- > 0;) {
    const MatT<T>& input = i > 0 ? tapes[i - 1].out : X;
    if (i == 0 && !dX) {  // the list's input needs no cotangent
      cnn_backward_layer(layers[i], theta, input, tapes[i], *current, grad, static_cast<MatT<T>*>(nullptr));
      return;
    }
    cnn_backward_layer(layers[i], theta, input, tapes[i], *current, grad, other);
    std::swap(current, other);
  }
  if (dX) dX->swap(*current);
}

/// Weights of one conv or linear block per the scheme (PyTorch's fans: fan_out = out * kh * kw).
void initialize_cnn_weights(Vec& theta, Index offset, Index count, double fan_in, double fan_out, InitScheme scheme, Rng& rng) {
  for (Index i = 0; i < count; ++i) {
    switch (scheme) {
      case InitScheme::Glorot: {
        const double a = std::sqrt(6.0 / (fan_in + fan_out));
        theta[offset + i] = rng.uniform(-a, a);
        break;
      }
      case InitScheme::He: theta[offset + i] = rng.normal(0.0, std::sqrt(2.0 / fan_in)); break;
      case InitScheme::Torch: {
        const double a = 1.0 / std::sqrt(fan_in);
        theta[offset + i] = rng.uniform(-a, a);
        break;
      }
    }
  }
}

void initialize_cnn_layers(const std::vector<CnnLayer>& layers, Vec& theta, InitScheme scheme, Rng& rng) {
  for (const CnnLayer& l : layers) {
    switch (l.type) {
      case CnnLayerType::Conv:
      case CnnLayerType::Linear: {
        const bool conv = l.type == CnnLayerType::Conv;
        const Index fan_in = conv ? l.in_shape.channels / l.groups * l.kernel_h * l.kernel_w : l.in_shape.size();
        const Index fan_out = conv ? l.out / l.groups * l.kernel_h * l.kernel_w : l.out;
        initialize_cnn_weights(theta, l.offset, l.out * fan_in, static_cast<double>(fan_in), static_cast<double>(fan_out), scheme, rng);
        if (l.bias) {
          auto b = theta.segment(l.offset + l.out * fan_in, l.out);
          if (scheme == InitScheme::Torch) initialize_cnn_weights(theta, l.offset + l.out * fan_in, l.out, static_cast<double>(fan_in), 0.0, scheme, rng);
          else b.setZero();
        }
        break;
      }
      case CnnLayerType::GroupNorm:
      case CnnLayerType::BatchNorm:
      case CnnLayerType::FilterResponseNorm: {
        const Index C = l.in_shape.channels;
        theta.segment(l.offset, C).setOnes();                  // weight
        theta.segment(l.offset + C, l.num_params - C).setZero();  // bias (and FRN's tau)
        break;
      }
      case CnnLayerType::Residual:
        initialize_cnn_layers(l.body, theta, scheme, rng);
        initialize_cnn_layers(l.shortcut, theta, scheme, rng);
        break;
      default: break;
    }
  }
}

Index cnn_activations_of(const std::vector<CnnLayer>& layers) {
  Index total = 0;
  for (const CnnLayer& l : layers) {
    total += l.out_shape.size();
    if (l.type == CnnLayerType::Residual) total += cnn_activations_of(l.body) + cnn_activations_of(l.shortcut);
  }
  return total;
}

}  // namespace

Cnn::Cnn(ImageShape input, std::vector<CnnLayer> layers, InitScheme init, std::string description)
    : input_(input), layers_(std::move(layers)), init_(init), description_(std::move(description)) {
  if (input_.channels < 1 || input_.height < 1 || input_.width < 1)
    throw InputError("cnn model: the input shape " + input_.to_string() + " must have every size >= 1");
  if (layers_.empty()) throw InputError("cnn model: the network has no layer");
  check_cnn_size(static_cast<double>(input_.channels) * static_cast<double>(input_.height) * static_cast<double>(input_.width),
             "values per example", "cnn model: the input " + input_.to_string());
  std::set<std::string> names;
  compile_cnn_layers(layers_, input_, layout_, names, "cnn model: ");
  output_dim_ = layers_.back().out_shape.size();
  activation_size_ = cnn_activations_of(layers_);
}


Vec Cnn::initial_params(Rng& rng) const {
  Vec theta = Vec::Zero(num_params());
  initialize_cnn_layers(layers_, theta, init_, rng);
  return theta;
}

nlohmann::json Cnn::to_json() const {
  nlohmann::json layers = nlohmann::json::array();
  for (const CnnLayer& l : layers_) layers.push_back(l.to_json());
  nlohmann::json j = {{"kind", "cnn"},
                      {"input_shape", {input_.channels, input_.height, input_.width}},
                      {"output_dim", output_dim_},
                      {"layers", layers},
                      {"init", to_string(init_)}};
  if (!description_.empty()) j["description"] = description_;
  return with_precision(j);
}

Cnn Cnn::from_json(const nlohmann::json& d) {
  const nlohmann::json& dims = d.at("input_shape");
  const auto whole = [](const nlohmann::json& v) {
    return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
           v.get<double>() >= 1 && v.get<double>() <= 1e6;
  };
  if (!dims.is_array() || dims.size() != 3 || !std::all_of(dims.begin(), dims.end(), whole))
    throw InputError("cnn model: input_shape must be [C, H, W] of whole numbers in [1, 1e6], not " + dims.dump());
  const std::vector<Index> shape{static_cast<Index>(dims[0].get<double>()), static_cast<Index>(dims[1].get<double>()),
                                 static_cast<Index>(dims[2].get<double>())};
  std::vector<CnnLayer> layers;
  for (const auto& l : d.at("layers")) layers.push_back(CnnLayer::from_json(l));
  Cnn net(ImageShape{shape[0], shape[1], shape[2]}, std::move(layers), parse_init_scheme(d.value("init", std::string("he"))),
          d.value("description", std::string()));
  if (d.contains("output_dim") && d.at("output_dim").get<Index>() != net.output_dim())
    throw InputError(fmt::format("cnn model: output_dim {} but the layers give {}", d.at("output_dim").get<Index>(), net.output_dim()));
  return net;
}

template <typename T>
MatT<T> Cnn::evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const {
  // Per-thread tapes: a sampler's gradients come again and again with the same shapes, and fresh
  // buffers of this size cost page faults on every call.
  thread_local std::vector<CnnTape<T>> tapes;
  thread_local MatT<T> dY;
  const Index n = X.cols(), chunk = examples_per_pass();
  if (n <= chunk) {
    const MatT<T>& Y = cnn_forward_list(layers_, theta, X, tapes);
    if (!loss) return Y;
    dY.resize(Y.rows(), Y.cols());
    *loss_value = (*loss)(Y, dY);
    cnn_backward_list(layers_, theta, X, tapes, dY, grad, static_cast<MatT<T>*>(nullptr));
    return MatT<T>();
  }
  // Many examples (a full-batch gradient, predictions on a test set): in chunks, so that the
  // activations kept never exceed a chunk's. The outputs first; then, with the loss's cotangent,
  // each chunk forward again and backward (one more forward pass, bounded memory).
  MatT<T> Y(output_dim_, n), X_chunk;
  for (Index start = 0; start < n; start += chunk) {
    const Index m = std::min(chunk, n - start);
    X_chunk = X.middleCols(start, m);
    Y.middleCols(start, m) = cnn_forward_list(layers_, theta, X_chunk, tapes);
  }
  if (!loss) return Y;
  MatT<T> dY_all(Y.rows(), n);
  *loss_value = (*loss)(Y, dY_all);
  for (Index start = 0; start < n; start += chunk) {
    const Index m = std::min(chunk, n - start);
    X_chunk = X.middleCols(start, m);
    cnn_forward_list(layers_, theta, X_chunk, tapes);
    dY = dY_all.middleCols(start, m);
    cnn_backward_list(layers_, theta, X_chunk, tapes, dY, grad, static_cast<MatT<T>*>(nullptr));
  }
  return MatT<T>();
}

Cnn::LayerStatistics Cnn::layer_statistics(const Vec& theta, const Mat& X, const Mat& G) const {
  if (theta.size() < num_params() || X.rows() != input_dim() || G.rows() != output_dim_ || G.cols() != X.cols())
    throw std::invalid_argument(fmt::format("cnn layer_statistics: theta {}, X {}x{}, G {}x{} for a network of {} parameters, {} inputs, {} outputs",
                                            theta.size(), X.rows(), X.cols(), G.rows(), G.cols(), num_params(), input_dim(), output_dim_));
  std::vector<CnnTape<double>> tapes;
  cnn_forward_list(layers_, theta.data(), X, tapes);
  LayerStatistics s;
  Mat current = G, other;
  Vec grad = Vec::Zero(num_params());  // the parameter gradient, not wanted here
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const Mat& input = i > 0 ? tapes[i - 1].out : X;
    if (layers_[i].type == CnnLayerType::Conv || layers_[i].type == CnnLayerType::Linear) {
      s.layer.push_back(i);
      s.inputs.push_back(input);
      s.output_cotangents.push_back(current);  // a copy: the backward pass may use `current` as workspace
    }
    if (i == 0) break;
    cnn_backward_layer(layers_[i], theta.data(), input, tapes[i], current, grad.data(), &other);
    std::swap(current, other);
  }
  std::reverse(s.layer.begin(), s.layer.end());
  std::reverse(s.inputs.begin(), s.inputs.end());
  std::reverse(s.output_cotangents.begin(), s.output_cotangents.end());
  return s;
}

Index Cnn::examples_per_pass() const {
  // About 2^25 activation values kept (256 MB in double): batch 125 of a ResNet-8 of width 16 on
  // 28 x 28 images goes in one pass.
  return std::max<Index>(1, (Index{1} << 25) / std::max<Index>(1, activation_size_));
}

template MatT<double> Cnn::evaluate<double>(const double*, const MatT<double>&, const OutputLoss<double>*, double*, double*) const;
template MatT<float> Cnn::evaluate<float>(const float*, const MatT<float>&, const OutputLoss<float>*, float*, float*) const;
template MatT<Dual> Cnn::evaluate<Dual>(const Dual*, const MatT<Dual>&, const OutputLoss<Dual>*, Dual*, Dual*) const;

}  // namespace uqnn
