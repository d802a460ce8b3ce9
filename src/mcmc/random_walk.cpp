#include "uqnn/mcmc/random_walk.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "uqnn/core/error.hpp"
#include "uqnn/core/state_archive.hpp"

namespace uqnn {

void RandomWalkParams::validate(Index dim) const {
  require(step_size >= 0 && std::isfinite(step_size), "random-walk step_size", ">= 0 (0: 2.38 / sqrt(K))");
  require(scales.size() == 0 || scales.size() == dim, "random-walk scales", "empty or one per coordinate");
  require(scales.size() == 0 || (scales.array() > 0).all(), "random-walk scales", "> 0");
  require(target_accept > 0 && target_accept < 1, "random-walk target_accept", "in (0, 1)");
}

RandomWalkState RandomWalkKernel::init(const Vec& position) const { return {position, density_->log_density(position)}; }

RandomWalkStep RandomWalkKernel::step(Rng& rng, const RandomWalkState& state, double step_size, const Vec& scales) const {
  Vec proposal(state.position.size());
  for (Index i = 0; i < proposal.size(); ++i) proposal[i] = state.position[i] + step_size * scales[i] * rng.normal();
  const double log_density = density_->log_density(proposal);
  RandomWalkStep out{state, {}};
  if (!std::isfinite(log_density)) {  // a counted rejection, never an exception
    out.info.is_divergent = true;
    return out;
  }
  out.info.accept_prob = std::min(1.0, std::exp(log_density - state.log_density));
  if (rng.uniform() < out.info.accept_prob) {
    out.state = {std::move(proposal), log_density};
    out.info.accepted = true;
  }
  return out;
}

RandomWalkChainSampler::RandomWalkChainSampler(std::shared_ptr<const LogDensity> density, RandomWalkParams params)
    : density_(std::move(density)), kernel_(*density_), params_(std::move(params)) {
  const Index K = density_->dim();
  params_.validate(K);
  if (params_.step_size == 0) params_.step_size = 2.38 / std::sqrt(static_cast<double>(K));
  if (params_.scales.size() == 0) params_.scales = Vec::Ones(K);
}

void RandomWalkChainSampler::init(const Vec& position) { state_ = kernel_.init(position); }

DrawStats RandomWalkChainSampler::transition(Rng& rng, bool warmup) {
  const RandomWalkStep s = kernel_.step(rng, state_, params_.step_size, params_.scales);
  state_ = s.state;
  if (warmup) tune(s.info.accept_prob);
  DrawStats stats;
  stats.lp = state_.log_density;
  stats.accept_prob = s.info.accept_prob;
  stats.is_divergent = s.info.is_divergent;
  stats.step_size = params_.step_size;
  stats.n_leapfrog = 1;  // one density evaluation
  stats.energy = std::numeric_limits<double>::quiet_NaN();
  return stats;
}

void RandomWalkChainSampler::tune(double accept_prob) {
  ++warmup_iterations_;
  ++adaptation_iterations_;
  // Robbins-Monro on log s (Andrieu & Thoms 2008, sec. 4): gains t^-0.6 sum to infinity and their
  // squares do not, so s settles where the acceptance rate is the target.
  const double gain = 1.0 / std::pow(static_cast<double>(adaptation_iterations_), 0.6);
  params_.step_size *= std::exp(gain * (accept_prob - params_.target_accept));
  // The scales: each coordinate's sd over the second quarter of warmup (the first is the start's
  // transient), set at its midpoint; the step is then tuned afresh for them.
  const long midpoint = num_warmup_ / 2;
  if (warmup_iterations_ > midpoint / 2 && warmup_iterations_ <= midpoint) {
    if (num_summed_ == 0) shift_ = state_.position, sum_ = sum_squares_ = Vec::Zero(state_.position.size());
    const Vec d = state_.position - shift_;
    sum_ += d, sum_squares_ += d.cwiseProduct(d), ++num_summed_;
  }
  if (warmup_iterations_ == midpoint && num_summed_ >= 2) {
    const double n = static_cast<double>(num_summed_);
    const Vec variance = (sum_squares_ - sum_.cwiseProduct(sum_) / n) / (n - 1);
    for (Index i = 0; i < variance.size(); ++i)
      if (variance[i] > 0 && std::isfinite(variance[i])) params_.scales[i] = std::sqrt(variance[i]);
    params_.step_size = 2.38 / std::sqrt(static_cast<double>(variance.size()));
    adaptation_iterations_ = 0;
  }
}

void RandomWalkChainSampler::archive(StateArchive& a) {
  a.section("random-walk sampler");
  a.io(state_.position), a.io(state_.log_density), a.io(params_.step_size), a.io(params_.scales), a.io(warmup_iterations_);
  a.io(adaptation_iterations_);
  a.io(num_summed_);
  if (num_summed_ > 0) a.io(shift_), a.io(sum_), a.io(sum_squares_);
}

std::string RandomWalkChainSampler::describe() const {
  return fmt::format("rwm: step {:.3g}, scales min {:.3g} max {:.3g}", params_.step_size, params_.scales.minCoeff(),
                     params_.scales.maxCoeff());
}

}  // namespace uqnn
