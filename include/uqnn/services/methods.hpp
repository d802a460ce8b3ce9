#pragma once
/// @file Runners of the individual methods behind `uqnn fit --method` (one per file in src/services).
#include "uqnn/services/fit.hpp"

namespace uqnn {

/// MAP point estimate: minimises -log p(theta | D) / N with the configured optimiser.
MethodResult run_map(const FitContext& context);

/// MCMC through the multi-chain driver (src/services/method_mcmc.cpp).
MethodResult run_nuts(const FitContext& context);
MethodResult run_hmc(const FitContext& context);
MethodResult run_mala(const FitContext& context);
MethodResult run_amcmc(const FitContext& context);
MethodResult run_sgld(const FitContext& context);
MethodResult run_sghmc(const FitContext& context);
MethodResult run_psgld(const FitContext& context);
/// Functional SG-MCMC of seed 002 (GP prior over the network's outputs; services/functional_options.hpp).
MethodResult run_fsgld(const FitContext& context);
MethodResult run_fsghmc(const FitContext& context);
/// Optimisation-based methods of seed 001 (src/services/method_<name>.cpp; settings in
/// services/approx_options.hpp): deep ensemble, randomized MAP, Bayes by Backprop, Laplace, SWAG,
/// MC dropout.
MethodResult run_deep_ensemble(const FitContext& context);
MethodResult run_randomized_map(const FitContext& context);
MethodResult run_vi(const FitContext& context);
MethodResult run_laplace(const FitContext& context);
MethodResult run_swag(const FitContext& context);
MethodResult run_dropout(const FitContext& context);

/// VI-HMC (seed 000): VI, sensitivities, HMC/NUTS on the sensitive subset (src/services/method_vi_hmc.cpp).
MethodResult run_vi_hmc(const FitContext& context);
/// Deep Ensemble Initialized NUTS (seed 003 sec. 7.2; src/services/method_dei.cpp).
MethodResult run_dei_nuts(const FitContext& context);

/// Trains a point estimate of `context.posterior` from `start` (used by MAP and as pre-training).
TrainResult train_map(const FitContext& context, const Vec& start, Rng& rng);

/// A progress reporter for epochs/iterations on stderr, active only when `enabled`.
std::function<bool(Index, double, double)> epoch_progress(bool enabled, Index total, const std::string& label);

/// True when progress should be shown: stderr is a terminal and CI is not set.
bool progress_wanted();

}  // namespace uqnn
