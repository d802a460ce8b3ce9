#pragma once
/// @file Settings of the optimisation-based methods (ens, rms, vi, laplace, swag, dropout) with their
/// defaults in one place. They travel in FitConfig::method_options under these field names (the CLI
/// flags are the same names with '-' for '_': --ens-members, --vi-pi, ...). Training settings
/// (optimiser, --lr, --epochs, --batch-size, schedule) come from FitConfig::training for every
/// member, pre-training and VI.
#include <nlohmann/json.hpp>
#include <string>

#include "uqnn/core/types.hpp"

namespace uqnn {

struct ApproxOptions {
  Index num_samples = 200;  ///< draws returned by vi / laplace / swag / dropout
  Index threads = 0;        ///< ensemble worker threads; 0 = hardware concurrency
  // Deep ensembles and randomized MAP (seed 001; QUiNN NN_Ens / NN_RMS).
  Index ens_members = 10;          ///< J
  double ens_data_fraction = 1.0;  ///< delta
  bool rms_perturb_targets = false;  ///< also perturb targets (exact for linear-Gaussian), see RandomizedMapParams
  // VI (QUiNN NN_VI defaults, softplus sigma as the manual says).
  std::string vi_prior = "mixture";  ///< mixture (pi, sigma1, sigma2) | model (the fit's --prior)
  double vi_pi = 0.5, vi_sigma1 = 1.0, vi_sigma2 = 1.0;
  Index vi_samples = 1;  ///< S
  double vi_mu_init = 0.2;  ///< mu ~ U(-a, a)
  double vi_rho_init_lower = -5.0, vi_rho_init_upper = -4.0;
  std::string vi_kl = "analytic";  ///< analytic (Gaussian prior only) | mc
  // Laplace.
  std::string laplace_curvature = "exact";  ///< exact | fisher | ggn
  std::string laplace_structure = "full";   ///< full | diag
  double laplace_cov_scale = 1.0;           ///< s
  double laplace_max_memory_gb = 2.0;
  bool laplace_tune = false;        ///< maximise the Laplace marginal likelihood over the prior precision
  bool laplace_tune_noise = false;  ///< ... and the noise sd (fixed-sigma Gaussian)
  Index laplace_newton_steps = 5;   ///< Newton polishing of the MAP when H is positive definite
  /// nn: seed 001's step 4, y = M(x; w) with w ~ N(w*, Sigma); glm: through the network linearised at
  /// w* (Immer et al. 2021, laplace-torch's default), see nn/linearized_model.hpp.
  std::string laplace_predictive = "nn";
  // SWAG (QUiNN NN_SWAG defaults; its app's nens 3 members).
  Index swag_steps = 12, swag_every = 1, swag_rank = 10;
  Index swag_members = 3;            ///< J members, each its own init + SWAG (MultiSWAG, as QUiNN's NN_SWAG)
  std::string swag_cov = "lowrank";  ///< lowrank | diag
  double swag_lr = 0.0;              ///< 0 = swag_default_learning_rate(): 1 / lambda_max at each member's MAP
  double swag_momentum = 0.0;
  // MC dropout.
  double dropout_p = 0.1;

  /// Reads the fields present in `j` (keys = field names); throws InputError on a wrong type.
  static ApproxOptions from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
};

}  // namespace uqnn
