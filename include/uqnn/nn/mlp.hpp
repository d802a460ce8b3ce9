#pragma once
/// @file Multilayer perceptron; with no hidden layers it is the Linear model.
#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/nn/model.hpp"

namespace uqnn {

struct MlpSpec {
  Index input_dim = 1;
  std::vector<Index> hidden;  ///< hidden widths; empty gives the Linear model W x + b
  Index output_dim = 1;
  Activation activation = Activation::Tanh;
  InitScheme init = InitScheme::Glorot;
};

/// f(x) = W_L act(... act(W_1 x + b_1) ...) + b_L. Layout: "layer{l}.weight", "layer{l}.bias".
class Mlp : public ModelBase<Mlp> {
 public:
  explicit Mlp(MlpSpec spec);
  /// The Linear model f(x) = W x + b.
  static Mlp linear(Index input_dim, Index output_dim) { return Mlp(MlpSpec{input_dim, {}, output_dim, Activation::Identity, InitScheme::Glorot}); }

  std::string kind() const override { return "mlp"; }
  Index input_dim() const override { return spec_.input_dim; }
  Index output_dim() const override { return spec_.output_dim; }
  const ParamLayout& layout() const override { return layout_; }
  const MlpSpec& spec() const { return spec_; }
  const DenseStackSpec& stack() const { return stack_; }
  Vec initial_params(Rng& rng) const override;
  nlohmann::json to_json() const override;
  /// Skips fixed weights' gradient work and caches the leading fully fixed layers' output on X.
  std::unique_ptr<SubspaceGradient> make_subspace_gradient(const Vec& base_theta, const IndexVec& active,
                                                           const Mat& X) const override;
  /// One chain per SIMD lane (nn/chain_lanes.hpp), in the model's precision; as value_and_gradient,
  /// a float32 chain whose value or gradient leaves float's range is evaluated again in double.
  bool has_chain_lanes() const override { return true; }
  void value_and_gradient_lanes(std::span<const double* const> thetas, const Mat& X, const MatT<float>* X_float,
                                std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                std::span<double* const> grads) const override;
  void value_and_gradient_lanes_on_own_inputs(std::span<const double* const> thetas, std::span<const Mat* const> inputs,
                                              std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                              std::span<double* const> grads) const override;

  template <typename T>
  MatT<T> evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const {
    DenseStackTape<T> tape;
    dense_forward(stack_, theta, X, tape);
    if (!loss) return tape.output();
    // A sampler's gradient: no copy of the outputs and no allocation (B1's whole gradient is 1.3 us).
    thread_local MatT<T> dY;
    dY.resize(tape.output().rows(), tape.output().cols());
    *loss_value = (*loss)(tape.output(), dY);
    dense_backward(stack_, theta, tape, dY, grad, static_cast<MatT<T>*>(nullptr));
    return MatT<T>();
  }

 private:
  MlpSpec spec_;
  DenseStackSpec stack_;
  ParamLayout layout_;
};

}  // namespace uqnn
