#pragma once
/// @file Likelihoods p(y | f(x)) on the model outputs.
///
/// A likelihood may own extra parameters (the learned log-sigma), which the Posterior appends to
/// theta after the network's parameters, together with their prior.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/nn/dual.hpp"

namespace uqnn {

class Likelihood {
 public:
  virtual ~Likelihood() = default;
  virtual std::string kind() const = 0;
  /// Number of network outputs needed for targets of dimension `target_dim`.
  virtual Index model_outputs(Index target_dim) const = 0;
  /// Names of the extra parameters (appended to theta); empty for most likelihoods.
  virtual ParamLayout extra_layout() const { return {}; }
  Index num_extra() const { return extra_layout().size(); }
  virtual Vec initial_extra() const { return Vec(0); }
  /// Checks the targets (e.g. 0/1 for Bernoulli); throws InputError naming the first bad value.
  virtual void validate_targets(const Mat& targets) const;

  /// sum_i log p(y_i | Y_i); writes dY and adds to d_extra when given.
  virtual double log_likelihood(const Mat& Y, const Mat& targets, const Vec& extra, Mat* dY, Vec* d_extra) const = 0;
  /// The same on dual numbers (for exact Hessian-vector products).
  virtual Dual log_likelihood(const MatT<Dual>& Y, const Mat& targets, const VecT<Dual>& extra, MatT<Dual>* dY,
                              VecT<Dual>* d_extra) const = 0;
  /// log p(y_i | Y_i) per example (no prior term): the pointwise log-likelihood for LPPD.
  virtual Vec pointwise_log_likelihood(const Mat& Y, const Mat& targets, const Vec& extra) const = 0;
  /// log prior of the extra parameters (0 when there are none); gradient added when given.
  virtual double extra_log_prior(const Vec& /*extra*/, Vec* /*grad*/) const { return 0.0; }
  /// Diagonal of the Hessian of extra_log_prior.
  virtual Vec extra_prior_hessian_diagonal(const Vec& extra) const { return Vec::Zero(extra.size()); }
  /// Expected Fisher information of the extras, E_y[-d^2 log p(y | Y, extra) / d extra^2] summed over
  /// the examples of Y, [E x E]; a likelihood with extras must also have E_y[-d^2 log p / dY d extra]
  /// = 0, so the Gauss-Newton curvature of (network, extras) is block diagonal and PSD. Laplace's GGN
  /// uses it where the exact Hessian of a learned log sigma is indefinite away from the noise's MAP.
  virtual Mat extra_fisher_information(const Mat& Y, const Vec& extra) const;

  /// Predictive mean of y given outputs Y (identity for Gaussians, probabilities for classifiers).
  virtual Mat mean(const Mat& Y) const = 0;
  /// Observation-noise variance of y given outputs Y (zero for classifiers); [target_dim, n].
  virtual Mat noise_variance(const Mat& Y, const Vec& extra) const = 0;

  virtual nlohmann::json to_json() const = 0;
};

/// Prior on a learned Gaussian noise sd sigma. The sampler's coordinate is s = log sigma, so the
/// density of s carries the Jacobian of the log transform: log p_s(s) = log p_sigma(e^s) + s.
/// For the log-normal, p_s is N(location, scale^2) itself.
struct NoiseSdPrior {
  enum class Kind {
    LogNormal,   ///< log sigma ~ N(location, scale^2)
    HalfNormal,  ///< sigma ~ N(0, scale^2) truncated to sigma > 0 (Stan's `sigma ~ normal(0, S)` on <lower=0>)
    HalfCauchy,  ///< sigma ~ Cauchy(0, scale) truncated to sigma > 0 (Gelman 2006)
    Flat,        ///< p(sigma) = 1 on sigma > 0 (improper; Stan's default for <lower=0>)
  };
  Kind kind = Kind::LogNormal;
  double location = 0.0;
  double scale = 3.0;

  /// log p_s(s) with its normalising constant (none for Flat); adds d/ds to `grad` when given.
  double log_density(double s, double* grad) const;
  /// d^2/ds^2 log p_s(s).
  double second_derivative(double s) const;
  /// The same prior for sigma measured in units `unit` times larger (sigma' = sigma / unit): what a
  /// prior stated in the target's units is on standardised targets.
  NoiseSdPrior in_units_of(double unit) const;
  /// "lognormal:M,S", "halfnormal:S", "halfcauchy:S" or "flat"; throws InputError naming `flag`.
  static NoiseSdPrior parse(const std::string& text, const std::string& flag);
  std::string to_string() const;
};

/// y ~ N(f(x), sigma^2) with sigma fixed.
std::shared_ptr<Likelihood> make_gaussian_likelihood(double sigma);
/// y ~ N(f(x), sigma^2) with log sigma a parameter (extra "likelihood.log_sigma"), prior
/// log sigma ~ N(log_sigma_prior_mean, log_sigma_prior_sd^2).
std::shared_ptr<Likelihood> make_learned_sigma_likelihood(double initial_sigma, double log_sigma_prior_mean = 0.0,
                                                          double log_sigma_prior_sd = 3.0);
/// The same with any prior on sigma.
std::shared_ptr<Likelihood> make_learned_sigma_likelihood(double initial_sigma, const NoiseSdPrior& prior);
/// y ~ N(f_mean(x), exp(f_logsigma(x))^2): the network outputs mean and log-sigma (2 t outputs).
std::shared_ptr<Likelihood> make_heteroscedastic_likelihood();
/// y in {0, 1} ~ Bernoulli(sigmoid(f(x))): one output, a logit.
std::shared_ptr<Likelihood> make_bernoulli_likelihood();
/// y in {0, ..., K-1} ~ Categorical(softmax(f(x))): K outputs, logits.
std::shared_ptr<Likelihood> make_categorical_likelihood(Index num_classes);
/// Rebuilds a likelihood from `to_json()`.
std::shared_ptr<Likelihood> make_likelihood(const nlohmann::json& description);

}  // namespace uqnn
