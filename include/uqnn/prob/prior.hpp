#pragma once
/// @file Priors on the network parameters. All are separable (a product over coordinates), so
/// their Hessian is diagonal. Log-densities include the normalising constants.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/rng.hpp"

namespace uqnn {

class Prior {
 public:
  virtual ~Prior() = default;
  virtual Index dim() const = 0;
  /// log p(theta); adds its gradient to *grad when given. theta and *grad have dim() entries
  /// (std::invalid_argument otherwise).
  double log_density(ConstVecRef theta, Vec* grad) const;
  /// The same, adding the gradient to `grad`, which may be a segment of a longer vector (the
  /// network's part of a posterior's theta): no copy.
  double log_density(ConstVecRef theta, VecRef grad) const;
  /// Diagonal of the Hessian of log p at theta.
  virtual Vec hessian_diagonal(const Vec& theta) const = 0;
  virtual Vec sample(Rng& rng) const = 0;
  virtual nlohmann::json to_json() const = 0;

 protected:
  /// log p(theta); adds its gradient to **grad when grad is not null (log_density checked the sizes).
  virtual double evaluate(ConstVecRef theta, VecRef* grad) const = 0;
};

/// theta_k ~ N(mean_k, sd_k^2): isotropic, per layer, or with an anchor (randomized MAP).
class GaussianPrior : public Prior {
 public:
  GaussianPrior(Vec mean, Vec sd);
  /// Every parameter N(0, sigma^2).
  static std::shared_ptr<GaussianPrior> isotropic(Index dim, double sigma);
  /// Each block of `layout` with its own sigma (`sigma_of_block[b]`).
  static std::shared_ptr<GaussianPrior> per_layer(const ParamLayout& layout, const std::vector<double>& sigma_of_block);
  /// Fan-in scaled: every block N(0, scale^2 / fan_in) (the NNGP-style prior).
  static std::shared_ptr<GaussianPrior> fan_in_scaled(const ParamLayout& layout, double scale);

  Index dim() const override { return mean_.size(); }
  double evaluate(ConstVecRef theta, VecRef* grad) const override;
  Vec hessian_diagonal(const Vec& theta) const override;
  Vec sample(Rng& rng) const override;
  nlohmann::json to_json() const override;
  const Vec& mean() const { return mean_; }
  const Vec& sd() const { return sd_; }

 private:
  Vec mean_, sd_;
  double log_normaliser_ = 0.0;
};

/// theta_k ~ pi N(0, sigma1^2) + (1 - pi) N(0, sigma2^2) (Blundell et al. 2015; seed 001).
class ScaleMixturePrior : public Prior {
 public:
  ScaleMixturePrior(Index dim, double pi, double sigma1, double sigma2);
  Index dim() const override { return dim_; }
  double evaluate(ConstVecRef theta, VecRef* grad) const override;
  Vec hessian_diagonal(const Vec& theta) const override;
  Vec sample(Rng& rng) const override;
  nlohmann::json to_json() const override;

 private:
  Index dim_;
  double pi_, sigma1_, sigma2_;
};

/// theta_k ~ Laplace(0, b): density exp(-|theta_k| / b) / (2 b).
class LaplacePrior : public Prior {
 public:
  LaplacePrior(Index dim, double scale);
  Index dim() const override { return dim_; }
  double evaluate(ConstVecRef theta, VecRef* grad) const override;
  Vec hessian_diagonal(const Vec& theta) const override;  // zero away from the kink at 0
  Vec sample(Rng& rng) const override;
  nlohmann::json to_json() const override;

 private:
  Index dim_;
  double scale_;
};

/// p(theta) = 1: the improper flat prior (Stan's default for an unbounded parameter without a
/// prior statement). The posterior is proper only when the likelihood alone is integrable, e.g. a
/// linear regression with full-rank inputs. It has no draws: sample() throws InputError.
class FlatPrior : public Prior {
 public:
  explicit FlatPrior(Index dim) : dim_(dim) {}
  Index dim() const override { return dim_; }
  double evaluate(ConstVecRef /*theta*/, VecRef* /*grad*/) const override { return 0.0; }
  Vec hessian_diagonal(const Vec& /*theta*/) const override { return Vec::Zero(dim_); }
  Vec sample(Rng& rng) const override;
  nlohmann::json to_json() const override { return {{"kind", "flat"}, {"dim", dim_}}; }

 private:
  Index dim_;
};

/// Rebuilds a prior from `to_json()`.
std::shared_ptr<Prior> make_prior(const nlohmann::json& description);

}  // namespace uqnn
