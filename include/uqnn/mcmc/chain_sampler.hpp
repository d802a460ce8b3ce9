#pragma once
/// @file ChainSampler: what the multi-chain driver needs from any MCMC method.
///
/// Kernels themselves are BlackJAX-style pure init/step pairs with their tuning in a Params
/// struct (see the kernel headers); a ChainSampler binds one kernel, its current state and its
/// warmup adaptation for one chain, so the driver can run every method the same way.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "uqnn/core/draw_stats.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/core/state_archive.hpp"

namespace uqnn {

/// One chain of one MCMC method: owns the state and the tuning that warmup adapts.
class ChainSampler {
 public:
  virtual ~ChainSampler() = default;
  /// Starts the chain at `position` (evaluates the log density; a non-finite start throws).
  virtual void init(const Vec& position) = 0;
  /// Tells the sampler how many warmup iterations will come (window schedules need it).
  virtual void begin_warmup(Index num_warmup) { (void)num_warmup; }
  /// One transition. During warmup the sampler adapts its tuning; afterwards it is fixed.
  virtual DrawStats transition(Rng& rng, bool warmup) = 0;
  virtual const Vec& position() const = 0;
  /// The number of parameters (known before init()).
  virtual Index dim() const = 0;
  /// Saves or restores everything transition() depends on besides the chain's Rng: position and
  /// gradient, momentum, tuning, the warmup's adaptation state and counters. The driver restores a
  /// chain by init() at its initial point, begin_warmup(), then archive(): the restored sampler
  /// continues bitwise as the saved one would have (checkpoint and resume, run_chains).
  virtual void archive(StateArchive& archive) = 0;
  /// A short description of the tuned state (step size, metric) for logs and output metadata.
  virtual std::string describe() const { return {}; }
};

/// Makes one fresh ChainSampler per call; the driver calls it once per chain.
using SamplerFactory = std::function<std::unique_ptr<ChainSampler>()>;

}  // namespace uqnn
