#pragma once
/// @file Step-size tools: Stan's initial heuristic (double or halve eps until one leapfrog step's
/// acceptance crosses 0.8) and `find_step_size`, dual averaging with a fixed path length run alone.
///
/// References: Hoffman & Gelman (2014), Algorithm 4; Stan `base_hmc::init_stepsize`.
#include "uqnn/adaptation/dual_averaging.hpp"
#include "uqnn/mcmc/metric.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn {

/// Stan's init_stepsize: from `initial_step_size`, with fresh momenta each try, doubles (or halves)
/// eps while the acceptance exp(H0 - H) of one leapfrog step stays above (below) 0.8.
/// Throws std::runtime_error when eps exceeds 1e7 (improper posterior) or underflows to 0.
double initial_step_size(const LogDensity& density, const Metric& metric, const Vec& position,
                         double initial_step_size, Rng& rng);

struct FindStepSizeOptions {
  int num_iterations = 500;       ///< dual-averaging iterations (HMC transitions); >= 10
  int num_leapfrog_steps = 10;    ///< fixed path length in steps; >= 1
  double initial_step_size = 0.1; ///< start of Stan's heuristic; > 0
  Metric metric = DiagonalMetric{}; ///< empty = unit
  double gamma = 0.05, t0 = 10.0, kappa = 0.75;  ///< dual-averaging constants (DualAveragingParams)
  std::uint64_t seed = 0;         ///< the Rng stream (seed, 0)
  void validate(Index dim) const;
};

struct FindStepSizeResult {
  double step_size = 0.0;       ///< exp(x_bar)
  double initial_step_size = 0.0; ///< after the heuristic
  double mean_accept_stat = 0.0;  ///< over the second half of the iterations
  Vec position;                  ///< where the chain ended
};

/// "Find the step size for acceptance `target_accept`": runs HMC with a fixed number of leapfrog
/// steps from `position` for options.num_iterations transitions, adapting log eps by dual
/// averaging toward target_accept, and returns the averaged step size.
FindStepSizeResult find_step_size(const LogDensity& density, const Vec& position, double target_accept = 0.8,
                                  const FindStepSizeOptions& options = {});

}  // namespace uqnn
