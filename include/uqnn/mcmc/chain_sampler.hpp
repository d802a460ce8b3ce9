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

#include "uqnn/core/rng.hpp"

namespace uqnn {

/// Stan's per-draw sampler statistics (names as in Stan's CSV / ArviZ's sample_stats).
struct DrawStats {
  double lp = 0.0;            ///< lp__: log density at the draw
  double accept_stat = 0.0;   ///< accept_stat__: acceptance probability (mean over the tree for NUTS)
  double step_size = 0.0;     ///< stepsize__
  int tree_depth = 0;         ///< treedepth__ (NUTS; 0 otherwise)
  int n_leapfrog = 0;         ///< n_leapfrog__: gradient evaluations in this transition
  bool divergent = false;     ///< divergent__
  double energy = 0.0;        ///< energy__: Hamiltonian at the draw (NaN for methods without one)
};

/// The names, in order, of DrawStats' fields as Stan writes them.
inline std::vector<std::string> draw_stat_names() {
  return {"lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__"};
}

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
  /// A short description of the tuned state (step size, metric) for logs and output metadata.
  virtual std::string describe() const { return {}; }
};

/// Makes one fresh ChainSampler per call; the driver calls it once per chain.
using SamplerFactory = std::function<std::unique_ptr<ChainSampler>()>;

}  // namespace uqnn
