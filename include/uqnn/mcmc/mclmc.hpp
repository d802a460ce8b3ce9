#pragma once
/// @file Microcanonical Langevin Monte Carlo (MCLMC): isokinetic (ESH) dynamics with a unit-norm
/// momentum u, dx/dt = S u, du/dt = (I - u u^T) S grad log p(x) / (d - 1), S = diag(sqrt_diag_cov),
/// integrated by the minimal-norm (McLachlan) splitting, followed by a partial refresh of u that
/// decorrelates it over a length L. There is no Metropolis step: the bias is controlled by the step
/// size through the energy error per dimension, which the tuner (run/mclmc_sampler.hpp) holds at a
/// target.
///
/// Momentum update for a step of length t along a fixed (scaled) gradient g, with e = g/|g|,
/// delta = t |g| / (d - 1), zeta = exp(-delta), c = u.e (the exact solution of the ESH equation):
///   u' = normalize(e (1 - zeta)(1 + zeta + c (1 - zeta)) + 2 zeta u),
///   kinetic energy change = (d - 1) (delta - log 2 + log(1 + c + (1 - c) zeta^2)).
/// The energy error of a step is the kinetic change minus the change of log p; it is 0 for the exact
/// dynamics, so its variance measures the discretisation error.
///
/// References: Robnik, De Luca, Silverstein & Seljak (2023), "Microcanonical Hamiltonian Monte Carlo",
/// JMLR 24(311), sec. 2-3 and App. A (the momentum update above); Robnik & Seljak (2024),
/// "Microcanonical Langevin Monte Carlo" (partial refresh); McLachlan (1995), SIAM J. Sci. Comput.
/// 16(1) (the minimal-norm coefficient 0.1931833275037836); BlackJAX `mclmc` and
/// `isokinetic_mclachlan`.
#include "uqnn/core/log_density.hpp"
#include "uqnn/core/rng.hpp"

namespace uqnn {

struct MclmcParams {
  double step_size = 0.1;  ///< eps > 0
  double L = 1.0;          ///< momentum decoherence length > 0: u keeps exp(-eps/L) of itself per step
  Vec sqrt_diag_cov;       ///< diagonal preconditioner S (each > 0); empty = identity
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate(Index dim) const;
};

struct MclmcState {
  Vec position;
  Vec momentum;  ///< unit norm
  double log_density = 0.0;
  Vec grad;      ///< gradient of log p at position
};

struct MclmcInfo {
  double energy_change = 0.0;   ///< kinetic change - (log p' - log p); 0 when divergent
  bool is_divergent = false;    ///< a non-finite position, log density or gradient: the state is kept
};

struct MclmcStep {
  MclmcState state;
  MclmcInfo info;
};

class Mclmc {
 public:
  explicit Mclmc(const LogDensity& density) : density_(&density) {}
  /// The state at `position` with a uniformly random unit momentum; throws uqnn::InputError when the
  /// log density or its gradient is not finite there.
  MclmcState init(Rng& rng, const Vec& position) const;
  /// One McLachlan step of length eps (2 gradient evaluations), then the partial momentum refresh.
  MclmcStep step(Rng& rng, const MclmcState& state, const MclmcParams& params) const;
  const LogDensity& density() const { return *density_; }

 private:
  const LogDensity* density_;
};

/// The ESH momentum update of `momentum` (in place) by a step of length `t` along the scaled
/// gradient `scaled_grad`; returns the kinetic energy change (header formula). Exposed for tests.
double esh_momentum_update(Vec& momentum, const Vec& scaled_grad, double t);

/// Overwrites `direction` (its size kept) with a direction uniform on the unit sphere, the
/// momentum's marginal: a standard normal draw, normalised.
void draw_random_direction(Rng& rng, Vec& direction);

}  // namespace uqnn
