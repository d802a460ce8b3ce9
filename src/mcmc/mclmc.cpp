#include "uqnn/mcmc/mclmc.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

// Minimal-norm splitting B(b1 eps) A(eps/2) B(b2 eps) A(eps/2) B(b1 eps) (McLachlan 1995;
// Robnik et al. 2023 sec. 3.2): second order with a smaller error constant than leapfrog.
constexpr double kMinimalNormB1 = 0.1931833275037836;
constexpr double kMinimalNormB2 = 1.0 - 2.0 * kMinimalNormB1;

}  // namespace

void MclmcParams::validate(Index dim) const {
  if (!(step_size > 0) || !std::isfinite(step_size))
    throw std::invalid_argument(fmt::format("mclmc step_size {} is invalid: it must be a finite number > 0", step_size));
  if (!(L > 0) || !std::isfinite(L))
    throw std::invalid_argument(fmt::format("mclmc L {} is invalid: it must be a finite number > 0", L));
  if (sqrt_diag_cov.size() != 0 && sqrt_diag_cov.size() != dim)
    throw std::invalid_argument(fmt::format("mclmc sqrt_diag_cov has {} entries for {} parameters", sqrt_diag_cov.size(), dim));
  if (sqrt_diag_cov.size() != 0 && !((sqrt_diag_cov.array() > 0).all() && sqrt_diag_cov.allFinite()))
    throw std::invalid_argument("mclmc sqrt_diag_cov must be finite and > 0");
  if (dim < 2) throw std::invalid_argument("mclmc needs at least 2 parameters (the momentum lives on the unit sphere)");
}

double esh_momentum_update(Vec& momentum, const Vec& scaled_grad, double t) {
  const double grad_norm = scaled_grad.norm();
  if (grad_norm == 0.0) return 0.0;  // no force: u and the kinetic energy stay as they are
  const double dims_minus_one = static_cast<double>(momentum.size() - 1);
  const double c = momentum.dot(scaled_grad) / grad_norm;  // u.e with e = g / |g|
  const double delta = t * grad_norm / dims_minus_one;
  const double zeta = std::exp(-delta);
  // Robnik et al. (2023) App. A: the exact solution for a constant gradient over time t, in place
  // (this runs three times a step, on vectors of K).
  momentum = (2.0 * zeta) * momentum + ((1.0 - zeta) * (1.0 + zeta + c * (1.0 - zeta)) / grad_norm) * scaled_grad;
  momentum /= momentum.norm();
  return dims_minus_one * (delta - std::log(2.0) + std::log(1.0 + c + (1.0 - c) * zeta * zeta));
}

void draw_random_direction(Rng& rng, Vec& direction) {
  rng.fill_normal(direction);
  direction /= direction.norm();
}

MclmcState Mclmc::init(Rng& rng, const Vec& position) const {
  MclmcState s;
  s.position = position;
  s.grad.resize(position.size());
  s.log_density = density_->log_density_and_grad(position, s.grad);
  if (!std::isfinite(s.log_density) || !s.grad.allFinite())
    throw InputError("mclmc: the log density or its gradient is not finite at the chain's start");
  s.momentum.resize(position.size());
  draw_random_direction(rng, s.momentum);
  return s;
}

MclmcStep Mclmc::step(Rng& rng, const MclmcState& state, const MclmcParams& params) const {
  const double eps = params.step_size;
  const Vec& s = params.sqrt_diag_cov;
  const bool preconditioned = s.size() != 0;
  MclmcStep out;
  MclmcState next = state;
  // S g and S u (x' = x + t S u) without a temporary per use when S is the identity.
  Vec scratch(preconditioned ? state.position.size() : 0);
  const auto scaled_grad = [&]() -> const Vec& { return preconditioned ? (scratch = next.grad.cwiseProduct(s)) : next.grad; };
  double kinetic_change = esh_momentum_update(next.momentum, scaled_grad(), kMinimalNormB1 * eps);
  bool finite = true;
  for (const double b : {kMinimalNormB2, kMinimalNormB1}) {
    if (preconditioned) next.position += (0.5 * eps) * next.momentum.cwiseProduct(s);
    else next.position += (0.5 * eps) * next.momentum;
    next.log_density = density_->log_density_and_grad(next.position, next.grad);
    if (!std::isfinite(next.log_density) || !next.grad.allFinite() || !next.position.allFinite()) {
      finite = false;
      break;
    }
    kinetic_change += esh_momentum_update(next.momentum, scaled_grad(), b * eps);
  }
  // The refresh draws its noise whether or not the step diverged, so a chain's random stream does
  // not depend on where it diverged.
  const Index dim = state.position.size();
  Vec noise(dim);
  rng.fill_normal(noise);
  if (!finite) {
    // A diverging step is a counted rejection: the chain stays where it was (the tuner shrinks eps)
    // and takes a fresh direction, the momentum's marginal (uniform on the sphere): with the old one
    // and a fixed eps it would repeat the same diverging step for ever.
    out.state = state;
    out.state.momentum = noise / noise.norm();
    out.info.is_divergent = true;
    return out;
  }
  // Partial refresh (Robnik & Seljak 2024, eq. 6): u <- normalize(c1 u + c2 z / sqrt(d)).
  const double c1 = std::exp(-eps / params.L);
  const double c2 = std::sqrt(1.0 - c1 * c1);
  next.momentum = c1 * next.momentum + (c2 / std::sqrt(static_cast<double>(dim))) * noise;
  next.momentum /= next.momentum.norm();
  out.info.energy_change = kinetic_change - (next.log_density - state.log_density);
  out.state = std::move(next);
  return out;
}

}  // namespace uqnn
