#pragma once
/// @file The multi-chain driver (NumPyro's MCMC + Stan's transition loop): num_chains chains on a
/// pool of std::threads, warmup, thinning, initial points, observers, interrupts.
///
/// Reproducibility: chain c draws only from Rng(seed, c) (its initial-point callback too) and
/// chains share nothing, so the draws are identical for any num_threads.
///
/// Scale-out (core/communicator.hpp, issue 16): under mpirun the chains are spread over the MPI
/// ranks (chain c on chain rank c mod R, threads within each rank) and every rank returns every
/// chain, bitwise as one process would. With --part k/n (work_layout().part) only the chains
/// c = k-1, k-1+n, ... run; the others stay empty with chain_in_part[c] false.
/// References: NumPyro `MCMC`; Stan `run_adaptive_sampler` / `generate_transitions`.
#include <filesystem>
#include <functional>
#include <variant>
#include <vector>

#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/run/observer.hpp"

namespace uqnn {

/// Checkpoints (issue 17): chain c's whole state (its sampler's archive(), its Rng, the iteration,
/// the draws and statistics so far, its initial point) in `directory`/chain-<c>.state, written
/// atomically (temp file + rename) every `every_iterations` iterations or `every_seconds` seconds,
/// and whenever the chain stops before its end (an observer's Stop: Ctrl-C, SIGTERM). With
/// `resume`, a chain whose file exists continues from it, bitwise as the run that wrote it would
/// have; a chain without one starts afresh (it had not started, or had not reached a checkpoint).
/// Each chain writes only its own file, so chains never wait for each other; under MPI each rank
/// writes its chains' files into the shared directory.
struct CheckpointConfig {
  std::filesystem::path directory;  ///< empty: no checkpoints
  long every_iterations = 0;        ///< >= 0; 0 = not by count
  double every_seconds = 0.0;       ///< >= 0; 0 = not by time
  /// Also when a chain ends normally (so a resumed run need not redo a chain that had finished).
  bool at_chain_end = false;
  bool resume = false;
  bool enabled() const { return !directory.empty(); }
  std::filesystem::path chain_file(int chain) const;
};

struct RunConfig {
  int num_chains = 4;         ///< >= 1
  int num_threads = 0;        ///< >= 0; 0 = min(num_chains, hardware threads)
  long num_warmup = 1000;     ///< >= 0
  long num_draws = 1000;      ///< sampling iterations, >= 0 (kept: ceil(num_draws / thin))
  long thin = 1;              ///< >= 1
  std::uint64_t seed = 0;     ///< chain c uses Rng(seed, c)
  /// The chains of each thread advance in lockstep (run/lockstep.hpp): they are split into one
  /// contiguous group per thread and their gradient requests to a make_lockstep_density are batched.
  /// The draws do not depend on the grouping; they differ to rounding from a run without it.
  bool lockstep = false;
  CheckpointConfig checkpoint;
  void validate() const;
};

/// Initial points: one vector for all chains, one per chain, or a callback (chain, rng) -> point
/// that draws from the chain's own Rng (e.g. a prior draw).
using InitialPointFn = std::function<Vec(int chain, Rng& rng)>;
using InitialPoints = std::variant<Vec, std::vector<Vec>, InitialPointFn>;

struct RunResult {
  std::vector<Mat> draws;                       ///< per chain [kept draws, dim]
  std::vector<std::vector<DrawStats>> stats;    ///< per chain, one per kept draw
  std::vector<std::vector<DrawStats>> warmup_stats;  ///< per chain, every warmup iteration
  std::vector<std::string> sampler_descriptions;     ///< describe() after the run, per chain
  std::vector<Vec> initial_points;              ///< per chain
  bool interrupted = false;                     ///< an observer stopped the run early (Stop)
  std::vector<bool> chain_stopped;              ///< per chain: an observer ended it alone (StopChain)
  std::vector<bool> chain_in_part;              ///< per chain: run by this part (all true without --part)
  std::vector<long> resumed_at;                 ///< per chain: the iteration a checkpoint restored (0: started afresh)
  double seconds = 0.0;                         ///< wall time

  int num_chains() const { return static_cast<int>(draws.size()); }
  /// Parameter dimension (of the first chain this part ran).
  Index dim() const {
    for (int c = 0; c < num_chains(); ++c)
      if (in_part(c)) return draws[static_cast<std::size_t>(c)].cols();
    return 0;
  }
  /// Whether chain c was run by this part (--part k/n); always true for a whole run.
  bool in_part(int chain) const {
    return chain_in_part.empty() || chain_in_part[static_cast<std::size_t>(chain)];
  }
  /// Smallest number of kept draws over the chains of this part (chains can differ after an interrupt).
  Index min_draws() const;
  /// Coordinate `index` as [draws, chains of this part] (the diagnostics' shape), truncated to min_draws().
  Mat coordinate(Index index) const;
  /// A statistic (e.g. [](const DrawStats& s) { return s.lp; }) as [draws, chains].
  Mat statistic(const std::function<double(const DrawStats&)>& field) const;
  /// All chains' draws stacked into [num_chains * min_draws, dim] (chain-major).
  Mat pooled() const;
  /// Divergent transitions after warmup, summed over chains.
  long num_divergent() const;
  long num_divergent_warmup() const;
};

/// Runs the chains. Throws std::invalid_argument for a bad config or initial points of the wrong
/// size; uqnn::InputError ("chain c: ...") when a chain cannot start (e.g. non-finite log
/// density at its initial point); any other exception from a chain is rethrown after all threads
/// have stopped.
RunResult run_chains(const RunConfig& config, const SamplerFactory& factory, const InitialPoints& initial_points,
                     const std::vector<Observer*>& observers = {});

}  // namespace uqnn
