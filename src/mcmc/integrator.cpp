#include "uqnn/mcmc/integrator.hpp"

#include <cmath>
#include <limits>

namespace uqnn {

bool evaluate(const LogDensity& density, PhasePoint& point) {
  if (point.grad.size() != point.position.size()) point.grad.resize(point.position.size());
  const double value = density.log_density_and_grad(point.position, point.grad);
  if (!std::isfinite(value) || !point.grad.allFinite()) {
    point.log_density = -std::numeric_limits<double>::infinity();
    return false;
  }
  point.log_density = value;
  return true;
}

double hamiltonian(const Metric& metric, const PhasePoint& point) {
  if (!std::isfinite(point.log_density)) return std::numeric_limits<double>::infinity();
  const double h = -point.log_density + kinetic_energy(metric, point.momentum);
  return std::isnan(h) ? std::numeric_limits<double>::infinity() : h;
}

double hamiltonian(const PhasePoint& point, const Vec& velocity) {
  if (!std::isfinite(point.log_density)) return std::numeric_limits<double>::infinity();
  const double h = -point.log_density + 0.5 * point.momentum.dot(velocity);
  return std::isnan(h) ? std::numeric_limits<double>::infinity() : h;
}

bool leapfrog(const LogDensity& density, const Metric& metric, double step_size, PhasePoint& point, Vec& scratch) {
  const double half = 0.5 * step_size;
  point.momentum.noalias() += half * point.grad;
  velocity(metric, point.momentum, scratch);
  point.position.noalias() += step_size * scratch;
  const bool ok = evaluate(density, point);
  if (!ok) return false;
  point.momentum.noalias() += half * point.grad;
  return point.momentum.allFinite();
}

}  // namespace uqnn
