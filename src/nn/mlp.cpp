#include "uqnn/nn/mlp.hpp"

#include "uqnn/core/error.hpp"
#include "uqnn/nn/chain_lanes.hpp"

namespace uqnn {

Mlp::Mlp(MlpSpec spec) : spec_(std::move(spec)) {
  require(spec_.input_dim >= 1, "mlp input_dim", ">= 1");
  require(spec_.output_dim >= 1, "mlp output_dim", ">= 1");
  for (Index h : spec_.hidden) require(h >= 1, "mlp hidden width", ">= 1");
  stack_.widths.push_back(spec_.input_dim);
  stack_.widths.insert(stack_.widths.end(), spec_.hidden.begin(), spec_.hidden.end());
  stack_.widths.push_back(spec_.output_dim);
  stack_.activation = spec_.activation;
  stack_.activate_last = false;
  stack_.add_to_layout(layout_, "layer");
}

Vec Mlp::initial_params(Rng& rng) const {
  Vec theta(num_params());
  stack_.initialize(theta, 0, spec_.init, rng);
  return theta;
}

namespace {

class MlpSubspaceGradient : public SubspaceGradient {
 public:
  MlpSubspaceGradient(const DenseStackSpec& stack, const Vec& base_theta, const IndexVec& active, const Mat& X)
      : stack_(stack, base_theta.data(), active, X) {}
  double value_and_gradient(ConstVecRef theta, const OutputLoss<double>& loss, VecRef grad) const override {
    if (grad.size() != theta.size()) throw std::invalid_argument("subspace gradient: theta and grad differ in size");
    DenseStackTape<double> tape;
    stack_.forward(theta.data(), tape);
    const Mat& Y = tape.output();
    Mat dY(Y.rows(), Y.cols());
    const double value = loss(Y, dY);
    stack_.backward(theta.data(), tape, dY, grad.data());
    return value;
  }

 private:
  DenseStackSubspace stack_;
};

}  // namespace

std::unique_ptr<SubspaceGradient> Mlp::make_subspace_gradient(const Vec& base_theta, const IndexVec& active,
                                                              const Mat& X) const {
  check_model_shapes(*this, base_theta, X);
  return std::make_unique<MlpSubspaceGradient>(stack_, base_theta, active, X);
}

namespace {

/// One lane pass over the chains of `thetas` (at most kLanes of them) in arithmetic T: their losses
/// into `values` and their gradients into the columns of `grads` [num_params, chains]. Unused
/// lanes repeat the first chain (finite values) and get a zero cotangent.
template <typename T>
void lane_pass(const DenseStackSpec& stack, const MatT<T>& X, std::span<const double* const> thetas,
               std::span<const OutputLoss<double>* const> losses, double* values, Mat& grads) {
  constexpr Index V = DenseStackLanes<T>::kLanes;
  const Index P = stack.num_params(), n = X.cols(), chains = static_cast<Index>(thetas.size());
  // Per-thread buffers: a sampler's gradients come again and again with the same shapes.
  thread_local DenseStackLanes<T> lanes;
  thread_local VecT<T> theta_lanes, grad_lanes;
  thread_local MatT<T> d_output;
  thread_local Mat Y, dY;
  theta_lanes.resize(P * V);
  for (Index c = 0; c < V; ++c) {
    const double* theta = thetas[static_cast<std::size_t>(c < chains ? c : 0)];
    for (Index p = 0; p < P; ++p) theta_lanes[p * V + c] = static_cast<T>(theta[p]);
  }
  lanes.forward(stack, theta_lanes.data(), X);
  const MatT<T>& outputs = lanes.output();
  const Index O = outputs.cols();
  d_output.setZero(V * n, O);
  Y.resize(O, n);
  dY.resize(O, n);
  for (Index c = 0; c < chains; ++c) {
    for (Index o = 0; o < O; ++o)
      for (Index j = 0; j < n; ++j) Y(o, j) = static_cast<double>(outputs(j * V + c, o));
    values[c] = (*losses[static_cast<std::size_t>(c)])(Y, dY);
    for (Index o = 0; o < O; ++o)
      for (Index j = 0; j < n; ++j) d_output(j * V + c, o) = static_cast<T>(dY(o, j));
  }
  grad_lanes.setZero(P * V);
  lanes.backward(stack, theta_lanes.data(), X, d_output, grad_lanes.data());
  grads.resize(P, chains);
  for (Index p = 0; p < P; ++p)
    for (Index c = 0; c < chains; ++c) grads(p, c) = static_cast<double>(grad_lanes[p * V + c]);
}

}  // namespace

void Mlp::value_and_gradient_lanes(std::span<const double* const> thetas, const Mat& X, const MatT<float>* X_float,
                                   std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                   std::span<double* const> grads) const {
  check_lane_batch(thetas.size(), losses.size(), values.size(), grads.size());
  const Index P = num_params();
  for (const double* theta : thetas) check_model_shapes(*this, Eigen::Map<const Vec>(theta, P), X);
  const std::size_t C = thetas.size();
  thread_local Mat G;
  const auto pass = [&]<typename T>(const MatT<T>& inputs, std::size_t first, std::size_t count) {
    lane_pass<T>(stack_, inputs, thetas.subspan(first, count), losses.subspan(first, count), values.data() + first, G);
  };
  const auto add = [&](std::size_t c, Index column) { Eigen::Map<Vec>(grads[c], P) += G.col(column); };
  if (precision_ != Precision::Float32) {
    for (std::size_t first = 0; first < C; first += DenseStackLanes<double>::kLanes) {
      const std::size_t count = std::min<std::size_t>(DenseStackLanes<double>::kLanes, C - first);
      pass(X, first, count);
      for (std::size_t c = 0; c < count; ++c) add(first + c, static_cast<Index>(c));
    }
    return;
  }
  thread_local MatT<float> X_cast;
  if (!X_float) X_cast = X.cast<float>();
  const MatT<float>& inputs = X_float ? *X_float : X_cast;
  std::vector<std::size_t> in_double;
  for (std::size_t first = 0; first < C; first += DenseStackLanes<float>::kLanes) {
    const std::size_t count = std::min<std::size_t>(DenseStackLanes<float>::kLanes, C - first);
    pass(inputs, first, count);
    for (std::size_t c = 0; c < count; ++c) {
      if (std::isfinite(values[first + c]) && G.col(static_cast<Index>(c)).allFinite()) add(first + c, static_cast<Index>(c));
      else in_double.push_back(first + c);
    }
  }
  // Beyond float's range (see ModelBase::value_and_gradient): that chain alone, in double.
  for (const std::size_t c : in_double) {
    pass(X, c, 1);
    add(c, 0);
  }
}

nlohmann::json Mlp::to_json() const {
  return with_precision({{"kind", "mlp"},
          {"input_dim", spec_.input_dim},
          {"hidden", spec_.hidden},
          {"output_dim", spec_.output_dim},
          {"activation", to_string(spec_.activation)},
          {"init", to_string(spec_.init)}});
}

}  // namespace uqnn
