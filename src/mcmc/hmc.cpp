#include "uqnn/mcmc/hmc.hpp"

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/integrator.hpp"

namespace uqnn {

void HmcParams::validate(Index dim) const {
  require(std::isfinite(step_size) && step_size > 0.0, "step_size", "finite and > 0");
  require(num_leapfrog_steps >= 1, "num_leapfrog_steps", ">= 1");
  require(step_size_jitter >= 0.0 && step_size_jitter < 1.0, "step_size_jitter", "in [0, 1)");
  require(divergence_threshold > 0.0, "divergence_threshold", "> 0");
  const Index m = metric_dim(metric);
  require(m == 0 || m == dim, "metric", "of the log density's dimension (or empty for the unit metric)");
}

Metric resolve_metric(const Metric& metric, Index dim) {
  if (metric_dim(metric) == 0) return make_unit_metric(dim);
  return metric;
}

HmcStep Hmc::step(Rng& rng, const GradientState& state, const HmcParams& params) const {
  const Index dim = state.position.size();
  Metric unit_metric;
  const Metric& metric = metric_or_unit(params.metric, dim, unit_metric);
  const double eps = jittered_step_size(rng, params.step_size, params.step_size_jitter);
  int num_steps = params.num_leapfrog_steps;
  if (params.jitter_path_length) num_steps = 1 + static_cast<int>(rng.uniform_index(static_cast<std::uint64_t>(num_steps)));

  PhasePoint z{state.position, Vec(), state.grad, state.log_density};
  sample_momentum(metric, rng, z.momentum);
  const double h0 = hamiltonian(metric, z);

  Vec scratch(dim);
  bool finite = true;
  int taken = 0;
  for (int l = 0; l < num_steps && finite; ++l) {
    finite = leapfrog(*density_, metric, eps, z, scratch);
    ++taken;
  }
  HmcStep out;
  out.info.step_size = eps;
  out.info.num_leapfrog_steps = taken;
  const double h = finite ? hamiltonian(metric, z) : INFINITY;
  out.info.is_divergent = !finite || !(h - h0 <= params.divergence_threshold);
  out.info.accept_prob = finite ? std::min(1.0, std::exp(h0 - h)) : 0.0;
  if (std::isnan(out.info.accept_prob)) out.info.accept_prob = 0.0;
  if (finite && rng.uniform() < out.info.accept_prob) {
    out.info.is_accepted = true;
    out.info.energy = h;
    out.state = GradientState{std::move(z.position), z.log_density, std::move(z.grad)};
  } else {
    out.info.energy = h0;
    out.state = state;
  }
  return out;
}

}  // namespace uqnn
