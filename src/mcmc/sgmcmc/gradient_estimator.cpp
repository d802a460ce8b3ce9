#include "uqnn/mcmc/sgmcmc/gradient_estimator.hpp"

#include <stdexcept>

namespace uqnn::sgmcmc {

GradientEstimator::GradientEstimator(std::shared_ptr<const LogDensity> density, Index batch_size)
    : density_(std::move(density)), batch_size_(batch_size) {
  if (!density_) throw std::invalid_argument("sgmcmc: density must not be null");
  if (batch_size < 0) throw std::invalid_argument("batch_size must be >= 0 (0 = full batch)");
  stochastic_ = dynamic_cast<const StochasticLogDensity*>(density_.get());
  randomized_ = dynamic_cast<const RandomizedLogDensity*>(density_.get());
  if (batch_size > 0 && stochastic_ == nullptr)
    throw std::invalid_argument("batch_size must be 0 (full batch) for a log-density without minibatches");
}

IndexVec GradientEstimator::next_batch(Rng& rng) {
  if (!uses_minibatches()) throw std::logic_error("sgmcmc: next_batch without minibatches");
  const auto n = static_cast<std::size_t>(batch_size_);
  if (permutation_.empty() || cursor_ + n > permutation_.size()) {
    permutation_ = rng.permutation(num_data());
    cursor_ = 0;
  }
  IndexVec batch(permutation_.begin() + static_cast<std::ptrdiff_t>(cursor_),
                 permutation_.begin() + static_cast<std::ptrdiff_t>(cursor_ + n));
  cursor_ += n;
  return batch;
}

double GradientEstimator::estimate(Rng& rng, const Vec& theta, Vec& grad) {
  if (randomized_) {
    if (!uses_minibatches()) return randomized_->randomized_log_density_and_grad(rng, theta, nullptr, grad);
    const IndexVec batch = next_batch(rng);
    return randomized_->randomized_log_density_and_grad(rng, theta, &batch, grad);
  }
  if (!uses_minibatches()) return density_->log_density_and_grad(theta, grad);
  return stochastic_->minibatch_log_density_and_grad(theta, next_batch(rng), grad);
}

}  // namespace uqnn::sgmcmc
