#pragma once
/// @file The convergence summary of a multi-chain run as users need it for BNNs: weight-space
/// R-hat misleads (permutation and sign symmetries, seed 003), so the table shows function-space
/// rows — lp__, the training log-likelihood, predictions at probe inputs — and only the k weights
/// with the worst R-hat, plus E-BFMI and divergence counts.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/draws.hpp"
#include "uqnn/data/standardizer.hpp"
#include "uqnn/diagnostics/summary.hpp"
#include "uqnn/diagnostics/warnings.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

struct RunSummary {
  std::vector<diagnostics::Summary> rows;  ///< lp__, log_lik, f(probe_i) rows, then the worst weights
  Index num_chains = 0, num_draws = 0;
  Index divergences = 0;
  std::vector<double> e_bfmi;  ///< per chain (empty without energies)
  double max_weight_rhat = 0.0;   ///< over the weights that move
  Index num_constant_weights = 0;  ///< coordinates equal in every draw (fixed), left out of the ranking
  int max_depth = 0;               ///< the sampler's maximum tree depth (0: no tree)
  Index draws_at_max_depth = 0;    ///< draws whose tree reached max_depth
  /// Reasons not to trust the run (diagnostics/warnings.hpp), judged on lp__, log_lik and the
  /// function-space rows, not on the weights (their R-hat misleads for BNNs), chain by chain
  /// (diagnostics::mode_aware_convergence).
  std::vector<diagnostics::Warning> warnings;
  /// Properties of the posterior a user should know, such as chains in different modes.
  std::vector<diagnostics::Warning> notes;
  nlohmann::json to_json() const;
  /// The table and its footer (divergences, tree depth, E-BFMI); the warnings are not included.
  std::string format(int decimals = 3) const;
};

/// Summary of draws (full theta) by chain, every chain cut to the shortest; lp__ from the sampler's
/// statistics when the draws have them, else evaluated. Probe inputs are in original units;
/// predictions are reported in original units. `max_depth` is the sampler's maximum tree depth
/// (NUTS), 0 for samplers without a tree.
/// `divergence_remedy` is the advice of the divergence warning (the method's SamplerTraits; empty: Stan's).
RunSummary summarize_run(const Posterior& posterior, const Draws& draws, const Mat& probe_inputs, const Standardizer& standardizer,
                         Index worst_k = 5, int max_depth = 0, const std::string& divergence_remedy = {});


}  // namespace uqnn
