#pragma once
/// @file MC dropout on an Mlp (Gal & Ghahramani 2016): dropout on the hidden activations at training
/// *and* at prediction time, with "inverted" masks m_j / (1 - p), m_j ~ Bernoulli(1 - p).
///
/// Why parameter vectors: dropping hidden unit j of layer l with one mask shared by all inputs is the
/// same function as the plain Mlp whose layer-(l+1) weight column j is multiplied by m_j / (1 - p).
/// So one MC-dropout draw is a parameter vector of the underlying Mlp (`apply_mask`), and its
/// predictions go through the path every other method uses. Dropout is never applied after the
/// output layer (QUiNN defect 7).
#include <vector>

#include "uqnn/nn/mlp.hpp"

namespace uqnn {

class DropoutMlp {
 public:
  /// `spec` needs at least one hidden layer; drop_probability p in [0, 1).
  DropoutMlp(MlpSpec spec, double drop_probability);

  /// One matrix per hidden layer, [width_l, columns], entries 0 or 1 / (1 - p). One column is
  /// broadcast to every input (one mask per draw); `columns` = n gives an independent mask per example.
  using Masks = std::vector<Mat>;

  const Mlp& network() const { return network_; }
  double drop_probability() const { return p_; }
  Index num_params() const { return network_.num_params(); }

  Masks sample_masks(Rng& rng, Index columns = 1) const;
  /// Outputs with the hidden activations multiplied by the masks.
  Mat forward(const Vec& theta, const Mat& X, const Masks& masks) const;
  /// loss(forward(theta, X, masks)); adds its gradient w.r.t. theta to `grad` (resized if empty).
  double value_and_gradient(const Vec& theta, const Mat& X, const Masks& masks, const OutputLoss<double>& loss,
                            Vec& grad) const;
  /// The Mlp parameters equivalent to one shared mask (every mask must have one column).
  Vec apply_mask(const Vec& theta, const Masks& masks) const;
  /// Multipliers of theta's entries for one random shared mask (`apply_mask` is theta times them);
  /// `size` >= the network's parameters (the likelihood's extras get 1).
  Vec sample_scale(Rng& rng, Index size) const { return scale_of(sample_masks(rng, 1), size); }
  /// p / (1 - p) on the weights leaving a hidden unit, 0 elsewhere: the variance of a draw's entry
  /// is that times its square.
  Vec variance_factor(Index size) const;

 private:
  void check_masks(const Masks& masks, Index n) const;
  Vec scale_of(const Masks& masks, Index size) const;

  Mlp network_;
  double p_;
};

}  // namespace uqnn
