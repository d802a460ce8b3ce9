#pragma once
/// @file ShrinkagePrior: the density of a NonCentredModel's parameters u = [z and biases; h]
/// (nn/non_centred_model.hpp) under a horseshoe, regularized horseshoe or ARD prior (seed 004
/// section 3.1.2):
///   z_k ~ N(0, 1) for scaled weights, biases ~ N(0, bias_sd^2),
///   tau ~ C+(0, global_scale), lambda_g ~ C+(0, 1)              (horseshoe; Carvalho et al. 2010)
///   c^2 ~ Inv-Gamma(slab_df / 2, slab_df slab_scale^2 / 2)       (regularized; Piironen & Vehtari 2017)
///   1 / s_g^2 ~ Gamma(ard_shape, ard_rate)                       (ARD; Neal 1996, section 1.2)
/// Every scale is a coordinate of u on the log scale; its density includes the Jacobian of the log
/// (Stan's lower-bounded transform), so the prior is proper on all of u and separable.
#include <memory>

#include "uqnn/nn/non_centred_model.hpp"
#include "uqnn/prob/prior.hpp"

namespace uqnn {

class ShrinkagePrior : public Prior {
 public:
  explicit ShrinkagePrior(ScaleHierarchy hierarchy);

  Index dim() const override { return hierarchy_.layout.size(); }
  double evaluate(ConstVecRef u, VecRef* grad) const override;
  Vec hessian_diagonal(const Vec& u) const override;
  /// Exact draws: z and biases from their normals, each scale from its distribution, then its log.
  Vec sample(Rng& rng) const override;
  /// {"kind": "shrinkage", "shrinkage": <spec>, "network_layout": [blocks]}; make_prior rebuilds it.
  nlohmann::json to_json() const override;
  static std::shared_ptr<ShrinkagePrior> from_json(const nlohmann::json& description);

  const ScaleHierarchy& hierarchy() const { return hierarchy_; }

 private:
  ScaleHierarchy hierarchy_;
};

/// A Gamma(shape, rate) draw (Marsaglia & Tsang 2000; shape < 1 by the boost U^{1/shape}).
double sample_gamma(Rng& rng, double shape, double rate);

}  // namespace uqnn
