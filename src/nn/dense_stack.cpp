#include "uqnn/nn/dense_stack.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

DenseStackMask DenseStackMask::from_active(const DenseStackSpec& spec, const IndexVec& active_local) {
  const Index L = spec.num_layers();
  DenseStackMask mask;
  mask.active.resize(static_cast<std::size_t>(L));
  mask.full_weight_gradient.assign(static_cast<std::size_t>(L), 0);
  std::vector<Index> starts{0};
  for (Index l = 1; l <= L; ++l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    starts.push_back(starts.back() + spec.widths[ls] * spec.widths[ls - 1] + spec.widths[ls]);
  }
  for (Index i : active_local) {
    if (i < 0 || i >= starts.back()) throw std::invalid_argument("dense stack mask: active index out of range");
    const auto layer = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), i) - starts.begin()) - 1;
    mask.active[layer].push_back(i - starts[layer]);
  }
  mask.first_active_layer = L + 1;
  for (Index l = L; l >= 1; --l) {
    const std::size_t ls = static_cast<std::size_t>(l);
    auto& a = mask.active[ls - 1];
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
    if (!a.empty()) mask.first_active_layer = l;
    const Index weights = spec.widths[ls] * spec.widths[ls - 1];
    const Index active_weights = static_cast<Index>(std::lower_bound(a.begin(), a.end(), weights) - a.begin());
    // A matrix product runs roughly 10x faster per flop than strided dot products: use it once
    // more than a tenth of the layer's weights are active.
    mask.full_weight_gradient[ls - 1] = active_weights * 10 > weights;
  }
  return mask;
}

DenseStackSubspace::DenseStackSubspace(const DenseStackSpec& stack, const double* base_params, const IndexVec& active_local,
                                       const Mat& X)
    : spec(stack), mask(DenseStackMask::from_active(stack, active_local)), first_layer(mask.first_active_layer) {
  if (first_layer == 1) {
    input = X;
    return;
  }
  // Layers 1 .. first_layer - 1 have no active parameter: their output on X never changes.
  DenseStackTape<double> tape;
  dense_forward(spec, base_params, X, tape);
  input = tape.post[static_cast<std::size_t>(first_layer - 1)];
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
