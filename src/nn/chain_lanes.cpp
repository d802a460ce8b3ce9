#include "uqnn/nn/chain_lanes.hpp"

#include <algorithm>

namespace uqnn {

namespace {

namespace ei = Eigen::internal;

template <typename T>
using LanePacket = typename ei::packet_traits<T>::type;
template <typename T>
constexpr Index kLaneWidth = DenseStackLanes<T>::kLanes;

/// Examples per step of the forward and input-cotangent products, and weight pairs per step of the
/// weight gradient: independent accumulators enough to hide the fused multiply-add's latency.
constexpr int kLaneBlock = 8;

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

/// z[o](j) = b[o] + sum_i W[o][i] x[i](j), summed over i in order; z is [V n, out].
template <typename T, typename Input>
void lane_layer_forward(const T* W, const T* b, Index out, Index in, Index n, const Input& x, T* z) {
  using P = LanePacket<T>;
  constexpr Index V = kLaneWidth<T>;
  for (Index o = 0; o < out; ++o) {
    const T* w = W + o * in * V;
    const P bias = ei::ploadu<P>(b + o * V);
    T* zo = z + o * n * V;
    Index j = 0;
    for (; j + kLaneBlock <= n; j += kLaneBlock) {
      P acc[kLaneBlock];
      for (int k = 0; k < kLaneBlock; ++k) acc[k] = bias;
      for (Index i = 0; i < in; ++i) {
        const P wi = ei::ploadu<P>(w + i * V);
        for (int k = 0; k < kLaneBlock; ++k) acc[k] = ei::pmadd(wi, x.load(i, j + k), acc[k]);
      }
      for (int k = 0; k < kLaneBlock; ++k) ei::pstoreu(zo + (j + k) * V, acc[k]);
    }
    for (; j < n; ++j) {
      P acc = bias;
      for (Index i = 0; i < in; ++i) acc = ei::pmadd(ei::ploadu<P>(w + i * V), x.load(i, j), acc);
      ei::pstoreu(zo + j * V, acc);
    }
  }
}

/// g[q] += sum_j delta[o_q](j) x[i_q](j) for M pairs q (o_q, i_q), each summed over j in order.
template <int M, typename T, typename Input>
void accumulate_lane_pairs(const T* const* delta_rows, const Index* inputs, Index n, const Input& x, T* const* g) {
  using P = LanePacket<T>;
  constexpr Index V = kLaneWidth<T>;
  P acc[M];
  for (int k = 0; k < M; ++k) acc[k] = ei::pset1<P>(T(0));
  for (Index j = 0; j < n; ++j)
    for (int k = 0; k < M; ++k) acc[k] = ei::pmadd(ei::ploadu<P>(delta_rows[k] + j * V), x.load(inputs[k], j), acc[k]);
  for (int k = 0; k < M; ++k) ei::pstoreu(g[k], ei::padd(ei::ploadu<P>(g[k]), acc[k]));
}

/// g[o][i] += sum_j delta[o](j) x[i](j) over the out x in pairs (row-major, as the weights), kLaneBlock
/// pairs at a time. With LaneOnesInput and in = 1 it is the bias gradient.
template <typename T, typename Input>
void lane_weight_gradient(const T* delta, Index out, Index in, Index n, const Input& x, T* g) {
  constexpr Index V = kLaneWidth<T>;
  const Index pairs = out * in;
  const T* rows[kLaneBlock];
  Index inputs[kLaneBlock];
  T* targets[kLaneBlock];
  for (Index q0 = 0; q0 < pairs; q0 += kLaneBlock) {
    const int m = static_cast<int>(std::min<Index>(kLaneBlock, pairs - q0));
    for (int k = 0; k < m; ++k) {
      const Index q = q0 + k;
      rows[k] = delta + (q / in) * n * V;
      inputs[k] = q % in;
      targets[k] = g + q * V;
    }
    switch (m) {
      case 8: accumulate_lane_pairs<8>(rows, inputs, n, x, targets); break;
      case 7: accumulate_lane_pairs<7>(rows, inputs, n, x, targets); break;
      case 6: accumulate_lane_pairs<6>(rows, inputs, n, x, targets); break;
      case 5: accumulate_lane_pairs<5>(rows, inputs, n, x, targets); break;
      case 4: accumulate_lane_pairs<4>(rows, inputs, n, x, targets); break;
      case 3: accumulate_lane_pairs<3>(rows, inputs, n, x, targets); break;
      case 2: accumulate_lane_pairs<2>(rows, inputs, n, x, targets); break;
      default: accumulate_lane_pairs<1>(rows, inputs, n, x, targets); break;
    }
  }
}

/// d_input[i](j) = sum_o W[o][i] delta[o](j), summed over o in order; d_input is [V n, in].
template <typename T>
void lane_input_cotangent(const T* W, const T* delta, Index out, Index in, Index n, T* d_input) {
  using P = LanePacket<T>;
  constexpr Index V = kLaneWidth<T>;
  for (Index i = 0; i < in; ++i) {
    T* di = d_input + i * n * V;
    Index j = 0;
    for (; j + kLaneBlock <= n; j += kLaneBlock) {
      P acc[kLaneBlock];
      for (int k = 0; k < kLaneBlock; ++k) acc[k] = ei::pset1<P>(T(0));
      for (Index o = 0; o < out; ++o) {
        const P w = ei::ploadu<P>(W + (o * in + i) * V);
        const T* d = delta + (o * n + j) * V;
        for (int k = 0; k < kLaneBlock; ++k) acc[k] = ei::pmadd(w, ei::ploadu<P>(d + k * V), acc[k]);
      }
      for (int k = 0; k < kLaneBlock; ++k) ei::pstoreu(di + (j + k) * V, acc[k]);
    }
    for (; j < n; ++j) {
      P acc = ei::pset1<P>(T(0));
      for (Index o = 0; o < out; ++o)
        acc = ei::pmadd(ei::ploadu<P>(W + (o * in + i) * V), ei::ploadu<P>(delta + (o * n + j) * V), acc);
      ei::pstoreu(di + j * V, acc);
    }
  }
}

}  // namespace

template <typename T>
void DenseStackLanes<T>::forward(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X) {
  constexpr Index V = kLanes;
  const Index L = spec.num_layers(), n = X.cols();
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
      lane_layer_forward(W, b, out, in, n, LaneBroadcastInput<T>{X}, a.data());
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
void DenseStackLanes<T>::backward(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X, MatT<T>& d_output,
                                  T* grad_lanes) {
  constexpr Index V = kLanes;
  const Index L = spec.num_layers(), n = X.cols();
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
      lane_weight_gradient(delta->data(), out, in, n, LaneBroadcastInput<T>{X}, gW);
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
