#pragma once
// Private helpers shared by the SG-MCMC chain samplers.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/core/log_density.hpp"
#include "uqnn/core/draw_stats.hpp"
#include "uqnn/mcmc/sgmcmc/gradient_estimator.hpp"
#include "uqnn/mcmc/sgmcmc/step_size_schedule.hpp"

namespace uqnn::sgmcmc::detail {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Checks the starting point: right size and finite log density (ChainSampler::init contract).
inline void check_start(const LogDensity& density, const Vec& position, const char* sampler) {
  if (position.size() != density.dim())
    throw std::invalid_argument(fmt::format("{}: initial position has {} entries, the density needs {}", sampler,
                                            position.size(), density.dim()));
  Vec grad(density.dim());
  const double lp = density.log_density_and_grad(position, grad);
  if (!std::isfinite(lp) || !grad.allFinite())
    throw std::invalid_argument(fmt::format("{}: log density or its gradient is not finite at the initial position", sampler));
}

inline void validate_common(Index batch_size, Index lp_every, Index lp_first) {
  require(batch_size >= 0, "batch_size", ">= 0 (0 = full batch)");
  require(lp_every >= 0, "lp_every", ">= 0 (0 = minibatch estimate at every draw)");
  require(lp_first >= 0, "lp_first", ">= 0 (0 = lp_every)");
}

/// lp__ of a transition (see the lp_every documentation in sgld.hpp).
inline double report_lp(const LogDensity& density, Index lp_every, Index lp_first, Index transition_number, double estimate,
                        const Vec& new_position) {
  if (lp_every == 0) return estimate;
  const Index first = lp_first > 0 ? lp_first : lp_every;
  if (transition_number < first || (transition_number - first) % lp_every != 0) return kNaN;
  return density.log_density(new_position);
}

/// The first half of a one-gradient transition (SGLD, pSGLD): the step size of this iteration, one
/// minibatch estimate of log p and its gradient at `position` (into grad), the iteration counted.
/// A non-finite estimate is a divergent transition that stays put: stats says so and false is returned.
inline bool start_langevin_transition(GradientEstimator& estimator, const StepSizeSchedule& schedule, Index& iteration,
                                      Rng& rng, const Vec& position, Vec& grad, DrawStats& stats) {
  stats.step_size = schedule(iteration);
  stats.n_leapfrog = 1;
  stats.energy = kNaN;
  const double estimate = estimator.estimate(rng, position, grad);
  ++iteration;
  stats.lp = estimate;
  if (std::isfinite(estimate) && grad.allFinite()) return true;
  stats.is_divergent = true;
  stats.accept_prob = 0.0;
  return false;
}

}  // namespace uqnn::sgmcmc::detail
