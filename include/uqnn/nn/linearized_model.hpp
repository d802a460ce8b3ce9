#pragma once
/// @file LinearizedModel: the first-order Taylor expansion of a network around a point theta*,
///   f_lin(theta, x) = f(theta*, x) + J(theta*, x) (theta - theta*).
///
/// Why: a Laplace posterior N(theta*, Sigma) pushed through the network itself puts weights far from
/// the MAP in every direction the data do not constrain (there Sigma keeps the prior variance) and
/// wrecks the network's predictions. Pushed through f_lin it gives the "GLM predictive" of Immer,
/// Korzepa & Bauer (AISTATS 2021), the default of laplace-torch: mean f(theta*, x), function-space
/// covariance J Sigma J^T, consistent with the generalized Gauss-Newton curvature the posterior was
/// built from. As a Model, the same prediction code, output files and `uqnn predict` serve it.
#include <memory>

#include "uqnn/nn/model.hpp"

namespace uqnn {

class LinearizedModel : public Model {
 public:
  /// `center` holds the base model's parameters (no likelihood extras).
  LinearizedModel(std::shared_ptr<const Model> base, Vec center);

  std::string kind() const override { return "linearized"; }
  Index input_dim() const override { return base_->input_dim(); }
  Index output_dim() const override { return base_->output_dim(); }
  const ParamLayout& layout() const override { return base_->layout(); }
  Vec initial_params(Rng& rng) const override { return base_->initial_params(rng); }

  Mat forward(const Vec& theta, const Mat& X) const override;
  /// The gradient J(theta*)^T dloss/df at f_lin(theta): one forward-mode and one reverse pass of the base.
  double value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const override;
  /// J^T Lambda J v with Lambda the loss's Hessian w.r.t. the outputs at f_lin(theta): f_lin is linear
  /// in theta, so this is its exact Hessian (the base model's generalized Gauss-Newton at theta*).
  Vec hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X,
                             const OutputLoss<Dual>& loss) const override;
  /// J(theta*) v, whatever theta (f_lin is linear).
  Mat jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const override;
  /// J(theta*, X), whatever theta.
  Mat jacobian(const Vec& theta, const Mat& X) const override;
  /// {"kind": "linearized", "base": <base description>, "center": [theta*]}.
  nlohmann::json to_json() const override;

  const Model& base() const { return *base_; }
  const Vec& center() const { return center_; }

 private:
  std::shared_ptr<const Model> base_;
  Vec center_;
};

}  // namespace uqnn
