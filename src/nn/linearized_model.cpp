#include "uqnn/nn/linearized_model.hpp"

#include <fmt/format.h>

namespace uqnn {

LinearizedModel::LinearizedModel(std::shared_ptr<const Model> base, Vec center)
    : base_(std::move(base)), center_(std::move(center)) {
  if (!base_) throw std::invalid_argument("LinearizedModel: no base model");
  if (center_.size() != base_->num_params())
    throw std::invalid_argument(fmt::format("LinearizedModel: center has {} entries, the {} model has {} parameters",
                                            center_.size(), base_->kind(), base_->num_params()));
}

Mat LinearizedModel::forward(const Vec& theta, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  return base_->forward(center_, X) + base_->jacobian_vector_product(center_, theta - center_, X);
}

double LinearizedModel::value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const {
  const Mat outputs = forward(theta, X);
  check_model_gradient_size(*this, grad);
  double value = 0.0;
  // The base's reverse pass at theta* pulls back whatever cotangent the loss writes: evaluating the
  // loss at f_lin(theta) instead of f(theta*) gives J(theta*)^T dloss/df (f_lin(theta)).
  const OutputLoss<double> at_linearized = [&](const Mat& /*base_outputs*/, Mat& output_grad) {
    value = loss(outputs, output_grad);
    return value;
  };
  base_->value_and_gradient(center_, X, at_linearized, grad);
  return value;
}

Vec LinearizedModel::hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X,
                                            const OutputLoss<Dual>& loss) const {
  const Mat outputs = forward(theta, X);
  const Mat direction = base_->jacobian_vector_product(center_, v, X);  // J v
  MatT<Dual> outputs_dual(outputs.rows(), outputs.cols());
  for (Index j = 0; j < outputs.cols(); ++j)
    for (Index i = 0; i < outputs.rows(); ++i) outputs_dual(i, j) = make_dual(outputs(i, j), direction(i, j));
  MatT<Dual> output_grad_dual(outputs.rows(), outputs.cols());
  loss(outputs_dual, output_grad_dual);
  // Tangent of dloss/df along J v is Lambda J v; pull it back with J^T.
  const Mat lambda_direction = output_grad_dual.unaryExpr([](const Dual& g) { return dual_tangent(g); });
  Vec hv = Vec::Zero(num_params());
  const OutputLoss<double> pull_back = [&](const Mat& /*base_outputs*/, Mat& output_grad) {
    output_grad = lambda_direction;
    return 0.0;
  };
  base_->value_and_gradient(center_, X, pull_back, hv);
  return hv;
}

Mat LinearizedModel::jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  return base_->jacobian_vector_product(center_, v, X);
}

Mat LinearizedModel::jacobian(const Vec& theta, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  return base_->jacobian(center_, X);
}

nlohmann::json LinearizedModel::to_json() const {
  return {{"kind", "linearized"},
          {"base", base_->to_json()},
          {"center", std::vector<double>(center_.data(), center_.data() + center_.size())}};
}

}  // namespace uqnn
