#pragma once
/// @file Chains as a batch dimension (issue 19 item 3): one pass of a dense stack for several
/// parameter vectors at once, one chain per SIMD lane.
///
/// Why lanes: a small network's gradient (BENCHMARKS.md's B1, 141 parameters, 20 rows) is mostly
/// fixed costs, because each layer's product is a few hundred FLOPs on matrices that fill a SIMD
/// packet badly (10-wide layers, 20 rows). With the chains in the lanes, every scalar of the
/// single-chain pass becomes a whole packet: W_l[o][i] of V chains is one packet, and so is
/// a_l[i][j]. The arithmetic per chain is the single-chain pass's, in the order below, and the
/// lanes never mix (no horizontal operation), so a chain's value and gradient do not depend on
/// which lane it sits in, on which other chains share the pass, or on how many: batching is a
/// speed setting that cannot change the draws. (They do differ, to rounding, from the
/// single-chain kernel's of dense_stack.hpp, which sums in another order.)
///
/// Layouts, with V = the packet width of T (8 doubles or 16 floats with AVX-512):
///  - parameters: theta_lanes[p * V + c] = theta of chain c at p (p in the stack's layout);
///  - activations of layer l: a matrix [V n, width_l], entry (j V + c, i) = a_l[i] of example j in
///    chain c; each column is n packets;
///  - the inputs X [input, n] are the same for every chain (a posterior's data) and are broadcast;
///    or each chain has its own (SG-MCMC minibatches), in lanes as the activations: X_lanes
///    [V n, input], entry (j V + c, i) = x_i of example j of chain c.
#include <vector>

#include "uqnn/nn/dense_stack.hpp"

namespace uqnn {

template <typename T>
class DenseStackLanes {
 public:
  /// Chains per packet.
  static constexpr Index kLanes = Eigen::internal::unpacket_traits<typename Eigen::internal::packet_traits<T>::type>::size;

  /// a_L for the chains' parameters `theta_lanes` ([num_params * kLanes]) on X [input, n].
  void forward(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X);
  /// The outputs of the last forward(): [kLanes n, output width].
  const MatT<T>& output() const { return post_.back(); }
  /// Adds J^T d_output to grad_lanes ([num_params * kLanes]); `d_output` ([kLanes n, output width],
  /// zero in unused lanes) is consumed. X must be the last forward()'s.
  void backward(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X, MatT<T>& d_output, T* grad_lanes);
  /// forward() and backward() with each chain's own inputs X_lanes [kLanes n, input width] (above).
  void forward_on_own_inputs(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X_lanes);
  void backward_on_own_inputs(const DenseStackSpec& spec, const T* theta_lanes, const MatT<T>& X_lanes, MatT<T>& d_output,
                              T* grad_lanes);

 private:
  /// The passes, layer 1 reading `input` (.load(i, j): input i of example j in lanes), n examples.
  template <typename Input>
  void forward_from(const DenseStackSpec& spec, const T* theta_lanes, Index n, const Input& input);
  template <typename Input>
  void backward_from(const DenseStackSpec& spec, const T* theta_lanes, Index n, const Input& input, MatT<T>& d_output, T* grad_lanes);

  std::vector<MatT<T>> pre_, post_;  ///< per layer 1..L (index l - 1); pre_ only where the derivative needs z
  MatT<T> cotangent_[2];             ///< the layers' input cotangents during backward(), alternating
};

extern template class DenseStackLanes<double>;
extern template class DenseStackLanes<float>;

}  // namespace uqnn
