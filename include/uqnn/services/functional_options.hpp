#pragma once
/// @file Settings of the functional SG-MCMC methods (fsgld, fsghmc; seed 002) and the builder of
/// their target. Step size, schedule, burn-in (--warmup), draws, thinning, minibatch
/// (--sg-batch-size) and friction are the sgld / sghmc ones (src/services/method_sgmcmc.cpp).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "uqnn/prob/functional_posterior.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn {

struct FunctionalOptions {
  std::string gp_kernel = "rbf";  ///< rbf | matern52 | linear | nngp (the network's own infinite-width limit)
  bool gp_ard = false;            ///< one length scale per input (else one shared)
  /// Adam steps of the marginal-likelihood fit; 0 = the paper's: 100 for regression, 500 for
  /// classification (seed 002 App. E: 100 epochs on the 1-D and UCI sets, 500 on images).
  Index gp_iterations = 0;
  /// Classification: alpha_eps of the Dirichlet-based GP's label transformation (Milios et al. 2018
  /// chose 0.01 by cross-validation).
  double gp_dirichlet_alpha = 0.01;
  double gp_learning_rate = 0.1;
  Index gp_max_points = 1000;     ///< the fit uses at most this many random training points
  double gp_jitter = 1e-4;        ///< added to the prior covariance's diagonal, relative to the signal variance
  bool gp_prior_noise = true;     ///< add the fitted noise variance to the prior covariance (functional_prior.hpp)
  /// Measurement points per gradient step: training inputs (all of them when >= N: then fixed) plus
  /// uniform points in the box [min - margin range, max + margin range] of the (standardised)
  /// inputs. Defaults: seed 002 sec. 5.1 (40 + 40) for regression, sec. 5.3 (40 training points,
  /// no box: uniform noise is no image) for classification; measurement_box -1 = that default.
  Index measurement_data = 40;
  Index measurement_box = -1;
  double measurement_margin = 0.1;
  /// Keep the weight prior (--prior) beside the GP prior (FunctionalPosterior); default: seed 002's
  /// eq. (6), the GP prior alone.
  bool keep_weight_prior = false;
};

/// The declarations of FunctionalOptions (option names as the CLI's --gp-kernel, ...).
const OptionSchema<FunctionalOptions>& functional_options();

/// The weight prior whose infinite-width limit the nngp kernel is (--gp-kernel nngp, --method nngp).
struct NngpOptions {
  double nngp_weight_variance = 0.0;  ///< sigma_w^2; 0 = 2 for relu and silu, 1 otherwise
  double nngp_bias_variance = 0.1;    ///< sigma_b^2
};
const OptionSchema<NngpOptions>& nngp_options();

/// The NNGP of the fit's network (--arch's depth, --activation) with `nngp_options()`'s variances;
/// InputError, naming `what` (the flag that asked for it), unless the model is an mlp with biases.
NngpArchitecture nngp_architecture(const FitConfig& config, const std::string& what);

/// Fits the GP prior to the training data of `context.posterior` (standardised units) and builds
/// the functional posterior; `info`, when given, receives the fitted hyperparameters and settings.
/// Regression (gaussian likelihood, fixed or learned noise): a GP fitted to the first target.
/// Classification (categorical, bernoulli): the Dirichlet-based GP of Milios et al. (2018) over the
/// logits, pre-trained on the labels (seed 002 App. E); with one logit (bernoulli) the prior is that
/// of f_1 - f_0, a GP with mean m_1 - m_0 and kernel 2 k. Other likelihoods: InputError.
std::shared_ptr<FunctionalPosterior> build_functional_posterior(const FitContext& context, nlohmann::json* info = nullptr);

}  // namespace uqnn
