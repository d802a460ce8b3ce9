#pragma once
/// @file Posterior: log p(theta | D) = sum_i log p(y_i | f(x_i; theta)) + log p(theta), with value,
/// gradient (backprop), exact Hessian-vector products and unbiased minibatch estimates.
///
/// theta = [network parameters; likelihood extras (e.g. log sigma)]; `layout()` names all of it.
#include <functional>
#include <memory>

#include "uqnn/core/communicator.hpp"
#include "uqnn/nn/model.hpp"
#include "uqnn/prob/likelihood.hpp"
#include "uqnn/core/log_density.hpp"
#include "uqnn/prob/prior.hpp"

namespace uqnn {

class Posterior : public StochasticLogDensity {
 public:
  /// inputs [input_dim, N], targets [target_dim, N]; checks shapes and target values.
  Posterior(std::shared_ptr<const Model> model, std::shared_ptr<const Likelihood> likelihood,
            std::shared_ptr<const Prior> prior, Mat inputs, Mat targets);

  Index dim() const override { return layout_.size(); }
  Index num_data() const override { return inputs_.cols(); }
  const ParamLayout& layout() const { return layout_; }
  const Model& model() const { return *model_; }
  const Likelihood& likelihood() const { return *likelihood_; }
  const Prior& prior() const { return *prior_; }
  std::shared_ptr<const Model> model_ptr() const { return model_; }
  std::shared_ptr<const Likelihood> likelihood_ptr() const { return likelihood_; }
  std::shared_ptr<const Prior> prior_ptr() const { return prior_; }
  const Mat& inputs() const { return inputs_; }
  const Mat& targets() const { return targets_; }

  double log_density_and_grad(const Vec& theta, Vec& grad) const override;
  /// log p(theta) without its gradient: the forward pass and the likelihood only, no backward pass
  /// (about a third of a gradient's cost). What the gradient-free kernels (adaptive and random-walk
  /// Metropolis, slice) and SG-MCMC's exact lp__ call. Equal to log_density_and_grad's value up to
  /// rounding (the forward pass alone may sum in another order).
  double log_density(const Vec& theta) const override;
  /// Through the model's lane kernel when it has one (Model::has_chain_lanes; not with
  /// distribute_rows), else one by one.
  void log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<Vec* const> grads,
                                  std::span<double> values) const override;
  /// (N / |B|) sum_{i in B} log p(y_i | theta) + log p(theta). With distribute_rows, this rank
  /// evaluates only its contiguous block of `batch` (positions [r |B| / S, (r + 1) |B| / S), empty
  /// when |B| < S) and the blocks are summed as log_density_and_grad sums the rows' blocks.
  double minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;
  /// Through the model's lane kernel, each chain on its own minibatch (Model::
  /// value_and_gradient_lanes_on_own_inputs), when it has one and the rows are not distributed;
  /// else one by one.
  void minibatch_log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<const IndexVec* const> batches,
                                            std::span<Vec* const> grads, std::span<double> values) const override;
  Vec hessian_vector_product(const Vec& theta, const Vec& v) const override;

  /// sum_i log p(y_i | f(x_i)) on other data (no prior, no extras' prior); gradient added when given
  /// (without one, the forward pass only).
  double log_likelihood(const Vec& theta, const Mat& inputs, const Mat& targets, Vec* grad = nullptr) const;
  /// log p(y_i | f(x_i)) for each example of (inputs, targets).
  Vec pointwise_log_likelihood(const Vec& theta, const Mat& inputs, const Mat& targets) const;
  /// log p(theta) including the likelihood extras' prior; gradient added when given.
  double log_prior(const Vec& theta, Vec* grad = nullptr) const;
  /// A draw of theta from the prior (network parameters and extras).
  Vec sample_prior(Rng& rng) const;
  /// Network parameters followed by the likelihood's initial extras.
  Vec initial_point(Rng& rng) const;

  /// log p(theta | D) with a gradient exact only at the coordinates a `model_gradient` (made by
  /// model().make_subspace_gradient on inputs()) treats as active, plus every extra; the other
  /// entries of grad are unspecified. Used by SubspaceView (VI-HMC, seed 000 section 3.3).
  double subspace_log_density_and_grad(const SubspaceGradient& model_gradient, const Vec& theta, Vec& grad) const;

  /// Data-parallel evaluation (Stan's reduce_sum / map_rect across processes, issue 16): with a
  /// communicator of S ranks, log_density_and_grad evaluates only this rank's contiguous block of
  /// rows [r N / S, (r + 1) N / S), sums the S blocks' log likelihood and gradient with
  /// Communicator::all_reduce_sum (rank order), then adds the prior once. Every rank of `shards`
  /// must make the same calls in the same order (they run the same chain). nullptr (or one rank)
  /// goes back to the whole-data evaluation. The value agrees with the unsharded one to rounding
  /// (relative ~1e-13; tests/mpi check 1e-10); for a fixed S it is bitwise reproducible.
  void distribute_rows(std::shared_ptr<const Communicator> shards);
  const Communicator* shard_communicator() const { return shards_.get(); }
  /// With distribute_rows: this rank's partial value and gradient summed over the shard group in
  /// rank order (MPI_Allgather, then the same additions on every rank: bitwise the same result on
  /// every rank and for any number of chain groups); grad overwritten with the sum. Without: the
  /// value, grad untouched. Every rank of the group must call it at the same point.
  double sum_over_shards(double value, Vec& grad) const;
  /// This rank's contiguous block of `rows` (positions [r n / S, (r + 1) n / S) of n rows, possibly
  /// empty), the split distribute_rows makes of the training rows; all of `rows` without it.
  IndexVec shard_block(const IndexVec& rows) const;
  /// This rank's training rows (the whole data without distribute_rows).
  const Mat& shard_inputs() const { return shards_ ? shard_inputs_ : inputs_; }
  const Mat& shard_targets() const { return shards_ ? shard_targets_ : targets_; }

  /// The network parameters / extras of theta.
  Eigen::Ref<const Vec> network_params(const Vec& theta) const { return theta.head(model_->num_params()); }
  Vec extra_params(const Vec& theta) const { return theta.tail(likelihood_->num_extra()); }

 private:
  /// (N / n) sum over the batch of log lik + log prior; grad overwritten.
  double evaluate(const Vec& theta, const Mat& inputs, const Mat& targets, double likelihood_scale, Vec& grad,
                  bool include_prior, const SubspaceGradient* model_gradient = nullptr) const;
  /// sum_i log p(y_i | f(x_i)) over (inputs, targets) by the forward pass alone.
  double likelihood_value(const Vec& theta, const Mat& inputs, const Mat& targets) const;
  /// inputs_float_ when `inputs` is the whole data set of a float32 network (or this rank's rows), else null.
  const MatT<float>* float_copy_of(const Mat& inputs) const;
  /// Adds the prior (with include_prior) and the extras' part to value and grad, once the network's
  /// part is in: grad's extras become scale * d_extra (plus the extras' prior gradient).
  void finish(const Vec& theta, const Vec& d_extra, double scale, bool include_prior, double& value, Vec& grad) const;
  /// The lane path of both batch evaluations: chain c's likelihood on targets(c), times scale(c);
  /// `network` runs the model's lane pass on the chains' parameters, losses, values and gradients.
  void evaluate_lanes(std::span<const Vec* const> thetas, std::span<Vec* const> grads, std::span<double> values,
                      const std::function<const Mat&(std::size_t)>& targets, const std::function<double(std::size_t)>& scale,
                      const std::function<void(std::span<const double* const>, std::span<const OutputLoss<double>* const>,
                                               std::span<double* const>)>& network) const;

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const Likelihood> likelihood_;
  std::shared_ptr<const Prior> prior_;
  Mat inputs_, targets_;
  MatT<float> inputs_float_;  ///< inputs_ in float when the network runs in float32 (converted once)
  std::shared_ptr<const Communicator> shards_;  ///< distribute_rows(); null = all rows here
  Mat shard_inputs_, shard_targets_;            ///< this rank's rows
  MatT<float> shard_inputs_float_;
  ParamLayout layout_;
};

/// Gathers the columns `indices` of a matrix.
Mat gather_columns(const Mat& m, const IndexVec& indices);

}  // namespace uqnn
