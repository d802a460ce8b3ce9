#pragma once
/// @file Model: a differentiable function f(theta, X) of one flat parameter vector.
///
/// Every model provides, on a batch X [input_dim, n]: the outputs [output_dim, n]; the value and
/// gradient of a scalar loss of the outputs (reverse mode); exact Hessian-vector products of that
/// loss (forward-over-reverse with dual numbers); per-example Jacobians. Concrete models write one
/// templated `evaluate<T>` (forward and reverse pass) and inherit the rest from ModelBase.
#include <cmath>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/nn/dual.hpp"

namespace uqnn {

/// The arithmetic of a model's forward and reverse passes (see Model::precision).
enum class Precision { Float64, Float32 };
/// Parses "float64" (or "double") and "float32" (or "float"); throws InputError otherwise.
Precision parse_precision(const std::string& name);
std::string to_string(Precision precision);

/// A scalar loss of the model outputs: returns loss(Y) and writes dloss/dY (same shape as Y).
template <typename T>
using OutputLoss = std::function<T(const MatT<T>& outputs, MatT<T>& output_grad)>;

/// The gradient of loss(f(theta, X)) with respect to a subset of the parameters ("active"), on
/// inputs X fixed at construction, while the other parameters stay at a base point: what the
/// VI-HMC subspace sampler needs (seed 000 section 3.3). Implementations skip the weight-gradient
/// work of fixed parameters and may cache the outputs of leading layers whose parameters are all
/// fixed, so theta must equal the base point at every inactive coordinate.
class SubspaceGradient {
 public:
  virtual ~SubspaceGradient() = default;
  /// loss(f(theta, X)); adds the gradient at the active coordinates to `grad` (num_params entries).
  /// Entries of inactive coordinates are unspecified (left alone or given partial sums).
  virtual double value_and_gradient(ConstVecRef theta, const OutputLoss<double>& loss, VecRef grad) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  /// "mlp", "rnet", "deeponet" or "linearized"; the key of `to_json()` round trips.
  virtual std::string kind() const = 0;
  virtual Index input_dim() const = 0;
  virtual Index output_dim() const = 0;
  virtual const ParamLayout& layout() const = 0;
  Index num_params() const { return layout().size(); }

  /// Initial parameters (Glorot / He per the model's scheme) from `rng`.
  virtual Vec initial_params(Rng& rng) const = 0;
  /// Outputs f(theta, X), [output_dim, n].
  virtual Mat forward(const Vec& theta, const Mat& X) const = 0;
  /// loss(f(theta, X)); adds its gradient w.r.t. theta to `grad`, which must have num_params()
  /// entries (std::invalid_argument otherwise). Both may be segments of longer vectors.
  virtual double value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const = 0;
  /// The same with X also given in float (`X_float` = X cast to float), so that a float32 network
  /// evaluated on the same data many times (a sampler's posterior) does not convert X on every
  /// call. Models without a float path ignore it.
  virtual double value_and_gradient(ConstVecRef theta, const Mat& X, const MatT<float>& X_float,
                                    const OutputLoss<double>& loss, VecRef grad) const {
    (void)X_float;
    return value_and_gradient(theta, X, loss, grad);
  }
  /// Chains as a batch dimension (nn/chain_lanes.hpp, issue 19 item 3): value_and_gradient for C
  /// parameter vectors thetas[c] (num_params() entries each) on the same X, each with its own loss;
  /// values[c] is chain c's loss, and its gradient is added to grads[c] (num_params() entries).
  /// With a lane kernel (has_chain_lanes()) the chains share passes, one per SIMD lane; a chain's
  /// result depends only on its own theta and loss, never on the other chains or their number,
  /// and differs to rounding from value_and_gradient's. Without one, the chains go one by one
  /// through value_and_gradient. X_float is X in float for float32 models, or null.
  virtual bool has_chain_lanes() const { return false; }
  virtual void value_and_gradient_lanes(std::span<const double* const> thetas, const Mat& X, const MatT<float>* X_float,
                                        std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                        std::span<double* const> grads) const;
  /// The same with each chain on its own inputs: chain c on inputs[c] (SG-MCMC chains in lockstep,
  /// each on its own minibatch). With a lane kernel the chains share passes when their inputs have
  /// the same number of examples; the results depend on the same things only.
  virtual void value_and_gradient_lanes_on_own_inputs(std::span<const double* const> thetas, std::span<const Mat* const> inputs,
                                                      std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                                      std::span<double* const> grads) const;
  /// Exact H v where H is the Hessian of theta -> loss(f(theta, X)).
  virtual Vec hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X,
                                     const OutputLoss<Dual>& loss) const = 0;
  /// J(theta, X) v, the directional derivative of the outputs along v, [output_dim, n] (forward mode:
  /// one pass, the Jacobian is never formed).
  virtual Mat jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const = 0;
  /// Per-example Jacobian, [n * output_dim, num_params]: row i * output_dim + o is d f_o(x_i) / d theta.
  virtual Mat jacobian(const Vec& theta, const Mat& X) const;
  /// Architecture description (no parameter values); `make_model(json)` rebuilds the model.
  virtual nlohmann::json to_json() const = 0;

  /// The arithmetic of forward() and value_and_gradient() (hence jacobian()): Float64 (default), or
  /// Float32 for the network's forward and reverse passes while the loss, its sum and the returned
  /// gradient stay double. Float32 is JAX's (hence NumPyro's) default and halves the cost of the
  /// small dense products that dominate NUTS on the networks of seed 003; the sampler's state and
  /// integrator stay double. Hessian-vector and Jacobian-vector products are always double.
  Precision precision() const { return precision_; }
  /// Models without a float32 path (the default) throw InputError for Float32.
  virtual void set_precision(Precision precision);
  /// A SubspaceGradient on inputs X for the parameters `active` (indices into theta) with the rest
  /// at `base_theta`. This default computes the full gradient (correct, no saving); Mlp and
  /// DeepOnet skip fixed parameters' work and cache fully fixed leading layers.
  virtual std::unique_ptr<SubspaceGradient> make_subspace_gradient(const Vec& base_theta, const IndexVec& active,
                                                                   const Mat& X) const;

 protected:
  /// `description` with "precision" added when it is not the default (to_json of ModelBase models).
  nlohmann::json with_precision(nlohmann::json description) const;
  Precision precision_ = Precision::Float64;
};

/// Rebuilds a model from `Model::to_json()`; throws InputError on an unknown or invalid description.
std::unique_ptr<Model> make_model(const nlohmann::json& description);

/// Implements Model's virtual interface from the derived class's single templated pass:
///   template <class T> MatT<T> evaluate(const T* theta, const MatT<T>& X,
///                                       const OutputLoss<T>* loss, T* loss_value, T* grad) const;
/// which returns the outputs and, when `loss` is given, the loss value and its gradient (added to
/// grad's num_params() entries; the returned outputs may then be empty). theta has num_params() entries; ModelBase checks the shapes.
template <typename Derived>
class ModelBase : public Model {
 public:
  void set_precision(Precision precision) override { precision_ = precision; }

  Mat forward(const Vec& theta, const Mat& X) const override {
    check_shapes(theta, X);
    if (precision_ == Precision::Float32) {
      const VecT<float> float_theta = theta.cast<float>();
      Mat outputs = self().template evaluate<float>(float_theta.data(), X.cast<float>(), nullptr, nullptr, nullptr)
                        .template cast<double>();
      if (outputs.allFinite()) return outputs;  // else beyond float's range: see value_and_gradient
    }
    return self().template evaluate<double>(theta.data(), X, nullptr, nullptr, nullptr);
  }

  double value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const override {
    return value_and_gradient_impl(theta, X, nullptr, loss, grad);
  }
  double value_and_gradient(ConstVecRef theta, const Mat& X, const MatT<float>& X_float, const OutputLoss<double>& loss,
                            VecRef grad) const override {
    return value_and_gradient_impl(theta, X, &X_float, loss, grad);
  }

 private:
  double value_and_gradient_impl(ConstVecRef theta, const Mat& X, const MatT<float>* X_float, const OutputLoss<double>& loss,
                                 VecRef grad) const {
    check_shapes(theta, X);
    check_model_gradient_size(*this, grad);
    double value = 0.0;
    if (precision_ == Precision::Float32) {
      // The network in float; the loss sees double outputs and its value is kept in double (a
      // float sum of ~10^3 log-likelihood terms would lose the digits the Metropolis test uses).
      const OutputLoss<float> float_loss = [&](const MatT<float>& Y, MatT<float>& dY) {
        const Mat outputs = Y.cast<double>();
        Mat output_grad(outputs.rows(), outputs.cols());
        value = loss(outputs, output_grad);
        dY = output_grad.cast<float>();
        return static_cast<float>(value);
      };
      // Per-thread buffers: a sampler calls this ~10^3 times per draw on the same shapes.
      thread_local VecT<float> float_theta, float_grad;
      thread_local MatT<float> float_inputs;
      float_theta = theta.cast<float>();
      if (!X_float) float_inputs = X.cast<float>();
      float_grad.setZero(num_params());
      float float_value = 0.0f;
      self().template evaluate<float>(float_theta.data(), X_float ? *X_float : float_inputs, &float_loss, &float_value,
                                      float_grad.data());
      if (std::isfinite(value) && float_grad.allFinite()) {
        grad += float_grad.cast<double>();
        return value;
      }
      // Float's range (3.4e38) was exceeded where double's is not, e.g. the heteroscedastic
      // residual term r^2 exp(-2 log sigma) at a prior draw's outputs: this evaluation in double,
      // so float32 never turns a finite log density or gradient into a non-finite one.
      value = 0.0;
    }
    self().template evaluate<double>(theta.data(), X, &loss, &value, grad.data());
    return value;
  }

 public:
  Mat jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const override {
    check_shapes(theta, X);
    if (v.size() != theta.size()) throw std::invalid_argument("jacobian_vector_product: v and theta differ in size");
    const VecT<Dual> theta_dual = make_dual_vector(theta, v);
    const MatT<Dual> outputs = self().template evaluate<Dual>(theta_dual.data(), X.cast<Dual>(), nullptr, nullptr, nullptr);
    return outputs.unaryExpr([](const Dual& y) { return dual_tangent(y); });
  }

  Vec hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X,
                             const OutputLoss<Dual>& loss) const override {
    check_shapes(theta, X);
    const VecT<Dual> theta_dual = make_dual_vector(theta, v);
    VecT<Dual> grad(theta.size());
    for (Index i = 0; i < grad.size(); ++i) grad[i] = make_dual(0.0, 0.0);
    Dual value = make_dual(0.0, 0.0);
    const MatT<Dual> X_dual = X.cast<Dual>();
    self().template evaluate<Dual>(theta_dual.data(), X_dual, &loss, &value, grad.data());
    Vec hv(theta.size());
    for (Index i = 0; i < hv.size(); ++i) hv[i] = dual_tangent(grad[i]);
    return hv;
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
  void check_shapes(ConstVecRef theta, const Mat& X) const;
};

/// std::invalid_argument unless theta has the model's num_params() entries and X its input_dim() rows.
void check_model_shapes(const Model& model, ConstVecRef theta, const Mat& X);
/// std::invalid_argument unless a lane batch has as many losses, values and gradients as parameter vectors.
void check_lane_batch(std::size_t thetas, std::size_t losses, std::size_t values, std::size_t grads);
/// std::invalid_argument unless `grad` has the model's num_params() entries.
void check_model_gradient_size(const Model& model, ConstVecRef grad);

template <typename Derived>
void ModelBase<Derived>::check_shapes(ConstVecRef theta, const Mat& X) const {
  check_model_shapes(*this, theta, X);
}

}  // namespace uqnn
