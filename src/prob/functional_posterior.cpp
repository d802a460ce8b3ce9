#include "uqnn/prob/functional_posterior.hpp"

#include <stdexcept>

namespace uqnn {

FunctionalPosterior::FunctionalPosterior(std::shared_ptr<const Posterior> posterior, FunctionalPrior prior,
                                         MeasurementSampler measurement, std::uint64_t reference_seed)
    : posterior_(std::move(posterior)), prior_(std::move(prior)), measurement_(std::move(measurement)) {
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
  grad = Vec::Zero(dim());
  double value;
  if (batch == nullptr) {
    value = p.log_likelihood(theta, p.inputs(), p.targets(), &grad);
  } else {
    if (batch->empty()) throw std::invalid_argument("functional posterior: empty minibatch");
    // seed 002 eq. (6): the minibatch likelihood scaled by N / n.
    const double scale = static_cast<double>(num_data()) / static_cast<double>(batch->size());
    value = scale * p.log_likelihood(theta, gather_columns(p.inputs(), *batch), gather_columns(p.targets(), *batch), &grad);
    grad *= scale;
  }
  if (E > 0) {
    Vec d_extra = Vec::Zero(E);
    value += p.likelihood().extra_log_prior(theta.tail(E), &d_extra);
    grad.tail(E) += d_extra;
  }
  // The functional prior replaces the weight prior (eq. 6's grad_f log P0(f^{X_M}) term).
  Vec grad_net = Vec::Zero(P);
  value += prior_.log_density(Vec(theta.head(P)), covariance, &grad_net);
  grad.head(P) += grad_net;
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
  return evaluate(theta, batch, prior_.factorize(measurement_.draw(rng)), grad);
}

}  // namespace uqnn
