#pragma once
// The multi-chain driver as the fit service runs it for the sampling methods (nuts, hmc, mala, amcmc,
// the SG-MCMC family, vi-hmc): its settings from the MCMC flags, its observers, and the kept draws
// (private to src/services).
#include <functional>
#include <vector>

#include "uqnn/run/observer.hpp"
#include "uqnn/run/run_chains.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn::detail {

/// --chains --threads --warmup --draws --thin and the fit's seed.
inline RunConfig chain_run_config(const FitConfig& cfg) {
  const McmcConfig& m = cfg.mcmc;
  RunConfig run;
  run.num_chains = m.chains;
  run.num_threads = m.threads;
  run.num_warmup = m.warmup;
  run.num_draws = m.draws;
  run.thin = m.thin;
  run.seed = cfg.seed;
  return run;
}

/// Ctrl-C ends the chains with the draws made so far; progress on stderr when the fit asks for it and
/// stderr is a terminal outside CI.
class ChainRunObservers {
 public:
  explicit ChainRunObservers(const FitConfig& cfg) : observers_{&interrupt_} {
    if (cfg.progress && progress_wanted()) observers_.push_back(&progress_);
  }
  ChainRunObservers(const ChainRunObservers&) = delete;
  ChainRunObservers& operator=(const ChainRunObservers&) = delete;
  const std::vector<Observer*>& list() const { return observers_; }

 private:
  ProgressObserver progress_;
  InterruptObserver interrupt_;
  std::vector<Observer*> observers_;
};

/// Appends the first min_draws() draws of every chain (chain by chain) to `result` with their chain
/// index and statistics; `to_theta` maps a chain's position to the full parameter vector (e.g. a
/// subspace view's expand).
inline void append_kept_draws(const RunResult& run, MethodResult& result,
                              const std::function<Vec(const Vec&)>& to_theta = [](const Vec& x) { return x; }) {
  const Index kept = run.min_draws();
  for (int c = 0; c < run.num_chains(); ++c)
    for (Index d = 0; d < kept; ++d) {
      result.draws.push_back(to_theta(run.draws[static_cast<std::size_t>(c)].row(d).transpose()));
      result.chain_of_draw.push_back(c);
      result.stats.push_back(run.stats[static_cast<std::size_t>(c)][static_cast<std::size_t>(d)]);
    }
}

/// Mean accept_stat over the kept draws (0 when there are none).
inline double mean_accept_stat(const std::vector<DrawStats>& stats) {
  double sum = 0;
  for (const DrawStats& s : stats) sum += s.accept_stat;
  return stats.empty() ? 0.0 : sum / static_cast<double>(stats.size());
}

}  // namespace uqnn::detail
