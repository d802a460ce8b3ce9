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
  return j;
}

}  // namespace uqnn
