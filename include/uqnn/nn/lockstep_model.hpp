#pragma once
/// @file Networks trained in lockstep (issue 19 item 3): the members of an ensemble that one thread
/// trains take turns as fibers (core/lockstep_tasks.hpp), and their gradients go through the model's
/// lane kernel together, one member per SIMD lane (nn/chain_lanes.hpp).
///
/// The optimisers and objectives need no change: each member's objective holds a LockstepModel,
/// whose value_and_gradient is a request. Requests to the same model on inputs with the same number
/// of examples (every member's minibatch of a step; the full batches of members with the same rows'
/// count) form one value_and_gradient_lanes_on_own_inputs call, each member on its own inputs and
/// with its own loss (MSE, the likelihood's NLL, an anchored posterior's).
///
/// Reproducibility: a member's gradient depends only on its own parameters, inputs and loss (the lane
/// kernel's contract), so its fit is the same whichever members share its thread, for any thread or
/// MPI rank count; it differs to rounding from a fit without lockstep.
#include <memory>

#include "uqnn/nn/model.hpp"

namespace uqnn {

/// `inner` with value_and_gradient evaluated in lockstep as described above (from inside
/// run_in_lockstep's tasks; elsewhere as a batch of one, with the same result). Everything else
/// goes to `inner` as it is. Its precision is the inner model's, which it cannot change.
class LockstepModel : public Model {
 public:
  explicit LockstepModel(std::shared_ptr<const Model> inner);
  const Model& inner() const { return *inner_; }

  std::string kind() const override { return inner_->kind(); }
  Index input_dim() const override { return inner_->input_dim(); }
  Index output_dim() const override { return inner_->output_dim(); }
  const ParamLayout& layout() const override { return inner_->layout(); }
  Vec initial_params(Rng& rng) const override { return inner_->initial_params(rng); }
  Mat forward(const Vec& theta, const Mat& X) const override { return inner_->forward(theta, X); }
  double value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const override;
  /// As above: the lane kernel converts its interleaved inputs to float itself.
  double value_and_gradient(ConstVecRef theta, const Mat& X, const MatT<float>& X_float, const OutputLoss<double>& loss,
                            VecRef grad) const override;
  bool has_chain_lanes() const override { return inner_->has_chain_lanes(); }
  void value_and_gradient_lanes(std::span<const double* const> thetas, const Mat& X, const MatT<float>* X_float,
                                std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                std::span<double* const> grads) const override {
    inner_->value_and_gradient_lanes(thetas, X, X_float, losses, values, grads);
  }
  void value_and_gradient_lanes_on_own_inputs(std::span<const double* const> thetas, std::span<const Mat* const> inputs,
                                              std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                              std::span<double* const> grads) const override {
    inner_->value_and_gradient_lanes_on_own_inputs(thetas, inputs, losses, values, grads);
  }
  Vec hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X, const OutputLoss<Dual>& loss) const override {
    return inner_->hessian_vector_product(theta, v, X, loss);
  }
  Mat jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const override {
    return inner_->jacobian_vector_product(theta, v, X);
  }
  Mat jacobian(const Vec& theta, const Mat& X) const override { return inner_->jacobian(theta, X); }
  nlohmann::json to_json() const override { return inner_->to_json(); }
  /// std::logic_error unless `precision` is the inner model's: set the inner model's before wrapping it.
  void set_precision(Precision precision) override;
  std::unique_ptr<SubspaceGradient> make_subspace_gradient(const Vec& base_theta, const IndexVec& active,
                                                           const Mat& X) const override {
    return inner_->make_subspace_gradient(base_theta, active, X);
  }

 private:
  std::shared_ptr<const Model> inner_;
};

}  // namespace uqnn
