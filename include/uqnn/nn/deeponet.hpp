#pragma once
/// @file DeepONet (Lu et al. 2021; seed 000 Table A.3): G(u)(y) = sum_k b_k(u) t_k(y) + b0 with a
/// branch MLP b on the sensor values u and a trunk MLP t on the query coordinates y.
///
/// Two input modes:
///  - pairs (default): each example is one (u, y) pair, X = [u; y], one output;
///  - grid (`with_query_grid`): all functions share one grid of query points; each example is one
///    function u and its outputs are G(u) at every grid point. The branch then runs once per
///    function, the trunk once per grid point, and they combine in one matrix product
///    (T^T B), never once per pair.
#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/nn/model.hpp"

namespace uqnn {

struct DeepOnetSpec {
  Index branch_input = 1;            ///< m, number of sensors
  Index trunk_input = 1;             ///< dimension of a query point
  std::vector<Index> branch_hidden;  ///< hidden widths of the branch net
  std::vector<Index> trunk_hidden;   ///< hidden widths of the trunk net
  Index latent = 1;                  ///< p: width of the last branch / trunk layer
  Activation activation = Activation::Tanh;
  bool trunk_last_activation = true;  ///< apply the activation to the trunk's last layer (Lu et al.)
  InitScheme init = InitScheme::Glorot;
};

class DeepOnet : public ModelBase<DeepOnet> {
 public:
  explicit DeepOnet(DeepOnetSpec spec);
  /// The same network in grid mode on query points `grid` [trunk_input, n_points].
  DeepOnet with_query_grid(Mat grid) const;

  std::string kind() const override { return "deeponet"; }
  Index input_dim() const override { return grid_mode() ? spec_.branch_input : spec_.branch_input + spec_.trunk_input; }
  Index output_dim() const override { return grid_mode() ? grid_.cols() : 1; }
  const ParamLayout& layout() const override { return layout_; }
  const DeepOnetSpec& spec() const { return spec_; }
  bool grid_mode() const { return grid_.size() > 0; }
  const Mat& query_grid() const { return grid_; }
  Vec initial_params(Rng& rng) const override;
  nlohmann::json to_json() const override;

  /// Skips fixed parameters' gradient work; caches the leading fully fixed layers of the branch
  /// and of the trunk (a fully fixed trunk on a query grid is then computed once).
  std::unique_ptr<SubspaceGradient> make_subspace_gradient(const Vec& base_theta, const IndexVec& active,
                                                           const Mat& X) const override;
  const DenseStackSpec& branch_stack() const { return branch_; }
  const DenseStackSpec& trunk_stack() const { return trunk_; }
  Index branch_offset() const { return branch_offset_; }
  Index trunk_offset() const { return trunk_offset_; }
  Index bias_offset() const { return bias_offset_; }

  /// The outputs from the branch outputs B [p, functions or pairs] and trunk outputs T [p, points
  /// or pairs]: T^T B + b0 on a grid, sum_k B_k T_k + b0 for pairs.
  template <typename T>
  MatT<T> combine(const MatT<T>& B, const MatT<T>& Tr, const T& bias) const {
    MatT<T> Y;
    if (grid_mode()) Y.noalias() = Tr.transpose() * B;  // [points, functions]
    else Y = B.cwiseProduct(Tr).colwise().sum();
    Y.array() += bias;
    return Y;
  }
  /// Cotangents of B and T from dY (each only when its pointer is given).
  template <typename T>
  void combine_backward(const MatT<T>& B, const MatT<T>& Tr, const MatT<T>& dY, MatT<T>* dB, MatT<T>* dT) const {
    if (grid_mode()) {
      if (dB) dB->noalias() = Tr * dY;             // [p, functions]
      if (dT) dT->noalias() = B * dY.transpose();  // [p, points]
    } else {
      if (dB) *dB = Tr.array().rowwise() * dY.row(0).array();
      if (dT) *dT = B.array().rowwise() * dY.row(0).array();
    }
  }

  template <typename T>
  MatT<T> evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const {
    const T* p = theta;
    DenseStackTape<T> branch_tape, trunk_tape;
    if (grid_mode()) {
      dense_forward(branch_, p + branch_offset_, X, branch_tape);
      dense_forward(trunk_, p + trunk_offset_, MatT<T>(grid_.cast<T>()), trunk_tape);
    } else {
      dense_forward(branch_, p + branch_offset_, MatT<T>(X.topRows(spec_.branch_input)), branch_tape);
      dense_forward(trunk_, p + trunk_offset_, MatT<T>(X.bottomRows(spec_.trunk_input)), trunk_tape);
    }
    const MatT<T>& B = branch_tape.output();
    const MatT<T>& Tr = trunk_tape.output();
    MatT<T> Y = combine(B, Tr, theta[bias_offset_]);
    if (!loss) return Y;
    MatT<T> dY(Y.rows(), Y.cols());
    *loss_value = (*loss)(Y, dY);
    MatT<T> dB, dT;
    combine_backward(B, Tr, dY, &dB, &dT);
    grad[bias_offset_] += dY.sum();
    dense_backward(branch_, p + branch_offset_, branch_tape, dB, grad + branch_offset_, static_cast<MatT<T>*>(nullptr));
    dense_backward(trunk_, p + trunk_offset_, trunk_tape, dT, grad + trunk_offset_, static_cast<MatT<T>*>(nullptr));
    return Y;
  }

 private:
  DeepOnetSpec spec_;
  DenseStackSpec branch_, trunk_;
  Index branch_offset_ = 0, trunk_offset_ = 0, bias_offset_ = 0;
  ParamLayout layout_;
  Mat grid_;
};

}  // namespace uqnn
