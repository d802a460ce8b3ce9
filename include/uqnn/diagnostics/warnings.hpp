#pragma once
/// @file Warnings that say when not to trust an MCMC result, as Stan and NumPyro print them: a
/// user who reads nothing but these lines should know that the numbers next to them are unreliable.
/// Pure functions of the summary table and the sampler's statistics.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/diagnostics/draws_table.hpp"
#include "uqnn/diagnostics/summary.hpp"

namespace uqnn::diagnostics {

/// One reason not to trust a result. `code` is stable (scripts and tests match on it): "rhat",
/// "ess_bulk", "chain_not_converged", "divergences", "max_tree_depth", "e_bfmi", "few_draws",
/// "non_finite_draws" or "overflow"; a note (not a failure) "chains_in_different_modes".
/// `message` is one self-contained sentence or two for people: what is wrong, what it means, what
/// to change.
struct Warning {
  std::string code;
  std::string message;
};

/// What the warnings need from the sampler's per-draw statistics (Stan's divergent__, treedepth__
/// and energy__). The defaults mean "not available": no warning is made from them.
struct SamplerStatsSummary {
  Index num_draws = 0;          ///< post-warmup draws over all chains
  Index divergences = 0;        ///< post-warmup draws that ended in a divergent transition
  int max_depth = 0;            ///< the sampler's maximum tree depth; 0 for samplers without a tree
  Index draws_at_max_depth = 0; ///< post-warmup draws whose tree reached max_depth
  std::vector<double> e_bfmi;   ///< per chain (empty for samplers without an energy)
  /// What the divergence warning tells the user to do: it depends on the sampler's own settings
  /// (services/run_summary.hpp's divergence_remedy). Stan's advice by default, for CSVs of unknown origin.
  std::string divergence_remedy = "Raise the target acceptance rate (--target-accept) or reparameterise the model.";
};

/// The thresholds, with Stan's and NumPyro's defaults.
struct WarningThresholds {
  double max_rhat = 1.01;                ///< Vehtari et al. (2021), sec. 4.4 (Stan, ArviZ)
  double min_ess_bulk_per_chain = 100.0; ///< Vehtari et al. (2021), sec. 4.4: 100 per chain
  double max_tree_depth_fraction = 0.1;  ///< share of draws at the maximum tree depth
  double min_e_bfmi = 0.3;               ///< Betancourt (2016); Stan's `check_energy`
  /// Chain-wise rank-normalised split R-hat with 4 pieces per chain: Sommer et al. (2024, App. B)
  /// see values close to or below 1.1 for chains that converged within their mode.
  double max_chain_rhat = 1.1;
  /// Throws std::invalid_argument naming a threshold outside its range.
  void validate() const;
};

/// Convergence warnings for a summary table (every row is checked; pass only the rows a user
/// should judge the run by, e.g. lp__ and function-space quantities for a BNN, whose weight-space
/// R-hat misleads) from `num_chains` chains, and for the sampler's statistics:
/// - "rhat": R-hat above max_rhat on any row (NaN R-hats are not judged here);
/// - "ess_bulk": bulk ESS below min_ess_bulk_per_chain x num_chains on any row;
/// - "divergences": any divergent transition after warmup;
/// - "max_tree_depth": more than max_tree_depth_fraction of the draws at the maximum tree depth;
/// - "e_bfmi": any chain's E-BFMI below min_e_bfmi.
/// At most one warning per code, naming the worst rows. Throws std::invalid_argument for
/// num_chains < 1 or invalid thresholds.
/// References: Vehtari et al. (2021), Bayesian Analysis 16(2), sec. 4.4; Stan's runtime warnings
/// (mc-stan.org/misc/warnings) and CmdStan `diagnose`; NumPyro's `print_summary` divergence count;
/// Betancourt (2016), arXiv:1604.00695.
std::vector<Warning> convergence_warnings(const std::vector<Summary>& rows, Index num_chains,
                                          const SamplerStatsSummary& stats = {},
                                          const WarningThresholds& thresholds = {});

/// One quantity's draws, [draws, chains] (column = chain), for mode_aware_convergence.
struct ChainDraws {
  std::string name;
  Mat draws;
};

/// What mode_aware_convergence concludes: `warnings` are reasons not to trust the draws; `notes`
/// are properties of the posterior a user should know (codes as in Warning).
struct ModeAwareConvergence {
  std::vector<Warning> warnings;
  std::vector<Warning> notes;
};

/// Convergence judged as a neural network's posterior needs it. Its chains often settle in
/// different modes (weight-space symmetries and genuinely different fits), so between-chain R-hat
/// is large even when every chain has converged within its mode; the draws are then a mixture of
/// the modes the chains found (Sommer et al. 2024, "Connecting the dots", App. B). Each quantity
/// (lp__, the log likelihood, predictive values) is judged chain by chain:
/// - "chain_not_converged": a chain whose chain-wise R-hat (rank-normalised, 4 pieces per chain)
///   exceeds max_chain_rhat on a quantity, or whose draws of a quantity never change (stuck);
/// - "ess_bulk": the within-mode bulk ESS (the sum of each chain's own bulk ESS) below
///   min_ess_bulk_per_chain x chains;
/// - the sampler warnings of convergence_warnings (divergences, tree depth, E-BFMI), except that
///   the maximum tree depth is a note when the chains passed every other check (an efficiency
///   matter then, as Stan's guide to its warnings says);
/// - note "chains_in_different_modes": between-chain R-hat above max_rhat on a quantity while
///   every chain converged within its own mode.
/// Chains with fewer than 8 draws are not judged (few_draws_warnings says so). Throws
/// std::invalid_argument for invalid thresholds.
ModeAwareConvergence mode_aware_convergence(const std::vector<ChainDraws>& quantities, const SamplerStatsSummary& stats = {},
                                            const WarningThresholds& thresholds = {});

/// Warnings about the draws themselves, before any diagnostic: "non_finite_draws" when a quantity
/// holds NaN or an infinity, "overflow" when its draws are finite but so large (|x| near 1e308)
/// that their mean or variance overflows (the statistics of such quantities are meaningless), and
/// "few_draws" when the chains have fewer than kMinDrawsPerChain draws (R-hat, ESS and MCSE are
/// NaN, as in ArviZ).
std::vector<Warning> draws_warnings(const DrawsTable& table);

/// The sampler statistics of a draws table with Stan's columns (divergent__, treedepth__,
/// energy__; CmdStan's CSV, uqnn's draws.csv): all zero / empty when it has none. `max_depth` is the
/// sampler's maximum tree depth (the table's own when it knows it; 0: no tree-depth count).
SamplerStatsSummary sampler_stats_summary(const DrawsTable& table, int max_depth);

/// The "few_draws" warning when `draws_per_chain` is below kMinDrawsPerChain (R-hat, ESS and MCSE
/// are then NaN, as in ArviZ); empty otherwise.
std::vector<Warning> few_draws_warnings(Index draws_per_chain);

/// The warnings as a JSON array of {"code", "message"} objects (metrics.json's "warnings").
nlohmann::json to_json(const std::vector<Warning>& warnings);

/// The warnings as text, one "warning: <message>" line each (empty for no warnings).
std::string format_warnings(const std::vector<Warning>& warnings);

}  // namespace uqnn::diagnostics
