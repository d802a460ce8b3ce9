#include "uqnn/mcmc/mala.hpp"

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

void MalaParams::validate(Index dim) const {
  require(std::isfinite(step_size) && step_size > 0.0, "step_size", "finite and > 0");
  require(metric_dim(metric) == 0 || metric_dim(metric) == dim, "MALA inverse metric size", "0 (unit) or the dimension");
  if (const auto* diagonal = std::get_if<DiagonalMetric>(&metric)) {
    const Vec& d = diagonal->inverse_metric;
    require(d.size() == 0 || (d.array() > 0).all(), "MALA inverse metric", "> 0");
  }
}

namespace {

/// D grad: the drift's direction (the gradient when the metric is the unit one, of dimension 0).
Vec preconditioned(const Metric& metric, const Vec& grad) {
  if (metric_dim(metric) == 0) return grad;
  Vec out(grad.size());
  velocity(metric, grad, out);
  return out;
}

/// log q(to | from) given the drift direction D grad log p(from).
double log_proposal(const Vec& to, const Vec& from, const Vec& drift_from, double step_size, const Metric& metric) {
  const double eps2 = step_size * step_size;
  return -metric_norm2(metric, to - from - (0.5 * eps2) * drift_from) / (2.0 * eps2);
}

}  // namespace

double mala_log_proposal(const Vec& to, const Vec& from, const Vec& grad_from, double step_size, const Metric& metric) {
  return log_proposal(to, from, preconditioned(metric, grad_from), step_size, metric);
}

MalaStep Mala::step(Rng& rng, const GradientState& state, const MalaParams& params) const {
  const double eps = params.step_size;
  const Index dim = state.position.size();
  MalaStep out;
  out.info.step_size = eps;
  Vec xi(dim);
  for (Index i = 0; i < dim; ++i) xi[i] = rng.normal();
  // D grad at the current state: the forward proposal's drift and its density (computed once).
  const Vec drift = preconditioned(params.metric, state.grad);
  GradientState proposal;
  proposal.position = state.position + (0.5 * eps * eps) * drift + eps * inverse_metric_factor_times(params.metric, xi);
  proposal.grad.resize(dim);
  proposal.log_density = density_->log_density_and_grad(proposal.position, proposal.grad);
  const double u = rng.uniform();
  if (!std::isfinite(proposal.log_density) || !proposal.grad.allFinite()) {
    out.info.is_divergent = true;
    out.state = state;
    return out;
  }
  // Seed 001 MALA with the Metropolis-Hastings correction of the asymmetric Langevin proposal.
  const double log_alpha = proposal.log_density - state.log_density +
                           mala_log_proposal(state.position, proposal.position, proposal.grad, eps, params.metric) -
                           log_proposal(proposal.position, state.position, drift, eps, params.metric);
  out.info.accept_prob = std::isnan(log_alpha) ? 0.0 : std::min(1.0, std::exp(log_alpha));
  if (u < out.info.accept_prob) {
    out.info.is_accepted = true;
    out.state = std::move(proposal);
  } else {
    out.state = state;
  }
  return out;
}

}  // namespace uqnn
