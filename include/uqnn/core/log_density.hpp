#pragma once
/// @file LogDensity: what every sampler and optimiser consumes.
#include <span>
#include <stdexcept>

#include "uqnn/core/types.hpp"

namespace uqnn {

/// An unnormalised log-density over R^dim with its gradient.
class LogDensity {
 public:
  virtual ~LogDensity() = default;
  virtual Index dim() const = 0;
  virtual double log_density(const Vec& theta) const {
    Vec grad(dim());
    return log_density_and_grad(theta, grad);
  }
  /// Returns log p(theta) and overwrites `grad` with its gradient (resized to dim()).
  virtual double log_density_and_grad(const Vec& theta, Vec& grad) const = 0;
  /// log p and its gradient at several points at once (chains in lockstep, run/lockstep.hpp):
  /// values[c], and grads[c] overwritten (resized to dim()), for thetas[c]. A point's result
  /// depends only on that point, never on the others or their number. This default evaluates them
  /// one by one; a density with a batched kernel overrides it (a Posterior on an Mlp: one chain per
  /// SIMD lane), and its results may then differ to rounding from log_density_and_grad's.
  virtual void log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<Vec* const> grads,
                                          std::span<double> values) const {
    for (std::size_t c = 0; c < thetas.size(); ++c) values[c] = log_density_and_grad(*thetas[c], *grads[c]);
  }
  /// Exact Hessian-vector product of log p at theta (not every density provides one).
  virtual Vec hessian_vector_product(const Vec& /*theta*/, const Vec& /*v*/) const {
    throw std::logic_error("this log-density provides no Hessian-vector product");
  }
};

/// A log-density that is a sum over N data points and can be estimated without bias from a
/// minibatch: log p(theta) ~ log prior(theta) + (N / n) sum_{i in batch} log lik_i(theta).
class StochasticLogDensity : public LogDensity {
 public:
  virtual Index num_data() const = 0;
  /// Unbiased minibatch estimate of log p and its gradient (overwrites `grad`).
  virtual double minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const = 0;
  /// The same at several points, each with its own minibatch (SG-MCMC chains in lockstep,
  /// run/lockstep.hpp): values[c] and grads[c] for thetas[c] on batches[c]. As for
  /// log_density_and_grad_batch, a point's result depends only on its own point and batch. This
  /// default evaluates them one by one; a Posterior on an Mlp batches minibatches of one size.
  virtual void minibatch_log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<const IndexVec* const> batches,
                                                    std::span<Vec* const> grads, std::span<double> values) const {
    if (batches.size() != thetas.size() || grads.size() != thetas.size() || values.size() != thetas.size())
      throw std::invalid_argument("minibatch_log_density_and_grad_batch: as many minibatches, gradients and values as points");
    for (std::size_t c = 0; c < thetas.size(); ++c) values[c] = minibatch_log_density_and_grad(*thetas[c], *batches[c], *grads[c]);
  }
};

}  // namespace uqnn
