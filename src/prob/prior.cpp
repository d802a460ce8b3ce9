#include "uqnn/prob/prior.hpp"

#include <fmt/format.h>

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/prob/shrinkage_prior.hpp"

namespace uqnn {

namespace {
void check_prior_size(const Prior& prior, Index size, const char* what) {
  if (size != prior.dim())
    throw std::invalid_argument(fmt::format("prior: {} has {} entries, the prior's dimension is {}", what, size, prior.dim()));
}
}  // namespace

double Prior::log_density(ConstVecRef theta, Vec* grad) const {
  if (!grad) {
    check_prior_size(*this, theta.size(), "theta");
    return evaluate(theta, nullptr);
  }
  return log_density(theta, VecRef(*grad));
}

double Prior::log_density(ConstVecRef theta, VecRef grad) const {
  check_prior_size(*this, theta.size(), "theta");
  check_prior_size(*this, grad.size(), "the gradient");
  return evaluate(theta, &grad);
}

GaussianPrior::GaussianPrior(Vec mean, Vec sd) : mean_(std::move(mean)), sd_(std::move(sd)) {
  require(mean_.size() == sd_.size(), "gaussian prior mean and sd", "vectors of the same length");
  for (Index k = 0; k < sd_.size(); ++k)
    require(sd_[k] > 0 && std::isfinite(sd_[k]), "gaussian prior sd", "a finite number > 0");
  log_normaliser_ = -sd_.array().log().sum() - kHalfLog2Pi * static_cast<double>(sd_.size());
}

std::shared_ptr<GaussianPrior> GaussianPrior::isotropic(Index dim, double sigma) {
  require(sigma > 0 && std::isfinite(sigma), "prior sigma", "a finite number > 0");
  return std::make_shared<GaussianPrior>(Vec::Zero(dim), Vec::Constant(dim, sigma));
}

std::shared_ptr<GaussianPrior> GaussianPrior::per_layer(const ParamLayout& layout, const std::vector<double>& sigma_of_block) {
  require(sigma_of_block.size() == layout.blocks().size(), "per-layer prior sigmas",
          fmt::format("one per parameter block ({})", layout.blocks().size()));
  Vec sd(layout.size());
  for (std::size_t b = 0; b < layout.blocks().size(); ++b) {
    const auto& block = layout.blocks()[b];
    sd.segment(block.offset, block.size()).setConstant(sigma_of_block[b]);
  }
  return std::make_shared<GaussianPrior>(Vec::Zero(layout.size()), sd);
}

std::shared_ptr<GaussianPrior> GaussianPrior::fan_in_scaled(const ParamLayout& layout, double scale) {
  std::vector<double> sigmas;
  for (const auto& block : layout.blocks()) sigmas.push_back(scale / std::sqrt(static_cast<double>(block.fan_in)));
  return per_layer(layout, sigmas);
}

double GaussianPrior::evaluate(ConstVecRef theta, VecRef* grad) const {
  // z = (theta - mean) / sd as an expression: no temporary vector on a sampler's every gradient.
  const auto z = (theta - mean_).cwiseQuotient(sd_);
  if (grad) *grad -= z.cwiseQuotient(sd_);
  return -0.5 * z.squaredNorm() + log_normaliser_;
}

Vec GaussianPrior::hessian_diagonal(const Vec& /*theta*/) const { return -sd_.array().square().inverse().matrix(); }

Vec GaussianPrior::sample(Rng& rng) const {
  Vec theta(dim());
  for (Index k = 0; k < dim(); ++k) theta[k] = mean_[k] + sd_[k] * rng.normal();
  return theta;
}

namespace {

/// A per-parameter vector for model.json, as short as it can be written exactly: one number when
/// every entry is the same (an isotropic prior), [value, count] runs when there are few (a prior
/// per layer), else every entry. A network's million parameters do not make megabytes of "0.0".
nlohmann::json compact_vector(const Vec& v) {
  if (v.size() > 0 && (v.array() == v[0]).all()) return v[0];
  nlohmann::json runs = nlohmann::json::array();
  for (Index k = 0; k < v.size();) {
    Index end = k + 1;
    while (end < v.size() && v[end] == v[k]) ++end;
    runs.push_back({v[k], end - k});
    k = end;
  }
  if (2 * static_cast<Index>(runs.size()) < v.size()) return runs;
  return std::vector<double>(v.data(), v.data() + v.size());
}

/// The inverse of compact_vector (also reads every entry written out, as older runs did).
Vec expand_vector(const nlohmann::json& j, Index dim, const char* field) {
  if (j.is_number()) return Vec::Constant(dim, j.get<double>());
  std::vector<double> values;
  for (const auto& item : j) {
    if (item.is_number()) {
      values.push_back(item.get<double>());
      continue;
    }
    const auto count = item.at(1).get<Index>();
    if (count < 1) throw InputError(fmt::format("prior field '{}': a run of {} entries", field, count));
    values.insert(values.end(), static_cast<std::size_t>(count), item.at(0).get<double>());
  }
  if (dim >= 0 && static_cast<Index>(values.size()) != dim)
    throw InputError(fmt::format("prior field '{}' has {} entries, the prior's dim is {}", field, values.size(), dim));
  return Eigen::Map<const Vec>(values.data(), static_cast<Index>(values.size()));
}

}  // namespace

nlohmann::json GaussianPrior::to_json() const {
  return {{"kind", "gaussian"}, {"dim", dim()}, {"mean", compact_vector(mean_)}, {"sd", compact_vector(sd_)}};
}

ScaleMixturePrior::ScaleMixturePrior(Index dim, double pi, double sigma1, double sigma2)
    : dim_(dim), pi_(pi), sigma1_(sigma1), sigma2_(sigma2) {
  require(pi >= 0 && pi <= 1, "scale-mixture pi", "in [0, 1]");
  require(sigma1 > 0 && sigma2 > 0, "scale-mixture sigma1 and sigma2", "> 0");
}

// Per coordinate: p = pi N(x; 0, s1^2) + (1 - pi) N(x; 0, s2^2). With responsibilities
// r_j = w_j N_j / p: d log p / dx = -x sum_j r_j / s_j^2 and
// d^2 log p / dx^2 = sum_j r_j (x^2 / s_j^4 - 1 / s_j^2) - (d log p / dx)^2.
namespace {
struct MixturePoint {
  double log_p, d1, d2;
};
MixturePoint mixture_point(double x, double pi, double s1, double s2) {
  const double l1 = std::log(pi) - 0.5 * x * x / (s1 * s1) - std::log(s1) - kHalfLog2Pi;
  const double l2 = std::log1p(-pi) - 0.5 * x * x / (s2 * s2) - std::log(s2) - kHalfLog2Pi;
  const double m = std::max(l1, l2);
  const double log_p = m + std::log(std::exp(l1 - m) + std::exp(l2 - m));
  const double r1 = std::exp(l1 - log_p), r2 = std::exp(l2 - log_p);
  const double d1 = -x * (r1 / (s1 * s1) + r2 / (s2 * s2));
  const double d2 = r1 * (x * x / std::pow(s1, 4) - 1 / (s1 * s1)) + r2 * (x * x / std::pow(s2, 4) - 1 / (s2 * s2)) - d1 * d1;
  return {log_p, d1, d2};
}
}  // namespace

double ScaleMixturePrior::evaluate(ConstVecRef theta, VecRef* grad) const {
  double total = 0;
  for (Index k = 0; k < dim_; ++k) {
    const auto p = mixture_point(theta[k], pi_, sigma1_, sigma2_);
    total += p.log_p;
    if (grad) (*grad)[k] += p.d1;
  }
  return total;
}

Vec ScaleMixturePrior::hessian_diagonal(const Vec& theta) const {
  Vec h(dim_);
  for (Index k = 0; k < dim_; ++k) h[k] = mixture_point(theta[k], pi_, sigma1_, sigma2_).d2;
  return h;
}

Vec ScaleMixturePrior::sample(Rng& rng) const {
  Vec theta(dim_);
  for (Index k = 0; k < dim_; ++k) theta[k] = rng.normal() * (rng.uniform() < pi_ ? sigma1_ : sigma2_);
  return theta;
}

nlohmann::json ScaleMixturePrior::to_json() const {
  return {{"kind", "scale_mixture"}, {"dim", dim_}, {"pi", pi_}, {"sigma1", sigma1_}, {"sigma2", sigma2_}};
}

LaplacePrior::LaplacePrior(Index dim, double scale) : dim_(dim), scale_(scale) {
  require(scale > 0 && std::isfinite(scale), "laplace prior scale", "a finite number > 0");
}

double LaplacePrior::evaluate(ConstVecRef theta, VecRef* grad) const {
  if (grad)
    for (Index k = 0; k < dim_; ++k) (*grad)[k] -= (theta[k] > 0 ? 1.0 : (theta[k] < 0 ? -1.0 : 0.0)) / scale_;
  return -theta.cwiseAbs().sum() / scale_ - static_cast<double>(dim_) * std::log(2 * scale_);
}

Vec LaplacePrior::hessian_diagonal(const Vec& /*theta*/) const { return Vec::Zero(dim_); }

Vec LaplacePrior::sample(Rng& rng) const {
  Vec theta(dim_);
  for (Index k = 0; k < dim_; ++k) theta[k] = (rng.uniform() < 0.5 ? -1.0 : 1.0) * scale_ * rng.exponential();
  return theta;
}

nlohmann::json LaplacePrior::to_json() const { return {{"kind", "laplace"}, {"dim", dim_}, {"scale", scale_}}; }

Vec FlatPrior::sample(Rng& /*rng*/) const {
  throw InputError("a flat prior (--prior flat) is improper and has no draws: start chains elsewhere than at prior draws");
}

std::shared_ptr<Prior> make_prior(const nlohmann::json& d) {
  try {
    const std::string kind = d.at("kind").get<std::string>();
    if (kind == "gaussian") {
      // "dim" is absent from runs written before the vectors were compacted: then they are arrays.
      const Index dim = d.contains("dim") ? d.at("dim").get<Index>() : -1;
      if (dim < 0 && (d.at("mean").is_number() || d.at("sd").is_number()))
        throw InputError("a gaussian prior given by one mean or sd needs its 'dim'");
      return std::make_shared<GaussianPrior>(expand_vector(d.at("mean"), dim, "mean"), expand_vector(d.at("sd"), dim, "sd"));
    }
    if (kind == "scale_mixture")
      return std::make_shared<ScaleMixturePrior>(d.at("dim").get<Index>(), d.at("pi").get<double>(),
                                                 d.at("sigma1").get<double>(), d.at("sigma2").get<double>());
    if (kind == "laplace") return std::make_shared<LaplacePrior>(d.at("dim").get<Index>(), d.at("scale").get<double>());
    if (kind == "flat") return std::make_shared<FlatPrior>(d.at("dim").get<Index>());
    if (kind == "shrinkage") return ShrinkagePrior::from_json(d);
    throw InputError("unknown prior '" + kind + "': valid are gaussian, scale_mixture, laplace, flat, shrinkage");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("invalid prior description: ") + e.what());
  }
}

}  // namespace uqnn
