#pragma once
/// @file NonCentredModel: a network whose weights are drawn through a hierarchy of scales, written
/// in the non-centred form the samplers need (Papaspiliopoulos, Roberts & Skold 2007; Stan's
/// "w_raw" idiom):
///
///   w_k = z_k * s_g(k)(h),   z_k ~ N(0, 1),   h = log-scales with their own hyperpriors,
///
/// so the posterior has no funnel between a weight and its scale. The scale of group g is
///
///   s_g = b_g * tau * lambda_g            (horseshoe; ARD with tau = 1 and lambda_g the ARD scale)
///   s_g = b_g * tau * lambda~_g,  lambda~_g^2 = c^2 lambda_g^2 / (c^2 + tau^2 lambda_g^2)
///                                         (regularized horseshoe, Piironen & Vehtari 2017, eq. 2.8)
///
/// with b_g = 1 / sqrt(fan_in) of the group's layer, so that tau, lambda and c are dimensionless
/// and tau = lambda = 1 is the fan-in prior. The model's parameters are u = [z and the unscaled
/// parameters (biases) in the network's order; h]: every sampler, optimiser and writer works on u,
/// and forward() applies the network to w(u). The densities of z, the biases and h are the prior's
/// (prob/shrinkage_prior.hpp); this file only knows the structure.
///
/// Groups (which weights share a local scale lambda, seed 004 section 3.1.2):
///   - horseshoe, weight: one lambda per weight, one tau per layer (the classic horseshoe of
///                       Carvalho, Polson & Scott 2010, as brms's horseshoe() per coefficient);
///   - horseshoe, unit:  one lambda per unit (the incoming weights of one neuron), one tau per layer
///                       (Ghosh, Yao & Doshi-Velez 2019);
///   - horseshoe, layer: one lambda per layer, one tau for the network;
///   - ard: one scale per input feature for the first layer's weights (the relevance of each input,
///          MacKay 1994, Neal 1996), one per layer for the others.
/// Only weight matrices are scaled; biases keep N(0, bias_sd^2).
#include <memory>
#include <vector>

#include "uqnn/nn/model.hpp"

namespace uqnn {

enum class ShrinkageKind { Horseshoe, RegularizedHorseshoe, Ard };
enum class ShrinkageGroups { Weight, Unit, Layer };

/// The shrinkage prior's settings: the structure (kind, groups) and the hyperpriors' parameters.
struct ShrinkageSpec {
  ShrinkageKind kind = ShrinkageKind::Horseshoe;
  ShrinkageGroups groups = ShrinkageGroups::Weight;
  double global_scale = 1.0;  ///< horseshoe: tau ~ C+(0, global_scale)
  double slab_scale = 2.0;    ///< regularized horseshoe: c^2 ~ Inv-Gamma(slab_df / 2, slab_df slab_scale^2 / 2)
  double slab_df = 4.0;       ///< (Piironen & Vehtari's and brms's defaults: 2 and 4)
  double ard_shape = 0.5;     ///< ARD: precision 1 / s^2 ~ Gamma(ard_shape, ard_rate): mean 1 (the fan-in prior),
                              ///< and vague (shape 0.5 as in Neal 1996's examples)
  double ard_rate = 0.5;
  double bias_sd = 1.0;       ///< unscaled parameters ~ N(0, bias_sd^2)

  /// Throws InputError naming the option when a value is out of range.
  void validate() const;
  nlohmann::json to_json() const;
  static ShrinkageSpec from_json(const nlohmann::json& j);
};
ShrinkageKind parse_shrinkage_kind(const std::string& name);  ///< horseshoe | regularized-horseshoe | ard
std::string to_string(ShrinkageKind kind);
ShrinkageGroups parse_shrinkage_groups(const std::string& name);  ///< weight | unit | layer
std::string to_string(ShrinkageGroups groups);

/// Which scales exist and which weights each multiplies. Hyper indices count from the first
/// log-scale (u = [network part; h]).
struct ScaleHierarchy {
  enum class Role { GlobalScale, LocalScale, Slab, ArdScale };
  struct Group {
    Index local = -1;   ///< index in h of the group's lambda (or ARD scale)
    Index global = -1;  ///< index in h of its tau, -1 for none (ARD)
    double log_base = 0.0;  ///< log b_g = -log(sqrt(fan_in))
  };
  ShrinkageSpec spec;
  Index num_network = 0;     ///< network parameters (z and biases)
  IndexVec group_of;         ///< per network parameter: its group, -1 when unscaled
  std::vector<Group> groups;
  Index slab = -1;           ///< index in h of log c (regularized horseshoe), else -1
  std::vector<Role> roles;   ///< per entry of h
  ParamLayout layout;        ///< all of u: "<block>_raw" for scaled blocks, then the log-scales
  ParamLayout network;       ///< the network's own layout (of w)

  Index num_hyper() const { return static_cast<Index>(roles.size()); }
};

/// The hierarchy of `spec` over a network with layout `network` (its matrix blocks are scaled).
ScaleHierarchy make_scale_hierarchy(const ParamLayout& network, const ShrinkageSpec& spec);

class NonCentredModel : public Model {
 public:
  /// Throws InputError when the network has no weight matrix to scale.
  NonCentredModel(std::shared_ptr<Model> network, const ShrinkageSpec& spec);

  std::string kind() const override { return "non_centred"; }
  Index input_dim() const override { return network_->input_dim(); }
  Index output_dim() const override { return network_->output_dim(); }
  const ParamLayout& layout() const override { return hierarchy_.layout; }
  /// The network's initialisation w0 with h at the scales' centres (tau = global_scale, lambda = 1,
  /// c = slab_scale), and z = w0 / s(h).
  Vec initial_params(Rng& rng) const override;

  Mat forward(const Vec& u, const Mat& X) const override;
  double value_and_gradient(ConstVecRef u, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const override;
  double value_and_gradient(ConstVecRef u, const Mat& X, const MatT<float>& X_float, const OutputLoss<double>& loss,
                            VecRef grad) const override;
  /// Exact: J_w(u)^T H_w J_w(u) v plus the curvature of w(u) weighted by dloss/dw, from one
  /// Hessian-vector product and one gradient of the network and a pass of the transform in duals.
  Vec hessian_vector_product(const Vec& u, const Vec& v, const Mat& X, const OutputLoss<Dual>& loss) const override;
  Mat jacobian_vector_product(const Vec& u, const Vec& v, const Mat& X) const override;
  Mat jacobian(const Vec& u, const Mat& X) const override;
  /// {"kind": "non_centred", "network": <network>, "shrinkage": <spec>}.
  nlohmann::json to_json() const override;
  void set_precision(Precision precision) override;

  /// The network's weights w(u).
  Vec network_params(const Vec& u) const;
  const Model& network() const { return *network_; }
  const ScaleHierarchy& hierarchy() const { return hierarchy_; }

 private:
  /// Both value_and_gradient overloads: the network's gradient at w(u) (with X in float when given), pulled back to u.
  double value_and_gradient_at(ConstVecRef u, const Mat& X, const MatT<float>* X_float, const OutputLoss<double>& loss,
                               VecRef grad) const;

  std::shared_ptr<Model> network_;
  ScaleHierarchy hierarchy_;
};

}  // namespace uqnn
