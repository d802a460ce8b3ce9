#pragma once
/// @file MC dropout as an approximate posterior (Gal & Ghahramani 2016; QUiNN's jme-branch Dropout_NN).
///
/// Training minimises the same loss as MAP, -log p(theta | D) / N on minibatches, with an
/// independent dropout mask per example (standard dropout). A draw is one mask shared by all
/// inputs, realised as the Mlp parameter vector with dropped units' outgoing weights zeroed and the
/// kept ones scaled by 1 / (1 - p) (DropoutMlp::apply_mask); the likelihood extras are copied.
#include <memory>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/nn/dropout_mlp.hpp"
#include "uqnn/optim/objective.hpp"

namespace uqnn {

class DropoutPosterior : public ApproximatePosterior {
 public:
  /// theta = [Mlp parameters; extras].
  DropoutPosterior(std::shared_ptr<const DropoutMlp> model, Vec theta);
  std::string kind() const override { return "dropout"; }
  Index dim() const override { return theta_.size(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  /// theta itself: E[m / (1 - p)] = 1 for every mask entry.
  Vec mean() const override { return theta_; }
  /// w^2 p / (1 - p) for weights leaving a hidden unit, 0 elsewhere.
  Vec marginal_variance() const override;

 private:
  std::shared_ptr<const DropoutMlp> model_;
  Vec theta_;
};

/// -log p(theta | D) / N on a minibatch with per-example dropout masks drawn from an internal stream
/// Rng(seed, stream). Not thread safe (one objective per training run).
class DropoutObjective : public Objective {
 public:
  DropoutObjective(std::shared_ptr<const DropoutMlp> model, std::shared_ptr<const Posterior> posterior,
                   std::uint64_t seed, std::uint64_t stream);
  Index dim() const override { return posterior_->dim(); }
  Index num_data() const override { return posterior_->num_data(); }
  double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;
  void archive(StateArchive& a) const override { a.io(rng_); }

 private:
  std::shared_ptr<const DropoutMlp> model_;
  std::shared_ptr<const Posterior> posterior_;
  mutable Rng rng_;
};

}  // namespace uqnn
