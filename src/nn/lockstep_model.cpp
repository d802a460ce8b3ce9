#include "uqnn/nn/lockstep_model.hpp"

#include <stdexcept>
#include <vector>

#include "uqnn/core/lockstep_tasks.hpp"

namespace uqnn {

namespace {

/// value_and_gradient of one member. Requests to the same model on inputs with the same number of
/// examples batch (the lanes of a pass share their examples' count).
struct ModelRequest final : LockstepRequest {
  const Model* model = nullptr;
  const double* theta = nullptr;
  const Mat* inputs = nullptr;
  const OutputLoss<double>* loss = nullptr;
  double* grad = nullptr;
  double value = 0.0;

  bool batches_with(const LockstepRequest& other) const override {
    const auto* o = dynamic_cast<const ModelRequest*>(&other);
    return o && o->model == model && o->inputs->cols() == inputs->cols();
  }
  void evaluate_batch(std::span<LockstepRequest* const> batch) const override {
    std::vector<const double*> thetas;
    std::vector<const Mat*> all_inputs;
    std::vector<const OutputLoss<double>*> losses;
    std::vector<double*> grads;
    std::vector<double> values(batch.size(), 0.0);
    for (LockstepRequest* r : batch) {
      const auto& request = static_cast<const ModelRequest&>(*r);
      thetas.push_back(request.theta);
      all_inputs.push_back(request.inputs);
      losses.push_back(request.loss);
      grads.push_back(request.grad);
    }
    model->value_and_gradient_lanes_on_own_inputs(thetas, all_inputs, losses, values, grads);
    for (std::size_t b = 0; b < batch.size(); ++b) static_cast<ModelRequest&>(*batch[b]).value = values[b];
  }
};

}  // namespace

LockstepModel::LockstepModel(std::shared_ptr<const Model> inner) : inner_(std::move(inner)) {
  if (!inner_) throw std::invalid_argument("LockstepModel: no model");
  precision_ = inner_->precision();
}

double LockstepModel::value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const {
  check_model_shapes(*this, theta, X);
  check_model_gradient_size(*this, grad);
  ModelRequest r;
  r.model = inner_.get(), r.theta = theta.data(), r.inputs = &X, r.loss = &loss, r.grad = grad.data();
  evaluate_in_lockstep(r);
  return r.value;
}

double LockstepModel::value_and_gradient(ConstVecRef theta, const Mat& X, const MatT<float>&, const OutputLoss<double>& loss,
                                         VecRef grad) const {
  return value_and_gradient(theta, X, loss, grad);
}

void LockstepModel::set_precision(Precision precision) {
  if (precision != inner_->precision())
    throw std::logic_error("LockstepModel: set the wrapped model's precision before wrapping it");
}

}  // namespace uqnn
