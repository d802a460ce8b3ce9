#pragma once
/// @file QUiNN's RNet: a residual network read as an explicit-Euler neural ODE whose layer
/// weights are functions of the layer "time" t (shared across depth).
///
/// With L layers there are L + 1 updates at t_i = i / (L + 1), step dt = 1 / (L + 1):
///   z_{i+1} = z_i + dt * act(W(t_i) z_i + b(t_i))        (residual, the default)
///   z_{i+1} = act(W(t_i) z_i + b(t_i))                    (plain MLP-like variant)
/// W(t) = sum_k t^k W_k for a polynomial of order k >= 0 (order 0: one matrix shared by all layers,
/// QUiNN's Const / Poly(0)), or one matrix per update for the non-parametric case (a standard ResNet).
/// An optional pre-layer act(W x + b) maps inputs to the width (required when they differ) and an
/// optional linear post-layer maps the width to the outputs.
#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/nn/model.hpp"

namespace uqnn {

struct RNetSpec {
  Index input_dim = 1;
  Index output_dim = 1;
  Index width = 3;        ///< rdim: the state dimension of the ODE
  Index num_layers = 3;   ///< L; there are L + 1 residual updates
  int weight_order = 0;   ///< polynomial order of W(t); -1 = non-parametric (one matrix per update)
  bool residual = true;
  bool pre_layer = false;   ///< forced on when input_dim != width
  bool post_layer = false;  ///< forced on when output_dim != width
  Activation activation = Activation::Tanh;
  InitScheme init = InitScheme::Torch;
};

class RNet : public ModelBase<RNet> {
 public:
  explicit RNet(RNetSpec spec);

  std::string kind() const override { return "rnet"; }
  Index input_dim() const override { return spec_.input_dim; }
  Index output_dim() const override { return spec_.output_dim; }
  const ParamLayout& layout() const override { return layout_; }
  const RNetSpec& spec() const { return spec_; }
  Vec initial_params(Rng& rng) const override;
  nlohmann::json to_json() const override;

  /// Number of weight-function coefficients (order + 1, or L + 1 when non-parametric).
  Index num_coefficients() const;
  /// Coefficient of basis function k at update i (t_i^k, or [k == i] when non-parametric).
  double basis(Index update, Index k) const;

  template <typename T>
  MatT<T> evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const;

 private:
  RNetSpec spec_;
  bool has_pre_ = false, has_post_ = false;
  DenseStackSpec pre_, post_;
  Index pre_offset_ = 0, residual_offset_ = 0, post_offset_ = 0;
  ParamLayout layout_;
};

template <typename T>
MatT<T> RNet::evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const {
  const Index w = spec_.width, updates = spec_.num_layers + 1, K = num_coefficients();
  const T dt = T(1.0 / static_cast<double>(updates));
  const Index block = w * w + w;  // one coefficient: W_k (row-major) then b_k
  const T* coef = theta + residual_offset_;

  DenseStackTape<T> pre_tape, post_tape;
  std::vector<MatT<T>> z(static_cast<std::size_t>(updates + 1)), u(static_cast<std::size_t>(updates)),
      a(static_cast<std::size_t>(updates));
  if (has_pre_) {
    dense_forward(pre_, theta + pre_offset_, X, pre_tape);
    z[0] = pre_tape.output();
  } else {
    z[0] = X;
  }
  // W(t_i), b(t_i) for every update, assembled from the coefficients.
  std::vector<MatT<T>> W(static_cast<std::size_t>(updates));
  std::vector<VecT<T>> b(static_cast<std::size_t>(updates));
  for (Index i = 0; i < updates; ++i) {
    auto& Wi = W[static_cast<std::size_t>(i)];
    auto& bi = b[static_cast<std::size_t>(i)];
    Wi = MatT<T>::Zero(w, w);
    bi = VecT<T>::Zero(w);
    for (Index k = 0; k < K; ++k) {
      const double c = basis(i, k);
      if (c == 0.0) continue;
      Wi += T(c) * Eigen::Map<const RowMajorMatT<T>>(coef + k * block, w, w);
      bi += T(c) * Eigen::Map<const VecT<T>>(coef + k * block + w * w, w);
    }
  }
  for (Index i = 0; i < updates; ++i) {
    const std::size_t s = static_cast<std::size_t>(i);
    u[s].noalias() = W[s] * z[s];
    u[s].colwise() += b[s];
    activate(spec_.activation, u[s], a[s]);
    if (spec_.residual) z[s + 1] = z[s] + dt * a[s];
    else z[s + 1] = a[s];
  }
  MatT<T> Y;
  if (has_post_) {
    dense_forward(post_, theta + post_offset_, z[static_cast<std::size_t>(updates)], post_tape);
    Y = post_tape.output();
  } else {
    Y = z[static_cast<std::size_t>(updates)];
  }
  if (!loss) return Y;

  MatT<T> dY(Y.rows(), Y.cols());
  *loss_value = (*loss)(Y, dY);
  MatT<T> dz;
  if (has_post_) dense_backward(post_, theta + post_offset_, post_tape, dY, grad + post_offset_, &dz);
  else dz = dY;
  T* gcoef = grad + residual_offset_;
  for (Index i = updates - 1; i >= 0; --i) {
    const std::size_t s = static_cast<std::size_t>(i);
    MatT<T> du = spec_.residual ? MatT<T>(dt * dz) : dz;
    activation_backward(spec_.activation, u[s], a[s], du);
    const MatT<T> dW = du * z[s].transpose();
    const VecT<T> db = du.rowwise().sum();
    for (Index k = 0; k < K; ++k) {
      const double c = basis(i, k);
      if (c == 0.0) continue;
      Eigen::Map<RowMajorMatT<T>>(gcoef + k * block, w, w) += T(c) * dW;
      Eigen::Map<VecT<T>>(gcoef + k * block + w * w, w) += T(c) * db;
    }
    MatT<T> back = W[s].transpose() * du;
    if (spec_.residual) dz += back;
    else dz.swap(back);
  }
  if (has_pre_) dense_backward(pre_, theta + pre_offset_, pre_tape, dz, grad + pre_offset_, static_cast<MatT<T>*>(nullptr));
  return Y;
}

}  // namespace uqnn
