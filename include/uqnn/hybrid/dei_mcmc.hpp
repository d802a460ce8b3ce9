#pragma once
/// @file Deep Ensemble Initialized MCMC (DEI-MCMC, seed 003 sec. 7.2): train M networks as a deep
/// ensemble (Adam, full batch, weight decay, Gaussian NLL: seed 003 App. D), start one NUTS chain
/// at each member (or at given networks, e.g. a pre-trained model), run a short warmup (100 steps,
/// App. C.4) and merge the chains' empirical distributions into one posterior, keeping chain
/// identity. The cold-start baseline starts the chains from prior draws instead (seed 003 sec. 4).
///
/// While the chains run, an LppdMonitor computes the chain-wise expanding-window LPPD on a
/// held-out set (App. B.2 eq. 8) and can end converged chains (eq. 9). Afterwards every chain's
/// RMSE is compared with a linear model's ("dying sampler" filter, sec. 4): such chains are
/// dropped from the merged posterior when drop_dying is set, and always counted.
///
/// Reproducibility: member j and chain j use only Rng(seed, j) streams (ensemble: seed; chains:
/// seed + 1), so results do not depend on the thread count.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "uqnn/approx/ensemble.hpp"
#include "uqnn/core/draws.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/mclmc_sampler.hpp"
#include "uqnn/prob/posterior.hpp"
#include "uqnn/hybrid/lppd_monitor.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {

struct DeiMcmcParams {
  /// Where chains start: "ensemble" (DEI-MCMC), "prior" (cold start), "given" (starts passed in).
  std::string start = "ensemble";
  /// Members M = chains; training defaults of seed 003 App. D (Adam 1e-2, weight decay 1e-2,
  /// 5000 full-batch epochs, Gaussian NLL). `ensemble.members` is the number of chains for every start.
  EnsembleParams ensemble = default_ensemble();
  long warmup = 100;        ///< NUTS warmup per chain (seed 003 App. C.4)
  long draws = 1000;        ///< sampling iterations per chain (kept: ceil(draws / thin), as RunConfig)
  long thin = 1;            ///< keep every thin-th draw
  int threads = 0;          ///< chain threads; 0 = min(chains, hardware)
  NutsConfig nuts;          ///< step size / metric adaptation (target accept 0.8 as seed 003 sec. 3)
  /// MILE (Sommer et al. 2025): MCLMC chains instead of NUTS, tuned in warmup (`nuts` is unused).
  std::optional<MclmcConfig> mclmc;
  /// MILE: the members stop early on the held-out set (patience in ensemble.training) and keep
  /// their best-validation snapshot. DEI-MCMC's members never see it (it judges the chains).
  bool members_see_held_out = false;
  LppdMonitorParams monitor;
  bool drop_dying = false;  ///< drop chains with RMSE worse than the linear model from the merge
  /// The chains' checkpoints (the members' are ensemble.checkpoint; both may share a directory).
  CheckpointConfig checkpoint;
  void validate() const;
  static EnsembleParams default_ensemble();
};

struct DeiMcmcResult {
  std::vector<MemberFit> members;  ///< the trained ensemble (start "ensemble" only)
  RunResult run;                   ///< every chain's draws and statistics
  std::vector<std::vector<double>> lppd_traces;  ///< per chain LPPD_l (eq. 8) on the held-out set
  std::vector<std::vector<double>> log_pointwise_likelihood;  ///< per chain LPL^(k,s) per draw
  std::vector<std::vector<double>> draw_rmse;                 ///< per chain RMSE of each draw
  std::vector<std::optional<Index>> converged_at;  ///< per chain first l where eq. 9 held
  std::vector<bool> stopped_early;                 ///< per chain: ended by the monitor
  Vec chain_rmse;                  ///< per chain RMSE of its predictive mean on the held-out set
  double linear_model_rmse = 0.0;  ///< the LM baseline's held-out RMSE
  std::vector<bool> dying;         ///< per chain: chain_rmse >= linear_model_rmse
  int num_dying = 0;
  std::vector<bool> kept;          ///< per chain: part of the merged posterior (all kept if every chain is dying)
  double ensemble_seconds = 0.0, sampling_seconds = 0.0;

  /// Merged posterior: the kept chains' draws and statistics (each chain's first
  /// `max_draws_per_chain` draws, all if negative), each chain under its original index.
  Draws merged(long max_draws_per_chain = -1) const;
};

/// Runs DEI-MCMC (or the cold start / given starts) on `posterior`; the held-out set drives the
/// LPPD monitor and the dying-sampler filter (pass the training data if there is none).
/// `given_starts` (start "given"): one theta of size posterior->dim() per chain.
/// Throws std::invalid_argument for bad parameters, InputError when a chain cannot start.
DeiMcmcResult run_dei_mcmc(std::shared_ptr<const Posterior> posterior, const DeiMcmcParams& params,
                           std::uint64_t seed, const Mat& held_out_inputs, const Mat& held_out_targets,
                           const std::vector<Vec>& given_starts = {}, std::vector<Observer*> observers = {});

}  // namespace uqnn
