#include "uqnn/nn/mlp.hpp"

#include <type_traits>

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

/// Layer 1's input of a lane pass: X [in, n], the same for every chain.
template <typename T>
struct SharedLaneInput {
  const MatT<T>& X;
  Index rows() const { return X.cols(); }
  void forward(DenseStackLanes<T>& lanes, const DenseStackSpec& stack, const T* theta) const { lanes.forward(stack, theta, X); }
  void backward(DenseStackLanes<T>& lanes, const DenseStackSpec& stack, const T* theta, MatT<T>& d_output, T* grad) const {
    lanes.backward(stack, theta, X, d_output, grad);
  }
};

/// Layer 1's input of a lane pass when each chain has its own: inputs[c] [in, n] interleaved into
/// lanes (chain_lanes.hpp's X_lanes); unused lanes repeat the first chain's.
template <typename T>
struct OwnLaneInputs {
  MatT<T>& X_lanes;
  OwnLaneInputs(MatT<T>& buffer, std::span<const Mat* const> inputs) : X_lanes(buffer) {
    constexpr Index V = DenseStackLanes<T>::kLanes;
    const Index n = inputs[0]->cols(), d = inputs[0]->rows(), chains = static_cast<Index>(inputs.size());
    X_lanes.resize(V * n, d);
    for (Index c = 0; c < V; ++c) {
      const Mat& X = *inputs[static_cast<std::size_t>(c < chains ? c : 0)];
      for (Index i = 0; i < d; ++i)
        for (Index j = 0; j < n; ++j) X_lanes(j * V + c, i) = static_cast<T>(X(i, j));
    }
  }
  Index rows() const { return X_lanes.rows() / DenseStackLanes<T>::kLanes; }
  void forward(DenseStackLanes<T>& lanes, const DenseStackSpec& stack, const T* theta) const {
    lanes.forward_on_own_inputs(stack, theta, X_lanes);
  }
  void backward(DenseStackLanes<T>& lanes, const DenseStackSpec& stack, const T* theta, MatT<T>& d_output, T* grad) const {
    lanes.backward_on_own_inputs(stack, theta, X_lanes, d_output, grad);
  }
};

/// One lane pass over the chains of `thetas` (at most kLanes of them) in arithmetic T, layer 1
/// reading `input`: their losses into `values` and their gradients into the columns of `grads`
/// [num_params, chains]. Unused lanes repeat the first chain (finite values) and get a zero cotangent.
template <typename T, typename Input>
void lane_pass(const DenseStackSpec& stack, const Input& input, std::span<const double* const> thetas,
               std::span<const OutputLoss<double>* const> losses, double* values, Mat& grads) {
  constexpr Index V = DenseStackLanes<T>::kLanes;
  const Index P = stack.num_params(), n = input.rows(), chains = static_cast<Index>(thetas.size());
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
  input.forward(lanes, stack, theta_lanes.data());
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
  input.backward(lanes, stack, theta_lanes.data(), d_output, grad_lanes.data());
  grads.resize(P, chains);
  for (Index p = 0; p < P; ++p)
    for (Index c = 0; c < chains; ++c) grads(p, c) = static_cast<double>(grad_lanes[p * V + c]);
}

/// The chains in groups of kLanes through lane_pass in the network's precision; pass(tag, first,
/// count) runs one group (tag: a T value for the arithmetic) and leaves its gradients in G. A
/// float32 chain whose value or gradient leaves float's range is evaluated again alone, in double.
template <typename Pass>
void lane_groups(Precision precision, std::size_t C, std::size_t P, std::span<double> values, std::span<double* const> grads,
                 const Mat& G, const Pass& pass) {
  const auto add = [&](std::size_t c, Index column) { Eigen::Map<Vec>(grads[c], static_cast<Index>(P)) += G.col(column); };
  if (precision != Precision::Float32) {
    for (std::size_t first = 0; first < C; first += DenseStackLanes<double>::kLanes) {
      const std::size_t count = std::min<std::size_t>(DenseStackLanes<double>::kLanes, C - first);
      pass(double{}, first, count);
      for (std::size_t c = 0; c < count; ++c) add(first + c, static_cast<Index>(c));
    }
    return;
  }
  std::vector<std::size_t> in_double;
  for (std::size_t first = 0; first < C; first += DenseStackLanes<float>::kLanes) {
    const std::size_t count = std::min<std::size_t>(DenseStackLanes<float>::kLanes, C - first);
    pass(float{}, first, count);
    for (std::size_t c = 0; c < count; ++c) {
      if (std::isfinite(values[first + c]) && G.col(static_cast<Index>(c)).allFinite()) add(first + c, static_cast<Index>(c));
      else in_double.push_back(first + c);
    }
  }
  // Beyond float's range (see ModelBase::value_and_gradient): that chain alone, in double.
  for (const std::size_t c : in_double) {
    pass(double{}, c, 1);
    add(c, 0);
  }
}

}  // namespace

void Mlp::value_and_gradient_lanes(std::span<const double* const> thetas, const Mat& X, const MatT<float>* X_float,
                                   std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                   std::span<double* const> grads) const {
  check_lane_batch(thetas.size(), losses.size(), values.size(), grads.size());
  const Index P = num_params();
  for (const double* theta : thetas) check_model_shapes(*this, Eigen::Map<const Vec>(theta, P), X);
  thread_local Mat G;
  thread_local MatT<float> X_cast;
  const MatT<float>* inputs_float = X_float;
  if (precision_ == Precision::Float32 && !inputs_float) {
    X_cast = X.cast<float>();
    inputs_float = &X_cast;
  }
  lane_groups(precision_, thetas.size(), static_cast<std::size_t>(P), values, grads, G, [&]<typename T>(T, std::size_t first, std::size_t count) {
    const MatT<T>& data = [&]() -> const MatT<T>& {
      if constexpr (std::is_same_v<T, float>) return *inputs_float;
      else return X;
    }();
    lane_pass<T>(stack_, SharedLaneInput<T>{data}, thetas.subspan(first, count), losses.subspan(first, count), values.data() + first, G);
  });
}

void Mlp::value_and_gradient_lanes_on_own_inputs(std::span<const double* const> thetas, std::span<const Mat* const> inputs,
                                                 std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                                 std::span<double* const> grads) const {
  check_lane_batch(thetas.size(), losses.size(), values.size(), grads.size());
  const Index P = num_params();
  bool same_rows = inputs.size() == thetas.size();
  for (std::size_t c = 0; same_rows && c < thetas.size(); ++c) {
    check_model_shapes(*this, Eigen::Map<const Vec>(thetas[c], P), *inputs[c]);
    same_rows = inputs[c]->cols() == inputs[0]->cols() && inputs[c]->cols() > 0;
  }
  // The chains of a pass share their examples' count; batches of different sizes go one by one.
  if (!same_rows) return Model::value_and_gradient_lanes_on_own_inputs(thetas, inputs, losses, values, grads);
  thread_local Mat G;
  thread_local MatT<double> X_lanes;
  thread_local MatT<float> X_lanes_float;
  lane_groups(precision_, thetas.size(), static_cast<std::size_t>(P), values, grads, G, [&]<typename T>(T, std::size_t first, std::size_t count) {
    MatT<T>& buffer = [&]() -> MatT<T>& {
      if constexpr (std::is_same_v<T, float>) return X_lanes_float;
      else return X_lanes;
    }();
    const OwnLaneInputs<T> input(buffer, inputs.subspan(first, count));
    lane_pass<T>(stack_, input, thetas.subspan(first, count), losses.subspan(first, count), values.data() + first, G);
  });
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
