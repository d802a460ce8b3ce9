#pragma once
/// @file MC dropout as an approximate posterior (Gal & Ghahramani 2016; QUiNN's jme-branch Dropout_NN).
///
/// Training minimises the same loss as MAP, -log p(theta | D) / N on minibatches, with an
/// independent dropout mask per example (standard dropout). A draw is one mask shared by all
/// inputs, realised as the network's parameter vector with dropped units' outgoing weights zeroed and
/// the kept ones scaled by 1 / (1 - p) (DropoutMlp::apply_mask); the likelihood extras are copied.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/dropout_mlp.hpp"
#include "uqnn/optim/objective.hpp"

namespace uqnn {

/// Draws of MC dropout: theta times one sampled mask's multipliers each. `Masking` is DropoutMlp
/// or CnnDropout (below): both give `sample_scale(rng, size)` (one shared mask as multipliers of
/// theta's entries, 1 on the likelihood's extras) and `variance_factor(size)`.
template <typename Masking>
class DropoutPosterior final : public ApproximatePosterior {
 public:
  /// theta = [network parameters; extras].
  DropoutPosterior(std::shared_ptr<const Masking> masking, Vec theta) : masking_(std::move(masking)), theta_(std::move(theta)) {
    if (theta_.size() < masking_->network().num_params())
      throw std::invalid_argument("dropout posterior: theta has " + std::to_string(theta_.size()) + " entries, the network " +
                                  std::to_string(masking_->network().num_params()));
  }
  std::string kind() const override { return "dropout"; }
  Index dim() const override { return theta_.size(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override {
    std::vector<Vec> out;
    for (Index s = 0; s < n; ++s) out.push_back(theta_.cwiseProduct(masking_->sample_scale(rng, theta_.size())));
    return out;
  }
  /// theta itself: E[m / (1 - p)] = 1 for every mask entry.
  Vec mean() const override { return theta_; }
  /// theta^2 p / (1 - p) on the dropped weights, 0 elsewhere.
  Vec marginal_variance() const override { return masking_->variance_factor(theta_.size()).cwiseProduct(theta_.cwiseAbs2()); }

 private:
  std::shared_ptr<const Masking> masking_;
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

/// MC dropout on a convolutional network (nn/cnn.hpp): dropout on the features that feed each fully
/// connected layer (the flattened or pooled conv features, and every hidden fc layer's outputs),
/// as PyTorch's nn.Dropout(p) placed before each nn.Linear but the first layer of the network;
/// convolutions are not dropped. Gal and Ghahramani (2016), "Dropout as a Bayesian approximation",
/// section 3: dropout before a weight layer is a Bernoulli variational family over its weight
/// columns.
///
/// Why parameter vectors again: one mask m shared by all inputs multiplies input column j of the
/// fc layer's weight [out, in] by m_j / (1 - p), so a draw is a parameter vector of the same Cnn,
/// and its predictions go through the path every other method uses.
class CnnDropout {
 public:
  /// The fc layers (top level) whose input is not the network's input; p in [0, 1). Throws
  /// InputError when the network has no such layer (nothing to drop).
  CnnDropout(std::shared_ptr<const Cnn> network, double drop_probability);
  const Cnn& network() const { return *network_; }
  double drop_probability() const { return p_; }
  /// Multipliers of theta's entries for one random mask: m_j / (1 - p) on the weight columns of
  /// each dropped input feature j (m_j ~ Bernoulli(1 - p)), 1 elsewhere; `size` >= the network's
  /// parameters (the likelihood's extras get 1).
  Vec sample_scale(Rng& rng, Index size) const;
  /// p / (1 - p) on the dropped layers' weights, 0 elsewhere: the variance of a draw's entry is
  /// that times its square.
  Vec variance_factor(Index size) const;

 private:
  struct DroppedLayer {
    Index offset, out, in;  ///< weight [out, in] row-major at theta[offset]
  };
  std::shared_ptr<const Cnn> network_;
  double p_;
  std::vector<DroppedLayer> layers_;
};

/// -log p(theta | D) / N on a minibatch with dropout: the batch is cut into groups of
/// `examples_per_mask` consecutive examples, each evaluated with its own mask (the network at
/// theta * scale, whose gradient is scale * the network's gradient there). Its expectation over the
/// masks is that of standard dropout (a mask per example): the loss is a sum over examples; only
/// the gradient's variance is larger. Not thread safe.
class CnnDropoutObjective : public Objective {
 public:
  CnnDropoutObjective(std::shared_ptr<const CnnDropout> dropout, std::shared_ptr<const Posterior> posterior, std::uint64_t seed,
                      std::uint64_t stream, Index examples_per_mask = 8);
  Index dim() const override { return posterior_->dim(); }
  Index num_data() const override { return posterior_->num_data(); }
  double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;
  void archive(StateArchive& a) const override { a.io(rng_); }

 private:
  std::shared_ptr<const CnnDropout> dropout_;
  std::shared_ptr<const Posterior> posterior_;
  Index examples_per_mask_;
  mutable Rng rng_;
};

}  // namespace uqnn
