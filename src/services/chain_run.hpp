#pragma once
// The multi-chain driver as the fit service runs it for the sampling methods (nuts, hmc, mala, amcmc,
// the SG-MCMC family, vi-hmc): its settings from the MCMC flags, its observers, and the kept draws;
// and every method's checkpoint settings (--checkpoint-every) for chains, epoch loops and members
// (private to src/services).
#include <functional>
#include <numeric>
#include <vector>

#include "uqnn/approx/ensemble.hpp"
#include "uqnn/run/observer.hpp"
#include "uqnn/run/run_chains.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn::detail {

/// How many chains, and how long (nuts, hmc, mala, amcmc, the SG-MCMC family, vi-hmc).
struct ChainOptions {
  int chains = 4;
  long warmup = 1000;  ///< warmup (adaptation) or burn-in iterations per chain
  long draws = 1000;   ///< sampling iterations per chain
  long thin = 1;
  std::string checkpoint_every;  ///< "" (only when stopped), "N" iterations, or "Ns" / "Nm" / "Nh"
};

/// --checkpoint-every as iterations or seconds (both 0 for "").
struct CheckpointInterval {
  long iterations = 0;
  double seconds = 0.0;
};
/// "" -> none; "500" -> every 500 iterations; "90s", "10m", "2h" -> every so many seconds. Throws
/// InputError "<where>: ..." for anything else.
CheckpointInterval parse_checkpoint_interval(const std::string& text, const std::string& where);
/// --checkpoint-every's help, for every group that declares it (the chain options, dei-nuts, mile).
inline const char* const kCheckpointEveryHelp =
    "save each chain's whole state into OUT/checkpoint every N iterations (e.g. 500) or every T seconds, minutes or "
    "hours (90s, 10m, 2h); a run stopped by Ctrl-C, SIGTERM or SIGHUP saves it anyway, and `uqnn fit --resume OUT` "
    "continues it bitwise";
inline void check_checkpoint_interval(const std::string& text, const std::string& where) { parse_checkpoint_interval(text, where); }

/// --checkpoint-every of a training (map, vi): their epoch loops' checkpoints.
struct TrainingCheckpointOptions {
  std::string checkpoint_every;
};
inline const OptionSchema<TrainingCheckpointOptions>& training_checkpoint_options() {
  static const auto s = OptionSchema<TrainingCheckpointOptions>("training_checkpoint", "Checkpoints")
                            .add("checkpoint_every", &TrainingCheckpointOptions::checkpoint_every,
                                 "save the training's whole state (parameters, optimiser moments or L-BFGS's curvature "
                                 "pairs, random-number stream) into OUT/checkpoint every N epochs (L-BFGS: evaluations; "
                                 "e.g. 500) or every T seconds, minutes or hours (90s, 10m, 2h); a fit stopped by Ctrl-C, "
                                 "SIGTERM or SIGHUP saves it anyway, and `uqnn fit --resume OUT` continues it bitwise")
                            .checked_by(check_checkpoint_interval);
  return s;
}
inline const OptionSchema<ChainOptions>& chain_options();
/// --checkpoint-every of the method's settings (every group that declares it uses that name).
inline CheckpointInterval checkpoint_interval(const FitConfig& cfg) {
  return parse_checkpoint_interval(chain_options().read(cfg.method_settings).checkpoint_every, "--checkpoint-every");
}

/// The epoch loop's checkpoint file `name` in the fit's checkpoint directory (none when run_fit set
/// none), every --checkpoint-every (as epochs or time).
inline EpochCheckpoint epoch_checkpoint(const FitConfig& cfg, const std::string& name) {
  EpochCheckpoint checkpoint;
  if (cfg.checkpoint_dir.empty()) return checkpoint;
  checkpoint.file = cfg.checkpoint_dir / name;
  const CheckpointInterval every = checkpoint_interval(cfg);
  checkpoint.every_epochs = every.iterations;
  checkpoint.every_seconds = every.seconds;
  checkpoint.resume = cfg.resume;
  return checkpoint;
}

/// Each finished member, and each member's training every --checkpoint-every, in the fit's
/// checkpoint directory (none when run_fit set none).
inline MemberCheckpoint member_checkpoint(const FitConfig& cfg) {
  const CheckpointInterval every = checkpoint_interval(cfg);
  return {cfg.checkpoint_dir, cfg.resume, every.iterations, every.seconds};
}

inline const OptionSchema<ChainOptions>& chain_options() {
  static const auto s = OptionSchema<ChainOptions>("chains", "MCMC chains")
                            .add("chains", &ChainOptions::chains, "MCMC chains")
                            .at_least(1)
                            .add("warmup", &ChainOptions::warmup, "warmup (adaptation) or burn-in iterations per chain")
                            .at_least(0)
                            .add("draws", &ChainOptions::draws, "sampling iterations per chain")
                            .at_least(0)
                            .add("thin", &ChainOptions::thin, "keep every thin-th draw")
                            .at_least(1)
                            .add("checkpoint_every", &ChainOptions::checkpoint_every, kCheckpointEveryHelp)
                            .checked_by(check_checkpoint_interval);
  return s;
}

/// The driver's settings: the chain options, the thread count and the seed.
inline RunConfig chain_run_config(const ChainOptions& chains, int threads, std::uint64_t seed) {
  RunConfig run;
  run.num_chains = chains.chains;
  run.num_threads = threads;
  run.num_warmup = chains.warmup;
  run.num_draws = chains.draws;
  run.thin = chains.thin;
  run.seed = seed;
  return run;
}
/// ... with a fit's --threads and --seed, and its checkpoints (FitConfig::checkpoint_dir, set by
/// run_fit) every --checkpoint-every.
inline RunConfig chain_run_config(const FitConfig& cfg, const ChainOptions& chains) {
  RunConfig run = chain_run_config(chains, cfg.threads, cfg.seed);
  run.checkpoint.directory = cfg.checkpoint_dir;
  const CheckpointInterval every = parse_checkpoint_interval(chains.checkpoint_every, "--checkpoint-every");
  run.checkpoint.every_iterations = every.iterations;
  run.checkpoint.every_seconds = every.seconds;
  run.checkpoint.resume = cfg.resume;
  return run;
}

/// Ctrl-C ends the chains with the draws made so far; progress goes to the fit's reporter.
class ChainRunObservers {
 public:
  explicit ChainRunObservers(const FitContext& context)
      : progress_(context.reporter, context.config.method), observers_{&interrupt_, &progress_} {}
  ChainRunObservers(const ChainRunObservers&) = delete;
  ChainRunObservers& operator=(const ChainRunObservers&) = delete;
  const std::vector<Observer*>& list() const { return observers_; }

 private:
  ProgressObserver progress_;
  InterruptObserver interrupt_;
  std::vector<Observer*> observers_;
};

/// The first min_draws() draws of every chain of this part with their statistics (the multi-chain
/// driver's equal chain lengths); `to_theta` maps a chain's position to the full parameter vector
/// (e.g. a subspace view's expand).
inline Draws kept_draws(const RunResult& run, const std::function<Vec(const Vec&)>& to_theta = {}) {
  Draws draws;
  const Index kept = run.min_draws();
  if (kept == 0) return draws;
  for (int c = 0; c < run.num_chains(); ++c) {
    if (!run.in_part(c)) continue;
    const auto ci = static_cast<std::size_t>(c);
    const Mat& chain = run.draws[ci];
    Mat values;
    if (to_theta) {
      values.resize(kept, to_theta(chain.row(0).transpose()).size());
      for (Index d = 0; d < kept; ++d) values.row(d) = to_theta(chain.row(d).transpose()).transpose();
    } else {
      values = chain.topRows(kept);
    }
    draws.add_chain(c, std::move(values), {run.stats[ci].begin(), run.stats[ci].begin() + kept});
  }
  return draws;
}

/// Mean accept_prob over the draws (0 when there are none or no statistics).
inline double mean_accept_prob(const Draws& draws) {
  const std::vector<double> a = draws.stat_values([](const DrawStats& s) { return s.accept_prob; });
  return a.empty() ? 0.0 : std::accumulate(a.begin(), a.end(), 0.0) / static_cast<double>(a.size());
}

}  // namespace uqnn::detail
