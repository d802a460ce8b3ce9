#include "uqnn/mcmc/sgmcmc/sghmc.hpp"

#include <fmt/format.h>

#include <cmath>

#include "chain_common.hpp"

namespace uqnn::sgmcmc {

void SghmcParams::validate() const {
  schedule.validate();
  require(std::isfinite(friction) && friction > 0.0, "friction", "finite and > 0");
  require(std::isfinite(noise_estimate) && noise_estimate >= 0.0 && noise_estimate <= friction, "noise_estimate",
          "in [0, friction]");
  require(mass.size() == 0 || (mass.allFinite() && (mass.array() > 0.0).all()), "mass",
          "empty (identity) or finite entries > 0");
  const double min_mass = mass.size() == 0 ? 1.0 : mass.minCoeff();
  require(schedule.max_step_size() * friction / min_mass < 1.0, "friction",
          fmt::format("< min(mass) / max step size = {} (momentum decay factor 1 - eps C / M must stay positive)",
                      min_mass / schedule.max_step_size()));
  require(num_steps >= 1, "num_steps", ">= 1");
  detail::validate_common(batch_size, lp_every, lp_first);
}

Vec sghmc_sample_momentum(Rng& rng, Index dim, const SghmcParams& params) {
  Vec z = rng.normal_vector(dim);
  if (params.mass.size() != 0) z.array() *= params.mass.array().sqrt();
  return z;
}

Vec sghmc_move_position(const SghmcState& state, double step_size, const SghmcParams& params) {
  // Chen et al. 2014, eq. 15: w_{t+1} = w_t + eps M^-1 z_t
  if (params.mass.size() == 0) return state.position + step_size * state.momentum;
  return state.position + step_size * (state.momentum.array() / params.mass.array()).matrix();
}

SghmcState sghmc_step(Rng& rng, const SghmcState& state, Vec next_position, const Vec& grad_log_density,
                      double step_size, const SghmcParams& params) {
  const Index d = state.position.size();
  // velocity = M^-1 z_t
  Vec velocity = state.momentum;
  if (params.mass.size() != 0) velocity.array() /= params.mass.array();
  SghmcState next;
  next.position = std::move(next_position);
  // Chen et al. 2014, eq. 15: z_{t+1} = z_t - eps grad U~(w_{t+1}) - eps C M^-1 z_t
  // + N(0, 2 (C - B_hat) eps), the gradient at the updated position (symplectic Euler).
  next.momentum = state.momentum + step_size * grad_log_density - step_size * params.friction * velocity;
  const double noise_variance = 2.0 * (params.friction - params.noise_estimate) * step_size;
  if (noise_variance > 0.0) next.momentum += std::sqrt(noise_variance) * rng.normal_vector(d);
  return next;
}

SghmcSampler::SghmcSampler(std::shared_ptr<const LogDensity> density, SghmcParams params)
    : params_(std::move(params)), estimator_(std::move(density), params_.batch_size) {
  params_.validate();
  if (params_.mass.size() != 0 && params_.mass.size() != estimator_.dim())
    throw std::invalid_argument(fmt::format("mass must be empty or have {} entries (the dimension)", estimator_.dim()));
}

void SghmcSampler::init(const Vec& position) {
  detail::check_start(estimator_.density(), position, "sghmc");
  state_.position = position;
  state_.momentum = Vec::Zero(position.size());
  grad_.resize(position.size());
  iteration_ = 0;
  transitions_ = 0;
  estimator_.reset();
  initialised_ = true;
  momentum_drawn_ = false;
}

DrawStats SghmcSampler::transition(Rng& rng, bool /*warmup*/) {
  if (!initialised_) throw std::logic_error("sghmc: transition() before init()");
  if (!momentum_drawn_ || params_.resample_momentum) {
    state_.momentum = sghmc_sample_momentum(rng, state_.position.size(), params_);
    momentum_drawn_ = true;
  }
  DrawStats stats;
  stats.step_size = params_.schedule(iteration_);
  stats.n_leapfrog = static_cast<int>(params_.num_steps);
  stats.energy = detail::kNaN;
  stats.accept_prob = 1.0;
  double estimate = detail::kNaN;
  for (Index step = 0; step < params_.num_steps; ++step) {
    const double eps = params_.schedule(iteration_);
    Vec next_position = sghmc_move_position(state_, eps, params_);
    estimate = estimator_.estimate(rng, next_position, grad_);
    ++iteration_;
    if (!std::isfinite(estimate) || !grad_.allFinite()) {  // stay at the last finite state
      stats.is_divergent = true;
      stats.accept_prob = 0.0;
      break;
    }
    state_ = sghmc_step(rng, state_, std::move(next_position), grad_, eps, params_);
  }
  ++transitions_;
  stats.lp = stats.is_divergent ? estimate
                             : detail::report_lp(estimator_.density(), params_.lp_every, params_.lp_first, transitions_, estimate,
                                                 state_.position);
  return stats;
}

void SghmcSampler::archive(StateArchive& a) {
  a.section("sghmc sampler");
  a.io(state_.position), a.io(state_.momentum), a.io(grad_), a.io(iteration_), a.io(transitions_);
  a.io(initialised_), a.io(momentum_drawn_), a.io(estimator_);
}

std::string SghmcSampler::describe() const {
  return fmt::format("sghmc schedule={} friction={} noise_estimate={} mass={} resample_momentum={} num_steps={} "
                     "batch_size={}",
                     params_.schedule.describe(), params_.friction, params_.noise_estimate,
                     params_.mass.size() == 0 ? "identity" : "diagonal", params_.resample_momentum,
                     params_.num_steps, estimator_.batch_size());
}

}  // namespace uqnn::sgmcmc
