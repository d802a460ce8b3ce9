#pragma once
/// @file Phase-space points and the leapfrog (velocity Verlet) integrator.
///
/// References: seed 001 (HMC leapfrog); Neal (2011), "MCMC using Hamiltonian dynamics", eq. 5.18-5.20;
/// Stan's expl_leapfrog.
#include "uqnn/mcmc/metric.hpp"
#include "uqnn/core/log_density.hpp"
#include "uqnn/core/rng.hpp"

namespace uqnn {

/// A point (q, p) with the log density and its gradient at q cached.
struct PhasePoint {
  Vec position;
  Vec momentum;
  Vec grad;                  ///< gradient of log p at position
  double log_density = 0.0;  ///< log p(position); -inf/NaN mark an invalid point
};

/// Evaluates log p and its gradient at point.position. Returns false (and sets log_density to
/// -inf) when the value or any gradient entry is not finite.
bool evaluate(const LogDensity& density, PhasePoint& point);

/// H(q, p) = -log p(q) + K(p); +inf for an invalid point (non-finite log density or gradient).
double hamiltonian(const Metric& metric, const PhasePoint& point);
/// The same from the velocity v = M^-1 p already computed: K(p) = p . v / 2. NUTS needs v at every
/// leaf anyway (p sharp), so a dense or low-rank metric is applied once there instead of twice.
double hamiltonian(const PhasePoint& point, const Vec& velocity);

/// One leapfrog step of size `step_size` (negative integrates backwards) in place:
/// p += eps/2 grad; q += eps M^-1 p; grad = grad log p(q); p += eps/2 grad.
/// `scratch` is a work vector (resized when needed; no allocation when already dim long).
/// Returns false when the new point is not finite (the caller treats it as a divergence).
bool leapfrog(const LogDensity& density, const Metric& metric, double step_size, PhasePoint& point, Vec& scratch);

/// The step size of one transition: `step_size`, or with jitter > 0 step_size (1 + jitter u),
/// u ~ U(-1, 1) (Stan's stepsize_jitter); draws u from `rng` only when jitter > 0.
inline double jittered_step_size(Rng& rng, double step_size, double jitter) {
  if (jitter > 0.0) step_size *= 1.0 + jitter * (2.0 * rng.uniform() - 1.0);
  return step_size;
}

}  // namespace uqnn
