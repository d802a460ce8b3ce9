#include "uqnn/nn/deeponet.hpp"

#include "uqnn/core/error.hpp"

namespace uqnn {

DeepOnet::DeepOnet(DeepOnetSpec spec) : spec_(std::move(spec)) {
  require(spec_.branch_input >= 1, "deeponet branch_input", ">= 1");
  require(spec_.trunk_input >= 1, "deeponet trunk_input", ">= 1");
  require(spec_.latent >= 1, "deeponet latent", ">= 1");
  branch_.widths.push_back(spec_.branch_input);
  branch_.widths.insert(branch_.widths.end(), spec_.branch_hidden.begin(), spec_.branch_hidden.end());
  branch_.widths.push_back(spec_.latent);
  branch_.activation = spec_.activation;
  branch_.activate_last = false;
  trunk_.widths.push_back(spec_.trunk_input);
  trunk_.widths.insert(trunk_.widths.end(), spec_.trunk_hidden.begin(), spec_.trunk_hidden.end());
  trunk_.widths.push_back(spec_.latent);
  trunk_.activation = spec_.activation;
  trunk_.activate_last = spec_.trunk_last_activation;
  branch_offset_ = branch_.add_to_layout(layout_, "branch.layer");
  trunk_offset_ = trunk_.add_to_layout(layout_, "trunk.layer");
  bias_offset_ = layout_.add_vector("bias", 1, 1);
}

DeepOnet DeepOnet::with_query_grid(Mat grid) const {
  require(grid.rows() == spec_.trunk_input && grid.cols() >= 1, "deeponet query grid",
          "a matrix [trunk_input, n_points] with n_points >= 1");
  DeepOnet copy = *this;
  copy.grid_ = std::move(grid);
  return copy;
}

Vec DeepOnet::initial_params(Rng& rng) const {
  Vec theta(num_params());
  branch_.initialize(theta, branch_offset_, spec_.init, rng);
  trunk_.initialize(theta, trunk_offset_, spec_.init, rng);
  theta[bias_offset_] = 0.0;
  return theta;
}

namespace {

class DeepOnetSubspaceGradient : public SubspaceGradient {
 public:
  DeepOnetSubspaceGradient(const DeepOnet& net, const Vec& base, const IndexVec& active, const Mat& X)
      : net_(net),
        branch_(net.branch_stack(), base.data() + net.branch_offset(), local(active, net.branch_offset(), net.branch_stack()),
                net.grid_mode() ? X : Mat(X.topRows(net.spec().branch_input))),
        trunk_(net.trunk_stack(), base.data() + net.trunk_offset(), local(active, net.trunk_offset(), net.trunk_stack()),
               net.grid_mode() ? net.query_grid() : Mat(X.bottomRows(net.spec().trunk_input))) {}

  double value_and_gradient(ConstVecRef theta, const OutputLoss<double>& loss, VecRef grad) const override {
    if (grad.size() != theta.size()) throw std::invalid_argument("subspace gradient: theta and grad differ in size");
    const double* p = theta.data();
    DenseStackTape<double> branch_tape, trunk_tape;
    branch_.forward(p + net_.branch_offset(), branch_tape);
    trunk_.forward(p + net_.trunk_offset(), trunk_tape);
    const Mat& B = branch_tape.output();
    const Mat& Tr = trunk_tape.output();
    const Mat Y = net_.combine(B, Tr, theta[net_.bias_offset()]);
    Mat dY(Y.rows(), Y.cols());
    const double value = loss(Y, dY);
    grad[net_.bias_offset()] += dY.sum();
    // A net without active parameters needs no cotangent at all (a fixed trunk on a grid then
    // costs nothing after construction).
    Mat dB, dT;
    net_.combine_backward(B, Tr, dY, branch_.mask.any_active() ? &dB : nullptr, trunk_.mask.any_active() ? &dT : nullptr);
    if (branch_.mask.any_active()) branch_.backward(p + net_.branch_offset(), branch_tape, dB, grad.data() + net_.branch_offset());
    if (trunk_.mask.any_active()) trunk_.backward(p + net_.trunk_offset(), trunk_tape, dT, grad.data() + net_.trunk_offset());
    return value;
  }

 private:
  static IndexVec local(const IndexVec& active, Index offset, const DenseStackSpec& stack) {
    IndexVec out;
    for (Index i : active)
      if (i >= offset && i < offset + stack.num_params()) out.push_back(i - offset);
    return out;
  }
  const DeepOnet& net_;
  DenseStackSubspace branch_, trunk_;
};

}  // namespace

std::unique_ptr<SubspaceGradient> DeepOnet::make_subspace_gradient(const Vec& base_theta, const IndexVec& active,
                                                                   const Mat& X) const {
  check_model_shapes(*this, base_theta, X);
  return std::make_unique<DeepOnetSubspaceGradient>(*this, base_theta, active, X);
}

nlohmann::json DeepOnet::to_json() const {
  nlohmann::json j{{"kind", "deeponet"},
                   {"branch_input", spec_.branch_input},
                   {"trunk_input", spec_.trunk_input},
                   {"branch_hidden", spec_.branch_hidden},
                   {"trunk_hidden", spec_.trunk_hidden},
                   {"latent", spec_.latent},
                   {"activation", to_string(spec_.activation)},
                   {"trunk_last_activation", spec_.trunk_last_activation},
                   {"init", to_string(spec_.init)}};
  if (grid_mode()) {
    std::vector<std::vector<double>> rows;
    for (Index j = 0; j < grid_.cols(); ++j) rows.emplace_back(grid_.col(j).data(), grid_.col(j).data() + grid_.rows());
    j["query_grid"] = rows;
  }
  return with_precision(j);
}

}  // namespace uqnn
