#pragma once
/// @file FunctionalPosterior: the target of fSGLD / fSGHMC, i.e. the likelihood of the data with
/// the weight prior replaced by a GP functional prior at measurement points drawn every iteration.
///
/// Seed 002 eq. (6) / (9): the drift is -grad_w U~ with
///     U~(w) = -(N/n) sum_{i in batch} log p(y_i | f(x_i; w)) - log P0(f(X_M; w))
/// (X_M fresh at every step, App. D Alg. 1-2). This class returns -U~ and its gradient; SGLD and
/// SGHMC stepping along it are fSGLD and fSGHMC (mcmc/sgmcmc/functional_sgmcmc.hpp). Likelihood
/// extras (e.g. a learned log sigma) keep their own prior from the Likelihood.
/// With `keep_weight_prior` the posterior's weight prior is added to U~ as well (not in seed 002):
/// the GP constrains only f at the measurement points, so weights that neither it nor the data pin
/// down random-walk under eq. (6) alone (the Mushroom bandit, docs/contextual-bandit.md).
/// The deterministic `log_density_and_grad` (full data) and `minibatch_log_density_and_grad`
/// use one reference measurement set drawn at construction (from Rng(reference_seed)), so lp__
/// reports and optimisers see a fixed function of theta.
#include <memory>

#include "uqnn/prob/functional_prior.hpp"
#include "uqnn/core/randomized_log_density.hpp"
#include "uqnn/prob/measurement_sampler.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

class FunctionalPosterior : public RandomizedLogDensity {
 public:
  /// `posterior` supplies the model, likelihood and data; its weight prior is used only with
  /// `keep_weight_prior`.
  FunctionalPosterior(std::shared_ptr<const Posterior> posterior, FunctionalPrior prior, MeasurementSampler measurement,
                      std::uint64_t reference_seed = 0, bool keep_weight_prior = false);

  Index dim() const override { return posterior_->dim(); }
  Index num_data() const override { return posterior_->num_data(); }
  const Posterior& posterior() const { return *posterior_; }
  const FunctionalPrior& prior() const { return prior_; }
  const MeasurementSampler& measurement() const { return measurement_; }
  bool keeps_weight_prior() const { return keep_weight_prior_; }
  /// The reference measurement set (and its factorisation).
  const MeasurementCovariance& reference() const { return reference_; }

  double log_density_and_grad(const Vec& theta, Vec& grad) const override;
  double minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;
  double randomized_log_density_and_grad(Rng& rng, const Vec& theta, const IndexVec* batch, Vec& grad) const override;

  /// (N/n) sum_batch log lik + extras' prior + log P0(f(X_M)) on a given measurement covariance
  /// (+ log p(w) with keep_weight_prior); batch nullptr = all data. Overwrites grad.
  double evaluate(const Vec& theta, const IndexVec* batch, const MeasurementCovariance& covariance, Vec& grad) const;

 private:
  std::shared_ptr<const Posterior> posterior_;
  FunctionalPrior prior_;
  MeasurementSampler measurement_;
  MeasurementCovariance reference_;
  bool keep_weight_prior_ = false;
};

}  // namespace uqnn
