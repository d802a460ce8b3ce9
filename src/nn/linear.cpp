#include "uqnn/nn/linear.hpp"

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

LinearNoBias::LinearNoBias(Index input_dim, Index output_dim) : input_dim_(input_dim), output_dim_(output_dim) {
  require(input_dim >= 1, "linear input_dim", ">= 1");
  require(output_dim >= 1, "linear output_dim", ">= 1");
  layout_.add_matrix("layer1.weight", output_dim, input_dim, input_dim);
}

Vec LinearNoBias::initial_params(Rng& rng) const {
  const double a = std::sqrt(6.0 / static_cast<double>(input_dim_ + output_dim_));
  Vec theta(num_params());
  for (Index i = 0; i < theta.size(); ++i) theta[i] = rng.uniform(-a, a);
  return theta;
}

nlohmann::json LinearNoBias::to_json() const {
  return with_precision({{"kind", kind()}, {"input_dim", input_dim_}, {"output_dim", output_dim_}});
}

}  // namespace uqnn
