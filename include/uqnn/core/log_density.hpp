#pragma once
/// @file LogDensity: what every sampler and optimiser consumes.
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
};

}  // namespace uqnn
