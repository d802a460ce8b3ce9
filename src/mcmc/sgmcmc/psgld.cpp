#include "uqnn/mcmc/sgmcmc/psgld.hpp"

#include <fmt/format.h>

#include <cmath>

#include "chain_common.hpp"

namespace uqnn::sgmcmc {

void PsgldParams::validate() const {
  schedule.validate();
  require(std::isfinite(alpha) && alpha >= 0.0 && alpha < 1.0, "alpha", "in [0, 1)");
  require(std::isfinite(lambda) && lambda > 0.0, "lambda", "finite and > 0");
  detail::validate_common(batch_size, lp_every, lp_first);
}

PsgldState psgld_step(Rng& rng, const PsgldState& state, const Vec& grad_log_density, double step_size,
                      double data_size, const PsgldParams& params, const Vec* hessian_diagonal, Vec* preconditioner) {
  const Index d = state.position.size();
  if (!(data_size > 0.0)) throw std::invalid_argument("psgld_step: data_size must be > 0");
  if (params.gamma_correction && (hessian_diagonal == nullptr || hessian_diagonal->size() != d))
    throw std::invalid_argument("psgld_step: gamma_correction needs the Hessian diagonal (dim entries)");
  PsgldState next;
  // Li et al. (2016) Alg. 1: V <- alpha V + (1 - alpha) gbar (.) gbar; G <- 1 / (lambda + sqrt(V)).
  const Vec mean_grad = grad_log_density / data_size;
  const Vec previous = state.square_average.size() == d ? state.square_average : Vec::Zero(d);
  next.square_average = params.alpha * previous + (1.0 - params.alpha) * mean_grad.cwiseProduct(mean_grad);
  const Vec root = next.square_average.cwiseSqrt();
  const Vec G = (params.lambda + root.array()).inverse().matrix();
  Vec drift = G.cwiseProduct(grad_log_density);
  if (params.gamma_correction) {
    // Gamma_i = dG_ii / dtheta_i through V_i's latest term: -(1 - alpha) G_ii^2 gbar_i (H_ii / N) / sqrt(V_i).
    for (Index i = 0; i < d; ++i)
      if (root[i] > 0.0)
        drift[i] -= (1.0 - params.alpha) * G[i] * G[i] * mean_grad[i] * ((*hessian_diagonal)[i] / data_size) / root[i];
  }
  const Vec noise = rng.normal_vector(d);
  next.position = state.position + step_size * drift + (2.0 * step_size * G).cwiseSqrt().cwiseProduct(noise);
  if (preconditioner) *preconditioner = G;
  return next;
}

PsgldSampler::PsgldSampler(std::shared_ptr<const LogDensity> density, PsgldParams params)
    : params_(std::move(params)), estimator_(std::move(density), params_.batch_size) {
  params_.validate();
}

void PsgldSampler::init(const Vec& position) {
  detail::check_start(estimator_.density(), position, "psgld");
  if (params_.gamma_correction) {
    // Fails early (std::logic_error) when the density has no Hessian-vector product.
    (void)estimator_.density().hessian_vector_product(position, Vec::Zero(position.size()));
  }
  state_.position = position;
  state_.square_average = Vec::Zero(position.size());
  grad_.resize(position.size());
  preconditioner_.resize(0);
  iteration_ = 0;
  estimator_.reset();
  initialised_ = true;
}

DrawStats PsgldSampler::transition(Rng& rng, bool /*warmup*/) {
  if (!initialised_) throw std::logic_error("psgld: transition() before init()");
  DrawStats stats;
  if (!detail::start_langevin_transition(estimator_, params_.schedule, iteration_, rng, state_.position, grad_, stats))
    return stats;
  Vec hessian_diagonal;
  if (params_.gamma_correction) {
    const Index d = state_.position.size();
    hessian_diagonal.resize(d);
    Vec unit = Vec::Zero(d);
    for (Index i = 0; i < d; ++i) {
      unit[i] = 1.0;
      hessian_diagonal[i] = estimator_.density().hessian_vector_product(state_.position, unit)[i];
      unit[i] = 0.0;
    }
  }
  const double data_size = estimator_.num_data() > 0 ? static_cast<double>(estimator_.num_data()) : 1.0;
  state_ = psgld_step(rng, state_, grad_, stats.step_size, data_size, params_,
                      params_.gamma_correction ? &hessian_diagonal : nullptr, &preconditioner_);
  stats.accept_prob = 1.0;
  stats.lp = detail::report_lp(estimator_.density(), params_.lp_every, params_.lp_first, iteration_, stats.lp, state_.position);
  return stats;
}

void PsgldSampler::archive(StateArchive& a) {
  a.section("psgld sampler");
  a.io(state_.position), a.io(state_.square_average), a.io(grad_), a.io(preconditioner_), a.io(iteration_);
  a.io(initialised_), a.io(estimator_);
}

std::string PsgldSampler::describe() const {
  return fmt::format("psgld schedule={} alpha={} lambda={} gamma_correction={} batch_size={}",
                     params_.schedule.describe(), params_.alpha, params_.lambda, params_.gamma_correction,
                     estimator_.batch_size());
}

}  // namespace uqnn::sgmcmc
