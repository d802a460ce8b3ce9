#pragma once
/// @file The Linear model without an intercept, f(x) = W x.
///
/// The Linear model with an intercept is `Mlp` with no hidden layers (its packet kernels serve it).
/// This one exists for models written without one, such as posteriordb's Bayesian linear
/// regressions (`y ~ normal(X beta, sigma)`): `uqnn fit --arch '' --no-bias`.
#include "uqnn/nn/model.hpp"

namespace uqnn {

/// f(x) = W x with W [output_dim, input_dim], layout "layer1.weight" (row-major, as Mlp's).
class LinearNoBias : public ModelBase<LinearNoBias> {
 public:
  LinearNoBias(Index input_dim, Index output_dim);

  std::string kind() const override { return "linear_no_bias"; }
  Index input_dim() const override { return input_dim_; }
  Index output_dim() const override { return output_dim_; }
  const ParamLayout& layout() const override { return layout_; }
  /// Glorot uniform, as Mlp's Linear model.
  Vec initial_params(Rng& rng) const override;
  nlohmann::json to_json() const override;

  template <typename T>
  MatT<T> evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const {
    // Row-major W: the mapped matrix is W^T as Eigen (column-major) sees it.
    const Eigen::Map<const MatT<T>> Wt(theta, input_dim_, output_dim_);
    MatT<T> Y = Wt.transpose() * X;
    if (loss) {
      MatT<T> dY(Y.rows(), Y.cols());
      *loss_value = (*loss)(Y, dY);
      Eigen::Map<MatT<T>> dWt(grad, input_dim_, output_dim_);
      dWt.noalias() += X * dY.transpose();  // d loss / d W = dY X^T
    }
    return Y;
  }

 private:
  Index input_dim_, output_dim_;
  ParamLayout layout_;
};

}  // namespace uqnn
