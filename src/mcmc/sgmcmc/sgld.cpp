#include "uqnn/mcmc/sgmcmc/sgld.hpp"

#include <fmt/format.h>

#include <cmath>

#include "chain_common.hpp"

namespace uqnn::sgmcmc {

void SgldParams::validate() const {
  schedule.validate();
  detail::validate_common(batch_size, lp_every, lp_first);
}

Vec sgld_step(Rng& rng, const Vec& position, const Vec& grad_log_density, double step_size) {
  const Vec noise = rng.normal_vector(position.size());
  // seed 002 eq. (1): w_{t+1} = w_t - eps grad U~(w_t) + sqrt(2 eps) eta_t, with grad U~ = -g.
  return position + step_size * grad_log_density + std::sqrt(2.0 * step_size) * noise;
}

SgldSampler::SgldSampler(std::shared_ptr<const LogDensity> density, SgldParams params)
    : params_(std::move(params)), estimator_(std::move(density), params_.batch_size) {
  params_.validate();
}

void SgldSampler::init(const Vec& position) {
  detail::check_start(estimator_.density(), position, "sgld");
  position_ = position;
  grad_.resize(position.size());
  iteration_ = 0;
  estimator_.reset();
  initialised_ = true;
}

DrawStats SgldSampler::transition(Rng& rng, bool /*warmup*/) {
  if (!initialised_) throw std::logic_error("sgld: transition() before init()");
  DrawStats stats;
  if (!detail::start_langevin_transition(estimator_, params_.schedule, iteration_, rng, position_, grad_, stats))
    return stats;
  position_ = sgld_step(rng, position_, grad_, stats.step_size);
  stats.accept_prob = 1.0;
  stats.lp = detail::report_lp(estimator_.density(), params_.lp_every, params_.lp_first, iteration_, stats.lp, position_);
  return stats;
}

void SgldSampler::archive(StateArchive& a) {
  a.section("sgld sampler");
  a.io(position_), a.io(grad_), a.io(iteration_), a.io(initialised_), a.io(estimator_);
}

std::string SgldSampler::describe() const {
  return fmt::format("sgld schedule={} batch_size={}", params_.schedule.describe(), estimator_.batch_size());
}

}  // namespace uqnn::sgmcmc
