#include "uqnn/prob/shrinkage_prior.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

/// log p, d/du and d^2/du^2 of one coordinate.
struct Point {
  double log_p, d1, d2;
};

/// log(1 + e^x) without overflow.
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

/// u = log t with t ~ C+(0, S): p(u) = (2 / (pi S)) t / (1 + (t / S)^2). With q = (t / S)^2:
/// d/du = (1 - q) / (1 + q), d^2/du^2 = -4 q / (1 + q)^2, written to stay finite for any u.
Point log_half_cauchy(double u, double S) {
  const double x = 2.0 * (u - std::log(S));  // log q
  const double q = std::exp(x), inv_q = std::exp(-x);
  return {std::log(2.0 / std::numbers::pi) - std::log(S) + u - softplus(x), 1.0 - 2.0 / (1.0 + inv_q),
          -4.0 / ((1.0 + q) * (1.0 + inv_q))};
}

/// u = log t with t^2 ~ Inv-Gamma(a, b), i.e. 1 / t^2 ~ Gamma(a, rate b): with v = t^2 = e^{2u},
/// p(u) = b^a / Gamma(a) v^{-a} e^{-b / v} 2 (the 2 v of dv/du cancels one power of v).
Point log_inverse_gamma_square(double u, double a, double b) {
  const double b_over_v = b * std::exp(-2.0 * u);
  return {a * std::log(b) - std::lgamma(a) - 2.0 * a * u - b_over_v + std::log(2.0), -2.0 * a + 2.0 * b_over_v,
          -4.0 * b_over_v};
}

Point hyper_point(const ScaleHierarchy& H, std::size_t j, double u) {
  const ShrinkageSpec& s = H.spec;
  switch (H.roles[j]) {
    case ScaleHierarchy::Role::GlobalScale: return log_half_cauchy(u, s.global_scale);
    case ScaleHierarchy::Role::LocalScale: return log_half_cauchy(u, 1.0);
    case ScaleHierarchy::Role::Slab: return log_inverse_gamma_square(u, 0.5 * s.slab_df, 0.5 * s.slab_df * s.slab_scale * s.slab_scale);
    case ScaleHierarchy::Role::ArdScale: return log_inverse_gamma_square(u, s.ard_shape, s.ard_rate);
  }
  return {0, 0, 0};
}

nlohmann::json layout_to_json(const ParamLayout& layout) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& b : layout.blocks())
    blocks.push_back({{"name", b.name}, {"rows", b.rows}, {"cols", b.cols}, {"fan_in", b.fan_in}, {"matrix", b.matrix}});
  return blocks;
}

}  // namespace

double sample_gamma(Rng& rng, double shape, double rate) {
  if (shape < 1.0) {
    double uniform = 0.0;
    while (uniform == 0.0) uniform = rng.uniform();
    return sample_gamma(rng, shape + 1.0, rate) * std::pow(uniform, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = rng.normal();
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double uniform = rng.uniform();
    if (uniform > 0.0 && std::log(uniform) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v / rate;
  }
}

ShrinkagePrior::ShrinkagePrior(ScaleHierarchy hierarchy) : hierarchy_(std::move(hierarchy)) {}

double ShrinkagePrior::evaluate(ConstVecRef u, VecRef* grad) const {
  const ScaleHierarchy& H = hierarchy_;
  if (u.size() != dim()) throw std::invalid_argument(fmt::format("shrinkage prior: u has {} entries, expected {}", u.size(), dim()));
  const double inv_bias_var = 1.0 / (H.spec.bias_sd * H.spec.bias_sd);
  double total = 0.0;
  Index unscaled = 0;
  double bias_square = 0.0, z_square = 0.0;
  for (Index k = 0; k < H.num_network; ++k) {
    if (H.group_of[static_cast<std::size_t>(k)] >= 0) {
      z_square += u[k] * u[k];
      if (grad) (*grad)[k] -= u[k];
    } else {
      ++unscaled;
      bias_square += u[k] * u[k];
      if (grad) (*grad)[k] -= u[k] * inv_bias_var;
    }
  }
  total += -0.5 * z_square - 0.5 * bias_square * inv_bias_var - static_cast<double>(unscaled) * std::log(H.spec.bias_sd) -
           kHalfLog2Pi * static_cast<double>(H.num_network);
  for (Index j = 0; j < H.num_hyper(); ++j) {
    const Point p = hyper_point(H, static_cast<std::size_t>(j), u[H.num_network + j]);
    total += p.log_p;
    if (grad) (*grad)[H.num_network + j] += p.d1;
  }
  return total;
}

Vec ShrinkagePrior::hessian_diagonal(const Vec& u) const {
  const ScaleHierarchy& H = hierarchy_;
  Vec h(dim());
  const double inv_bias_var = 1.0 / (H.spec.bias_sd * H.spec.bias_sd);
  for (Index k = 0; k < H.num_network; ++k) h[k] = H.group_of[static_cast<std::size_t>(k)] >= 0 ? -1.0 : -inv_bias_var;
  for (Index j = 0; j < H.num_hyper(); ++j) h[H.num_network + j] = hyper_point(H, static_cast<std::size_t>(j), u[H.num_network + j]).d2;
  return h;
}

Vec ShrinkagePrior::sample(Rng& rng) const {
  const ScaleHierarchy& H = hierarchy_;
  const ShrinkageSpec& s = H.spec;
  Vec u(dim());
  for (Index k = 0; k < H.num_network; ++k) u[k] = (H.group_of[static_cast<std::size_t>(k)] >= 0 ? 1.0 : s.bias_sd) * rng.normal();
  const auto half_cauchy = [&rng](double scale) {
    double uniform = 0.0;
    while (uniform == 0.0) uniform = rng.uniform();
    return scale * std::tan(0.5 * std::numbers::pi * uniform);
  };
  for (Index j = 0; j < H.num_hyper(); ++j) {
    double t = 0.0;
    switch (H.roles[static_cast<std::size_t>(j)]) {
      case ScaleHierarchy::Role::GlobalScale: t = half_cauchy(s.global_scale); break;
      case ScaleHierarchy::Role::LocalScale: t = half_cauchy(1.0); break;
      case ScaleHierarchy::Role::Slab:
        t = 1.0 / std::sqrt(sample_gamma(rng, 0.5 * s.slab_df, 0.5 * s.slab_df * s.slab_scale * s.slab_scale));
        break;
      case ScaleHierarchy::Role::ArdScale: t = 1.0 / std::sqrt(sample_gamma(rng, s.ard_shape, s.ard_rate)); break;
    }
    u[H.num_network + j] = std::log(t);
  }
  return u;
}

nlohmann::json ShrinkagePrior::to_json() const {
  return {{"kind", "shrinkage"}, {"shrinkage", hierarchy_.spec.to_json()}, {"network_layout", layout_to_json(hierarchy_.network)}};
}

std::shared_ptr<ShrinkagePrior> ShrinkagePrior::from_json(const nlohmann::json& d) {
  ParamLayout network;
  for (const auto& b : d.at("network_layout")) {
    if (b.at("matrix").get<bool>())
      network.add_matrix(b.at("name").get<std::string>(), b.at("rows").get<Index>(), b.at("cols").get<Index>(), b.at("fan_in").get<Index>());
    else
      network.add_vector(b.at("name").get<std::string>(), b.at("rows").get<Index>(), b.at("fan_in").get<Index>());
  }
  return std::make_shared<ShrinkagePrior>(make_scale_hierarchy(network, ShrinkageSpec::from_json(d.at("shrinkage"))));
}

}  // namespace uqnn
