#pragma once
/// @file The No-U-Turn Sampler as in Stan (base_nuts): a binary trajectory doubled forwards or
/// backwards at random, multinomial sampling of the draw over the trajectory with biased
/// progressive sampling between the old tree and each new subtree (uniform progressive sampling
/// inside subtrees), the generalised no-U-turn criterion on summed momenta with Stan's extra
/// checks across the two halves of every merged tree, maximum tree depth, and divergence when
/// H - H0 exceeds a threshold or the trajectory leaves the finite region.
///
/// References: Hoffman & Gelman (2014), JMLR 15, 1593-1623; Betancourt (2017), arXiv:1701.02434,
/// App. A (multinomial sampling, generalised criterion); Stan 2.2x `base_nuts.hpp` (extra
/// subtree checks, PR #2800); seeds 003 and 004.
#include "uqnn/mcmc/gradient_state.hpp"
#include "uqnn/mcmc/metric.hpp"
#include "uqnn/core/rng.hpp"

namespace uqnn {

struct NutsParams {
  double step_size = 0.1;               ///< eps > 0
  int max_depth = 10;              ///< in [1, 30]
  Metric metric = DiagonalMetric{};     ///< inverse metric; empty diagonal = unit
  double divergence_threshold = 1000.0; ///< divergent when H - H0 > this; > 0
  double step_size_jitter = 0.0;        ///< eps (1 + u), u ~ U(-jitter, jitter); in [0, 1)
  void validate(Index dim) const;
};

struct NutsInfo {
  double accept_prob = 0.0;   ///< mean over the tree's leapfrog steps of min(1, exp(H0 - H))
  int tree_depth = 0;         ///< number of doublings completed
  int num_leapfrog_steps = 0;
  bool is_divergent = false;
  double energy = 0.0;        ///< H at the selected point
  double step_size = 0.0;     ///< the (jittered) step size used
};

struct NutsStep {
  GradientState state;
  NutsInfo info;
};

class Nuts {
 public:
  explicit Nuts(const LogDensity& density) : density_(&density) {}
  GradientState init(const Vec& position) const { return make_gradient_state(*density_, position); }
  NutsStep step(Rng& rng, const GradientState& state, const NutsParams& params) const;
  const LogDensity& density() const { return *density_; }

 private:
  const LogDensity* density_;
};

}  // namespace uqnn
