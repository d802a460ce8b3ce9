#include "uqnn/adaptation/step_size.hpp"

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/hmc.hpp"
#include "uqnn/mcmc/integrator.hpp"

namespace uqnn {

double initial_step_size(const LogDensity& density, const Metric& metric, const Vec& position,
                         double initial_step_size, Rng& rng) {
  require(std::isfinite(initial_step_size) && initial_step_size > 0.0, "initial_step_size", "finite and > 0");
  const Metric m = resolve_metric(metric, position.size());
  PhasePoint z0{position, Vec(), Vec(position.size()), 0.0};
  if (!evaluate(density, z0)) throw std::runtime_error("initial_step_size: log density not finite at the position");
  Vec scratch(position.size());
  const double log08 = std::log(0.8);
  double eps = initial_step_size;
  // One leapfrog step from fresh momenta; returns H0 - H (-inf for a non-finite step).
  auto delta_h = [&](double step) {
    PhasePoint z = z0;
    sample_momentum(m, rng, z.momentum);
    const double h0 = hamiltonian(m, z);
    leapfrog(density, m, step, z, scratch);
    const double h = hamiltonian(m, z);
    return std::isnan(h) ? -INFINITY : h0 - h;
  };
  const int direction = delta_h(eps) > log08 ? 1 : -1;
  while (true) {
    const double dh = delta_h(eps);
    if (direction == 1 && !(dh > log08)) break;
    if (direction == -1 && !(dh < log08)) break;
    eps = direction == 1 ? 2.0 * eps : 0.5 * eps;
    if (eps > 1e7)
      throw std::runtime_error("initial_step_size: step size above 1e7; the posterior may be improper");
    if (eps == 0.0) throw std::runtime_error("initial_step_size: step size underflowed to 0; check the gradient");
  }
  return eps;
}

void FindStepSizeOptions::validate(Index dim) const {
  require(num_iterations >= 10, "num_iterations", ">= 10");
  require(num_leapfrog_steps >= 1, "num_leapfrog_steps", ">= 1");
  require(std::isfinite(initial_step_size) && initial_step_size > 0.0, "initial_step_size", "finite and > 0");
  const Index m = metric_dim(metric);
  require(m == 0 || m == dim, "metric", "of the log density's dimension (or empty for the unit metric)");
  DualAveragingParams{0.8, gamma, t0, kappa}.validate();
}

FindStepSizeResult find_step_size(const LogDensity& density, const Vec& position, double target_accept,
                                  const FindStepSizeOptions& options) {
  options.validate(density.dim());
  DualAveraging averaging({target_accept, options.gamma, options.t0, options.kappa});
  Rng rng(options.seed, 0);
  Hmc kernel(density);
  GradientState state = kernel.init(position);
  HmcParams params;
  params.metric = resolve_metric(options.metric, density.dim());
  params.num_leapfrog_steps = options.num_leapfrog_steps;
  FindStepSizeResult result;
  result.initial_step_size = initial_step_size(density, params.metric, position, options.initial_step_size, rng);
  params.step_size = result.initial_step_size;
  averaging.restart(params.step_size);
  double accept_sum = 0.0;
  int accept_count = 0;
  for (int i = 0; i < options.num_iterations; ++i) {
    HmcStep step = kernel.step(rng, state, params);
    state = std::move(step.state);
    params.step_size = averaging.update(step.info.accept_prob);
    if (2 * i >= options.num_iterations) {
      accept_sum += step.info.accept_prob;
      ++accept_count;
    }
  }
  result.step_size = averaging.final_step_size();
  result.mean_accept_stat = accept_sum / std::max(accept_count, 1);
  result.position = state.position;
  return result;
}

}  // namespace uqnn
