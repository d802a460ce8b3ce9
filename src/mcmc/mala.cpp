#include "uqnn/mcmc/mala.hpp"

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

void MalaParams::validate(Index dim) const {
  require(std::isfinite(step_size) && step_size > 0.0, "step_size", "finite and > 0");
  require(!is_dense(metric), "MALA metric", "diagonal (a dense metric is not supported)");
  const Vec& d = std::get<DiagonalMetric>(metric).inverse_metric;
  require(d.size() == 0 || d.size() == dim, "MALA inverse metric size", "0 (unit) or the dimension");
  require(d.size() == 0 || (d.array() > 0).all(), "MALA inverse metric", "> 0");
}

double mala_log_proposal(const Vec& to, const Vec& from, const Vec& grad_from, double step_size,
                         const Vec& inverse_metric) {
  const double eps2 = step_size * step_size;
  if (inverse_metric.size() == 0) return -(to - from - 0.5 * eps2 * grad_from).squaredNorm() / (2.0 * eps2);
  const Vec mean_step = (0.5 * eps2) * inverse_metric.cwiseProduct(grad_from);
  return -((to - from - mean_step).array().square() / inverse_metric.array()).sum() / (2.0 * eps2);
}

MalaStep Mala::step(Rng& rng, const GradientState& state, const MalaParams& params) const {
  const double eps = params.step_size;
  const Vec& d = std::get<DiagonalMetric>(params.metric).inverse_metric;
  const Index dim = state.position.size();
  MalaStep out;
  out.info.step_size = eps;
  GradientState proposal;
  proposal.position.resize(dim);
  for (Index i = 0; i < dim; ++i) proposal.position[i] = rng.normal();
  if (d.size() == 0)
    proposal.position = state.position + (0.5 * eps * eps) * state.grad + eps * proposal.position;
  else
    proposal.position = state.position + (0.5 * eps * eps) * d.cwiseProduct(state.grad) +
                        eps * d.cwiseSqrt().cwiseProduct(proposal.position);
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
                           mala_log_proposal(state.position, proposal.position, proposal.grad, eps, d) -
                           mala_log_proposal(proposal.position, state.position, state.grad, eps, d);
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
