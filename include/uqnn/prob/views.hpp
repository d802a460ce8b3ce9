#pragma once
/// @file Views of a log-density: a subspace with the other coordinates held fixed (VI-HMC),
/// and tempering.
#include <memory>

#include "uqnn/prob/log_density.hpp"

namespace uqnn {

/// log p restricted to the coordinates `active` of a base point; the others stay at `base_point`.
/// dim() = active.size(); `expand(z)` gives the full theta. References: seed 000 section 3.3.
class SubspaceView : public LogDensity {
 public:
  SubspaceView(std::shared_ptr<const LogDensity> base, IndexVec active, Vec base_point);
  Index dim() const override { return static_cast<Index>(active_.size()); }
  double log_density_and_grad(const Vec& z, Vec& grad) const override;
  Vec hessian_vector_product(const Vec& z, const Vec& v) const override;
  /// The full parameter vector for subspace coordinates z.
  Vec expand(const Vec& z) const;
  /// The subspace coordinates of a full vector.
  Vec restrict(const Vec& theta) const;
  const IndexVec& active() const { return active_; }

 private:
  std::shared_ptr<const LogDensity> base_;
  IndexVec active_;
  Vec base_point_;
};

/// beta * log p (beta = 1 / temperature): beta < 1 flattens, beta > 1 sharpens ("cold posterior").
class TemperedView : public LogDensity {
 public:
  TemperedView(std::shared_ptr<const LogDensity> base, double beta);
  Index dim() const override { return base_->dim(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override;
  Vec hessian_vector_product(const Vec& theta, const Vec& v) const override;
  double beta() const { return beta_; }

 private:
  std::shared_ptr<const LogDensity> base_;
  double beta_;
};

}  // namespace uqnn
