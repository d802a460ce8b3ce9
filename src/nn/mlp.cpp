#include "uqnn/nn/mlp.hpp"

#include "uqnn/core/error.hpp"

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

nlohmann::json Mlp::to_json() const {
  return with_precision({{"kind", "mlp"},
          {"input_dim", spec_.input_dim},
          {"hidden", spec_.hidden},
          {"output_dim", spec_.output_dim},
          {"activation", to_string(spec_.activation)},
          {"init", to_string(spec_.init)}});
}

}  // namespace uqnn
