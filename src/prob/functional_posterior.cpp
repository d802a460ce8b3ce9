#include "uqnn/prob/functional_posterior.hpp"

#include <stdexcept>

namespace uqnn {

FunctionalPosterior::FunctionalPosterior(std::shared_ptr<const Posterior> posterior, FunctionalPrior prior,
                                         MeasurementSampler measurement, std::uint64_t reference_seed, bool keep_weight_prior)
    : posterior_(std::move(posterior)),
      prior_(std::move(prior)),
      measurement_(std::move(measurement)),
      keep_weight_prior_(keep_weight_prior) {
  if (!posterior_) throw std::invalid_argument("functional posterior: posterior must not be null");
  if (&posterior_->model() != &prior_.model() && posterior_->model().num_params() != prior_.model().num_params())
    throw std::invalid_argument("functional posterior: the prior's model differs from the posterior's");
  Rng rng(reference_seed, 0x6d656173 /* "meas" */);
  reference_ = prior_.factorize(measurement_.draw(rng));
}

double FunctionalPosterior::evaluate(const Vec& theta, const IndexVec* batch, const MeasurementCovariance& covariance,
                                     Vec& grad) const {
  const Posterior& p = *posterior_;
  const Index P = p.model().num_params(), E = p.likelihood().num_extra();
  if (theta.size() != dim()) throw std::invalid_argument("functional posterior: theta has the wrong size");
  if (batch != nullptr && batch->empty()) throw std::invalid_argument("functional posterior: empty minibatch");
  // With the rows distributed over a shard group (Posterior::distribute_rows, --shards), this rank
  // evaluates only its block of the minibatch (or its own training rows for the full data), and
  // only shard 0 adds the functional prior at the measurement points (they are not data rows: the
  // GP density couples them, so they are not split); the blocks' sums are added over the group in
  // rank order (Posterior::sum_over_shards), and the weight and extras' priors once after that.
  const Communicator* shards = p.shard_communicator();
  const bool with_measurement = shards == nullptr || shards->rank() == 0;
  IndexVec block;
  if (batch != nullptr && shards != nullptr) block = p.shard_block(*batch);
  const IndexVec* rows = shards != nullptr && batch != nullptr ? &block : batch;
  // seed 002 eq. (6): the minibatch likelihood scaled by N / n, plus the functional prior, which
  // replaces the weight prior, at the measurement points. Both are functions of the network's outputs,
  // so one forward and one reverse pass over [minibatch | X_M] gives J^T of both output gradients
  // (one wider matrix product instead of two narrow ones: ~1.3x faster on the 1-D example).
  const Mat& inputs = rows ? gather_columns(p.inputs(), *rows) : p.shard_inputs();
  const Mat& targets = rows ? gather_columns(p.targets(), *rows) : p.shard_targets();
  const double scale = batch ? static_cast<double>(num_data()) / static_cast<double>(batch->size()) : 1.0;
  const Index n = inputs.cols(), M = with_measurement ? covariance.points.cols() : 0;
  Mat joint_inputs(inputs.rows(), n + M);
  if (M > 0)
    joint_inputs << inputs, covariance.points;
  else
    joint_inputs = inputs;
  const Vec extra = theta.tail(E);
  Vec d_extra = Vec::Zero(E);
  const OutputLoss<double> log_density_of_outputs = [&](const Mat& F, Mat& dF) {
    Mat d_likelihood(F.rows(), n), d_prior;
    const double log_likelihood = n > 0 ? p.likelihood().log_likelihood(F.leftCols(n), targets, extra, &d_likelihood, &d_extra) : 0.0;
    const double log_prior = M > 0 ? prior_.log_density_of_outputs(F.rightCols(M), covariance, &d_prior) : 0.0;
    dF.leftCols(n) = scale * d_likelihood;
    if (M > 0) dF.rightCols(M) = d_prior;
    return scale * log_likelihood + log_prior;
  };
  grad = Vec::Zero(dim());
  Vec grad_net = Vec::Zero(P);
  double value = n + M > 0 ? p.model().value_and_gradient(theta.head(P), joint_inputs, log_density_of_outputs, grad_net) : 0.0;
  if (shards != nullptr) {
    grad.head(P) = grad_net;
    grad.tail(E) = scale * d_extra;
    value = p.sum_over_shards(value, grad);
    grad_net = grad.head(P);
  }
  if (keep_weight_prior_) value += p.prior().log_density(theta.head(P), &grad_net);
  grad.head(P) = grad_net;
  if (E > 0) {
    Vec d_extra_prior = Vec::Zero(E);
    value += p.likelihood().extra_log_prior(extra, &d_extra_prior);
    if (shards != nullptr)
      grad.tail(E) += d_extra_prior;  // the likelihood's part is in the sum already
    else
      grad.tail(E) = scale * d_extra + d_extra_prior;
  }
  return value;
}

double FunctionalPosterior::log_density_and_grad(const Vec& theta, Vec& grad) const {
  return evaluate(theta, nullptr, reference_, grad);
}

double FunctionalPosterior::minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  return evaluate(theta, &batch, reference_, grad);
}

double FunctionalPosterior::randomized_log_density_and_grad(Rng& rng, const Vec& theta, const IndexVec* batch,
                                                            Vec& grad) const {
  if (measurement_.is_fixed()) return evaluate(theta, batch, reference_, grad);  // cached factorisation
  // Every shard draws the points, so that the group's Rng streams stay in step; only shard 0
  // evaluates the functional prior (evaluate), so the others skip the factorisation.
  const Mat points = measurement_.draw(rng);
  const Communicator* shards = posterior_->shard_communicator();
  if (shards != nullptr && shards->rank() != 0) return evaluate(theta, batch, reference_, grad);  // reference_ unused there
  return evaluate(theta, batch, prior_.factorize(points), grad);
}

}  // namespace uqnn
