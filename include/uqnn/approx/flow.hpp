#pragma once
/// @file Normalizing-flow variational inference (seed 004's flows; Rezende & Mohamed 2015): q is
/// the push-forward of z ~ N(0, I_K) through
///
///   y = f_L o ... o f_1 (z),   x = mu + exp(omega) * y,
///
/// where each f_l is a RealNVP affine coupling layer (Dinh, Sohl-Dickstein & Bengio 2017, eqs. 4-6):
/// the coordinates split into a conditioning half a and a transformed half b,
///
///   y_a' = y_a,   y_b' = y_b * exp(s(y_a)) + t(y_a),   log |det| = sum s(y_a),
///
/// with [s; t] from a one-hidden-layer tanh network of y_a and s bounded by tanh (a scale change of
/// at most e per layer keeps the early steps stable). Consecutive layers swap the halves of a fixed
/// random partition (a new partition every two layers), so every coordinate is transformed
/// conditioned on the others. The conditioners' output layers start at zero: the flow starts as the
/// mean-field Gaussian N(mu, exp(2 omega)) and learns the dependence mean field cannot express
/// (correlations, curved "banana" shapes). The ELBO E_q[log p(x)] + H[q] is maximised by Adam
/// with reparameterised gradients: log p's gradient at x pulled back through the flow by hand
/// (FlowTape keeps the forward pass), plus the gradient of log |det dx/dz|.
#include <functional>
#include <memory>
#include <vector>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/core/log_density.hpp"
#include "uqnn/optim/epoch_checkpoint.hpp"
#include "uqnn/optim/optimizer.hpp"

namespace uqnn {

/// What the backward pass needs from one forward pass of a batch of S draws (one per column).
struct FlowTape {
  std::vector<Mat> conditioning;  ///< per layer: y_a [|a|, S]
  std::vector<Mat> transformed;   ///< per layer: y_b before the layer [|b|, S]
  std::vector<Mat> hidden;        ///< per layer: the conditioner's hidden activations [H, S]
  std::vector<Mat> log_scale;     ///< per layer: s [|b|, S]
  Mat y;                          ///< the coupling layers' output (before mu + exp(omega) y) [K, S]
};

/// The flow works on batches: the S draws of a step go through each layer as one matrix product
/// (columns are draws), so the conditioners cost matrix-matrix rather than S matrix-vector products.
class RealNvpFlow {
 public:
  /// `num_couplings` >= 0 layers (none when dim < 2: the flow is then the affine map alone), each
  /// conditioner with `hidden` tanh units; the partitions are drawn from `partition_seed`.
  RealNvpFlow(Index dim, Index num_couplings, Index hidden, std::uint64_t partition_seed);

  Index dim() const { return dim_; }
  Index num_couplings() const { return static_cast<Index>(layers_.size()); }
  Index num_params() const { return num_params_; }
  /// phi at the mean-field start: mu = `mean`, omega = log `sd`, each conditioner's first layer
  /// Glorot-uniform from `rng` and its output layer zero (so the couplings are the identity).
  Vec initial_params(const Vec& mean, double sd, Rng& rng) const;

  /// X = T_phi(Z) column by column ([K, S]); returns each column's log |det dx/dz|. Fills `tape`
  /// when given.
  Vec forward(const Vec& phi, const Mat& Z, Mat& X, FlowTape* tape = nullptr) const;
  /// Adds to `grad_phi` the gradient in phi of L = sum_s [G_x(:, s) . x_s + w_s log |det_s|] (the
  /// chain rule of any sum of L_s(x_s, log det_s) given their partial derivatives at the taped batch).
  void backward(const Vec& phi, const FlowTape& tape, const Mat& G_x, const Vec& w, Vec& grad_phi) const;
  /// Z = T_phi^-1(X) column by column; returns each column's log |det dx/dz| at its z.
  Vec inverse(const Vec& phi, const Mat& X, Mat& Z) const;

 private:
  struct Layer {
    IndexVec a, b;                  ///< conditioning and transformed coordinates
    Index w1 = 0, b1 = 0, w2 = 0, b2 = 0;  ///< offsets in phi: W1 [H, |a|], b1 [H], W2 [2|b|, H], b2 [2|b|]
  };
  Index dim_, hidden_;
  std::vector<Layer> layers_;
  Index num_params_ = 0;
};

/// q(x) of a fitted flow: exact draws and density; mean and marginal variances are Monte Carlo
/// estimates from 4000 draws fixed at construction (a flow has no closed form for them).
class FlowPosterior : public ApproximatePosterior {
 public:
  FlowPosterior(std::shared_ptr<const RealNvpFlow> flow, Vec phi);
  std::string kind() const override { return "flow"; }
  Index dim() const override { return flow_->dim(); }
  std::vector<Vec> sample(Rng& rng, Index n) const override;
  Vec mean() const override { return mean_; }
  Vec marginal_variance() const override { return variance_; }
  bool has_log_prob() const override { return true; }
  double log_prob(const Vec& x) const override;
  const RealNvpFlow& flow() const { return *flow_; }
  const Vec& params() const { return phi_; }

 private:
  std::shared_ptr<const RealNvpFlow> flow_;
  Vec phi_, mean_, variance_;
};

struct FlowViParams {
  // Defaults measured on tests/unit/approx/flow_test.cpp's targets over 6 seeds: with 4 layers, one
  // draw per step and a constant rate, the gradient's noise left the ill-conditioned regression's
  // sds 15-25% short and the banana half learned; 8 layers, 8 draws and a rate decaying to 1% give
  // sds within 2-6%, means within 0.05 sd, and the banana's KL(q || p) 0.02-0.09 nats (mean field:
  // 0.52).
  Index epochs = 10000;           ///< passes over the data (one step each in full batch)
  double learning_rate = 0.01;    ///< Adam's initial rate
  double final_rate_fraction = 0.01;  ///< the rate decays exponentially to this fraction of the initial one
  Index batch_size = 0;           ///< 0 = full batch; else minibatches of a StochasticLogDensity
  Index num_samples = 8;          ///< reparameterised draws per step
  Index num_couplings = 8;
  Index hidden = 32;
  double initial_sd = 0.01;       ///< exp(omega) at the start (mean-field VI's softplus(-4.5))
  EpochCheckpoint checkpoint;     ///< the loop's checkpoints (phi, Adam's moments, the rate, the stream); none by default
  void validate() const;
};

struct FlowViResult {
  std::vector<double> elbo;       ///< per-epoch estimate of E_q[log p] + H[q]
  Index rejected_draws = 0;       ///< draws where log p or its gradient was not finite (left out of the step)
  bool interrupted = false;
  Index resumed_at_epoch = 0;     ///< the epoch a checkpoint restored (0: started afresh)
  std::shared_ptr<const FlowPosterior> approximation;
};

/// Fits the flow to `target` from `initial_mean`. With batch_size > 0 the target must be a
/// StochasticLogDensity: each step uses its unbiased minibatch estimate of log p (the whole ELBO,
/// so every step is an unbiased ELBO gradient). `on_epoch(epoch, elbo)` returning false stops.
FlowViResult fit_flow_vi(const LogDensity& target, const Vec& initial_mean, const FlowViParams& params, Rng& rng,
                         const std::function<bool(Index, double)>& on_epoch = {});

}  // namespace uqnn
