#include "uqnn/nn/dense_stack.hpp"

#include <cmath>

namespace uqnn {

Index DenseStackSpec::num_params() const {
  Index n = 0;
  for (std::size_t l = 1; l < widths.size(); ++l) n += widths[l] * widths[l - 1] + widths[l];
  return n;
}

Index DenseStackSpec::add_to_layout(ParamLayout& layout, const std::string& prefix) const {
  const Index offset = layout.size();
  for (std::size_t l = 1; l < widths.size(); ++l) {
    layout.add_matrix(prefix + std::to_string(l) + ".weight", widths[l], widths[l - 1], widths[l - 1]);
    layout.add_vector(prefix + std::to_string(l) + ".bias", widths[l], widths[l - 1]);
  }
  return offset;
}

void DenseStackSpec::initialize(Vec& theta, Index offset, InitScheme scheme, Rng& rng) const {
  Index p = offset;
  for (std::size_t l = 1; l < widths.size(); ++l) {
    const Index out = widths[l], in = widths[l - 1];
    const double fan_in = static_cast<double>(in), fan_out = static_cast<double>(out);
    for (Index i = 0; i < out * in; ++i) {
      switch (scheme) {
        case InitScheme::Glorot: {
          const double a = std::sqrt(6.0 / (fan_in + fan_out));
          theta[p + i] = rng.uniform(-a, a);
          break;
        }
        case InitScheme::He: theta[p + i] = rng.normal(0.0, std::sqrt(2.0 / fan_in)); break;
        case InitScheme::Torch: theta[p + i] = rng.uniform(-1.0, 1.0) / std::sqrt(fan_in); break;
      }
    }
    p += out * in;
    for (Index i = 0; i < out; ++i)
      theta[p + i] = scheme == InitScheme::Torch ? rng.uniform(-1.0, 1.0) / std::sqrt(fan_in) : 0.0;
    p += out;
  }
}

}  // namespace uqnn
