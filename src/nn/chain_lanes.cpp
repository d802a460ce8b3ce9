#include "uqnn/nn/chain_lanes.hpp"

#include <algorithm>
#include <type_traits>

namespace uqnn {

namespace {

namespace ei = Eigen::internal;

template <typename T>
using LanePacket = typename ei::packet_traits<T>::type;
template <typename T>
constexpr Index kLaneWidth = DenseStackLanes<T>::kLanes;

/// Register tiles. Every kernel below is an outer-product micro-kernel over packets: a tile of
/// kTileRows x kTileCols accumulators takes kTileRows + kTileCols loads per kTileRows * kTileCols
/// fused multiply-adds (the first version took one or two loads per FMA and ran at about a third of
/// the FMA rate). 4 x 6 = 24 accumulators fit AVX-512's 32 registers; AVX2 has 16, hence 4 x 3.
#ifdef __AVX512F__
constexpr int kTileCols = 6;
#else
constexpr int kTileCols = 3;
#endif
constexpr int kTileRows = 4;
/// Examples per chunk of the weight gradient's reduction: the chunk's cotangents and inputs
/// (width x 32 packets each) stay in L1/L2 while every tile of the layer passes over them.
constexpr Index kReductionChunk = 32;

/// Calls f(std::integral_constant<int, R>{}, first) for blocks of up to kTileRows of `count` rows.
template <typename F>
void for_row_blocks(Index count, F&& f) {
  Index r = 0;
  for (; r + kTileRows <= count; r += kTileRows) f(std::integral_constant<int, kTileRows>{}, r);
  switch (count - r) {
    case 3: f(std::integral_constant<int, 3>{}, r); break;
    case 2: f(std::integral_constant<int, 2>{}, r); break;
    case 1: f(std::integral_constant<int, 1>{}, r); break;
    default: break;
  }
}

/// Layer 1's input: the data X [in, n], the same for every chain, broadcast to a packet.
template <typename T>
struct LaneBroadcastInput {
  const MatT<T>& X;
  LanePacket<T> load(Index i, Index j) const { return ei::pset1<LanePacket<T>>(X(i, j)); }
};
/// A hidden layer's input: the layer below's activations in lanes, [V n, in].
template <typename T>
struct LaneActivations {
  const T* a;
  Index n;
  LanePacket<T> load(Index i, Index j) const { return ei::ploadu<LanePacket<T>>(a + (i * n + j) * kLaneWidth<T>); }
};
/// The bias's "input": its gradient is the sum of the cotangents (d * 1 + acc is exactly d + acc).
template <typename T>
struct LaneOnesInput {
  LanePacket<T> load(Index, Index) const { return ei::pset1<LanePacket<T>>(T(1)); }
};

/// z[o](j) = b[o] + sum_i W[o][i] x[i](j) for the RO outputs from o0 and the RJ examples from j0,
/// summed over i in order.
template <int RO, int RJ, typename T, typename Input>
inline void forward_tile(const T* W, const T* b, Index o0, Index in, Index n, Index j0, const Input& x, T* z) {
  using P = LanePacket<T>;
  constexpr Index V = kLaneWidth<T>;
  P acc[RO][RJ];
  for (int r = 0; r < RO; ++r) {
    const P bias = ei::ploadu<P>(b + (o0 + r) * V);
    for (int k = 0; k < RJ; ++k) acc[r][k] = bias;
  }
  for (Index i = 0; i < in; ++i) {
    P w[RO];
    for (int r = 0; r < RO; ++r) w[r] = ei::ploadu<P>(W + ((o0 + r) * in + i) * V);
    for (int k = 0; k < RJ; ++k) {
      const P xk = x.load(i, j0 + k);
      for (int r = 0; r < RO; ++r) acc[r][k] = ei::pmadd(w[r], xk, acc[r][k]);
    }
  }
  for (int r = 0; r < RO; ++r)
    for (int k = 0; k < RJ; ++k) ei::pstoreu(z + ((o0 + r) * n + j0 + k) * V, acc[r][k]);
}

/// z[o](j) = b[o] + sum_i W[o][i] x[i](j); z is [V n, out]. Examples outermost: a tile's inputs stay
/// in L1 while every output block passes over them.
template <typename T, typename Input>
void lane_layer_forward(const T* W, const T* b, Index out, Index in, Index n, const Input& x, T* z) {
  Index j = 0;
  for (; j + kTileCols <= n; j += kTileCols)
    for_row_blocks(out, [&](auto ro, Index o0) { forward_tile<decltype(ro)::value, kTileCols>(W, b, o0, in, n, j, x, z); });
  for (; j < n; ++j) for_row_blocks(out, [&](auto ro, Index o0) { forward_tile<decltype(ro)::value, 1>(W, b, o0, in, n, j, x, z); });
}

/// g[o][i] += sum_{j in [j0, j1)} delta[o](j) x[i](j) for the RO outputs from o0 and the RI inputs
/// from i0, summed over j in order.
template <int RO, int RI, typename T, typename Input>
inline void weight_gradient_tile(const T* delta, Index o0, Index i0, Index in, Index n, Index j0, Index j1, const Input& x,
                                 T* g) {
  using P = LanePacket<T>;
  constexpr Index V = kLaneWidth<T>;
  P acc[RO][RI];
  for (int r = 0; r < RO; ++r)
    for (int k = 0; k < RI; ++k) acc[r][k] = ei::pset1<P>(T(0));
  for (Index j = j0; j < j1; ++j) {
    P d[RO];
    for (int r = 0; r < RO; ++r) d[r] = ei::ploadu<P>(delta + ((o0 + r) * n + j) * V);
    for (int k = 0; k < RI; ++k) {
      const P xk = x.load(i0 + k, j);
      for (int r = 0; r < RO; ++r) acc[r][k] = ei::pmadd(d[r], xk, acc[r][k]);
    }
  }
  for (int r = 0; r < RO; ++r)
    for (int k = 0; k < RI; ++k) {
      T* target = g + ((o0 + r) * in + i0 + k) * V;
      ei::pstoreu(target, ei::padd(ei::ploadu<P>(target), acc[r][k]));
    }
}

/// g[o][i] += sum_j delta[o](j) x[i](j) over the out x in weights (row-major), the sum over j in
/// chunks of kReductionChunk examples (each chunk's partial sum added in order). With LaneOnesInput
/// and in = 1 it is the bias gradient.
template <typename T, typename Input>
void lane_weight_gradient(const T* delta, Index out, Index in, Index n, const Input& x, T* g) {
  for (Index j0 = 0; j0 < n; j0 += kReductionChunk) {
    const Index j1 = std::min(n, j0 + kReductionChunk);
    for_row_blocks(out, [&](auto ro, Index o0) {
      constexpr int RO = decltype(ro)::value;
      Index i = 0;
      for (; i + kTileCols <= in; i += kTileCols) weight_gradient_tile<RO, kTileCols>(delta, o0, i, in, n, j0, j1, x, g);
      for (; i < in; ++i) weight_gradient_tile<RO, 1>(delta, o0, i, in, n, j0, j1, x, g);
    });
  }
}

/// d_input[i](j) = sum_o W[o][i] delta[o](j) for the RI inputs from i0 and the RJ examples from j0,
/// summed over o in order.
template <int RI, int RJ, typename T>
inline void input_cotangent_tile(const T* W, const T* delta, Index out, Index i0, Index in, Index n, Index j0, T* d_input) {
  using P = LanePacket<T>;
  constexpr Index V = kLaneWidth<T>;
  P acc[RI][RJ];
  for (int r = 0; r < RI; ++r)
    for (int k = 0; k < RJ; ++k) acc[r][k] = ei::pset1<P>(T(0));
  for (Index o = 0; o < out; ++o) {
    P w[RI];
    for (int r = 0; r < RI; ++r) w[r] = ei::ploadu<P>(W + (o * in + i0 + r) * V);
    for (int k = 0; k < RJ; ++k) {
      const P dk = ei::ploadu<P>(delta + (o * n + j0 + k) * V);
      for (int r = 0; r < RI; ++r) acc[r][k] = ei::pmadd(w[r], dk, acc[r][k]);
    }
  }
  for (int r = 0; r < RI; ++r)
    for (int k = 0; k < RJ; ++k) ei::pstoreu(d_input + ((i0 + r) * n + j0 + k) * V, acc[r][k]);
}

/// d_input[i](j) = sum_o W[o][i] delta[o](j), summed over o in order; d_input is [V n, in].
template <typename T>
void lane_input_cotangent(const T* W, const T* delta, Index out, Index in, Index n, T* d_input) {
  Index j = 0;
  for (; j + kTileCols <= n; j += kTileCols)
    for_row_blocks(in, [&](auto ri, Index i0) { input_cotangent_tile<decltype(ri)::value, kTileCols>(W, delta, out, i0, in, n, j, d_input); });
  for (; j < n; ++j)
    for_row_blocks(in, [&](auto ri, Index i0) { input_cotangent_tile<decltype(ri)::value, 1>(W, delta, out, i0, in, n, j, d_input); });
}

}  // namespace

template <typename T>
void DenseStackLanes<T>::forward(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X) {
  forward_from(spec, theta_lanes, X.cols(), LaneBroadcastInput<T>{X});
}

template <typename T>
void DenseStackLanes<T>::forward_on_own_inputs(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X_lanes) {
  forward_from(spec, theta_lanes, X_lanes.rows() / kLanes, LaneActivations<T>{X_lanes.data(), X_lanes.rows() / kLanes});
}

template <typename T>
void DenseStackLanes<T>::backward(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X, MatT<T>& d_output,
                                  T* grad_lanes) {
  backward_from(spec, theta_lanes, X.cols(), LaneBroadcastInput<T>{X}, d_output, grad_lanes);
}

template <typename T>
void DenseStackLanes<T>::backward_on_own_inputs(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X_lanes,
                                                MatT<T>& d_output, T* grad_lanes) {
  const Index n = X_lanes.rows() / kLanes;
  backward_from(spec, theta_lanes, n, LaneActivations<T>{X_lanes.data(), n}, d_output, grad_lanes);
}

template <typename T>
template <typename Input>
void DenseStackLanes<T>::forward_from(const DenseStackSpec& spec, const T* theta_lanes, Index n, const Input& input) {
  constexpr Index V = kLanes;
  const Index L = spec.num_layers();
  pre_.resize(static_cast<std::size_t>(L));
  post_.resize(static_cast<std::size_t>(L));
  const bool keep_pre = activation_needs_preactivation(spec.activation);
  Index offset = 0;
  for (Index l = 1; l <= L; ++l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Index out = spec.widths[ls], in = spec.widths[ls - 1];
    MatT<T>& a = post_[ls - 1];
    a.resize(V * n, out);
    const T* W = theta_lanes + offset * V;
    const T* b = W + out * in * V;
    if (l == 1)
      lane_layer_forward(W, b, out, in, n, input, a.data());
    else
      lane_layer_forward(W, b, out, in, n, LaneActivations<T>{post_[ls - 2].data(), n}, a.data());
    offset += out * in + out;
    if (l == L && !spec.activate_last) continue;
    if (keep_pre) {
      pre_[ls - 1] = a;
      activate(spec.activation, pre_[ls - 1], a);
    } else {
      activate(spec.activation, a, a);  // element-wise: the same arithmetic in every lane
    }
  }
}

template <typename T>
template <typename Input>
void DenseStackLanes<T>::backward_from(const DenseStackSpec& spec, const T* theta_lanes, Index n, const Input& input,
                                       MatT<T>& d_output, T* grad_lanes) {
  constexpr Index V = kLanes;
  const Index L = spec.num_layers();
  const bool keep_pre = activation_needs_preactivation(spec.activation);
  Index offset = spec.num_params();
  MatT<T>* delta = &d_output;
  int next = 0;
  for (Index l = L; l >= 1; --l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    const Index out = spec.widths[ls], in = spec.widths[ls - 1];
    offset -= out * in + out;
    if (l < L || spec.activate_last)
      activation_backward(spec.activation, keep_pre ? pre_[ls - 1] : post_[ls - 1], post_[ls - 1], *delta);
    const T* W = theta_lanes + offset * V;
    T* gW = grad_lanes + offset * V;
    if (l == 1)
      lane_weight_gradient(delta->data(), out, in, n, input, gW);
    else
      lane_weight_gradient(delta->data(), out, in, n, LaneActivations<T>{post_[ls - 2].data(), n}, gW);
    lane_weight_gradient(delta->data(), out, Index{1}, n, LaneOnesInput<T>{}, gW + out * in * V);
    if (l > 1) {
      MatT<T>& below = cotangent_[next];  // alternating: delta may be the other one
      next ^= 1;
      below.resize(V * n, in);
      lane_input_cotangent(W, delta->data(), out, in, n, below.data());
      delta = &below;
    }
  }
}

template class DenseStackLanes<double>;
template class DenseStackLanes<float>;

}  // namespace uqnn
