#pragma once
/// @file The statistics of one MCMC transition, named as Stan writes them: what every sampler
/// reports, the run driver keeps beside each draw, and the writers (draws.csv, posterior.nc) store.
#include <string>
#include <vector>

namespace uqnn {

/// Stan's per-draw sampler statistics (names as in Stan's CSV / ArviZ's sample_stats).
struct DrawStats {
  double lp = 0.0;            ///< lp__: log density at the draw
  double accept_prob = 0.0;   ///< accept_stat__: acceptance probability (mean over the tree for NUTS)
  double step_size = 0.0;     ///< stepsize__
  int tree_depth = 0;         ///< treedepth__ (NUTS; 0 otherwise)
  int n_leapfrog = 0;         ///< n_leapfrog__: gradient evaluations in this transition
  bool is_divergent = false;  ///< divergent__
  double energy = 0.0;        ///< energy__: Hamiltonian at the draw (NaN for methods without one)
};

/// The names, in order, of DrawStats' fields as Stan writes them.
inline std::vector<std::string> draw_stat_names() {
  return {"lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__", "divergent__", "energy__"};
}

}  // namespace uqnn
