#pragma once
/// @file Views of a log-density: a subspace with the other coordinates held fixed (VI-HMC),
/// and tempering.
#include <memory>

#include "uqnn/core/log_density.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

/// log p restricted to the coordinates `active` of a base point; the others stay at `base_point`.
/// dim() = active.size(); `expand(z)` gives the full theta. References: seed 000 section 3.3.
///
/// When the base density is a Posterior, gradients go through Model::make_subspace_gradient:
/// fixed parameters cost no weight-gradient work and leading layers whose parameters are all
/// fixed are evaluated once (the paper's PyTorch code computes every gradient and slices it).
/// Other densities get the full gradient, sliced.
class SubspaceView : public LogDensity {
 public:
  SubspaceView(std::shared_ptr<const LogDensity> base, IndexVec active, Vec base_point);
  Index dim() const override { return static_cast<Index>(active_.size()); }
  double log_density_and_grad(const Vec& z, Vec& grad) const override;
  double log_density(const Vec& z) const override { return base_->log_density(expand(z)); }
  Vec hessian_vector_product(const Vec& z, const Vec& v) const override;
  /// The full parameter vector for subspace coordinates z.
  Vec expand(const Vec& z) const;
  /// The subspace coordinates of a full vector.
  Vec restrict(const Vec& theta) const;
  const IndexVec& active() const { return active_; }
  const Vec& base_point() const { return base_point_; }
  /// True when gradients take the fast subspace path (the base is a Posterior).
  bool uses_subspace_gradient() const { return model_gradient_ != nullptr; }

 private:
  std::shared_ptr<const LogDensity> base_;
  IndexVec active_;
  Vec base_point_;
  const Posterior* posterior_ = nullptr;  ///< base_ as a Posterior, when it is one
  std::shared_ptr<const SubspaceGradient> model_gradient_;
};

/// beta * log p (beta = 1 / temperature): beta < 1 flattens, beta > 1 sharpens ("cold posterior").
class TemperedView : public LogDensity {
 public:
  TemperedView(std::shared_ptr<const LogDensity> base, double beta);
  Index dim() const override { return base_->dim(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override;
  double log_density(const Vec& theta) const override { return beta_ * base_->log_density(theta); }
  Vec hessian_vector_product(const Vec& theta, const Vec& v) const override;
  double beta() const { return beta_; }

 private:
  std::shared_ptr<const LogDensity> base_;
  double beta_;
};

}  // namespace uqnn
