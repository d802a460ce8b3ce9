#include "uqnn/mcmc/sgmcmc/step_size_schedule.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn::sgmcmc {

namespace {
StepSizeSchedule validated(StepSizeSchedule s) {
  s.validate();
  return s;
}
}  // namespace

StepSizeSchedule StepSizeSchedule::constant(double step_size) {
  return validated({.kind = Kind::Constant, .step_size = step_size});
}

StepSizeSchedule StepSizeSchedule::polynomial(double a, double b, double gamma) {
  return validated({.kind = Kind::Polynomial, .a = a, .b = b, .gamma = gamma});
}

StepSizeSchedule StepSizeSchedule::step_decay(double initial_step_size, double factor, Index every) {
  return validated({.kind = Kind::StepDecay, .step_size = initial_step_size, .factor = factor, .every = every});
}

double StepSizeSchedule::operator()(Index t) const {
  if (t < 0) throw std::invalid_argument("step size schedule: t must be >= 0");
  switch (kind) {
    case Kind::Constant:
      return step_size;
    case Kind::Polynomial:
      return a * std::pow(b + static_cast<double>(t), -gamma);
    case Kind::StepDecay:
      return step_size * std::pow(factor, static_cast<double>(t / every));
  }
  throw std::logic_error("step size schedule: unknown kind");
}

void StepSizeSchedule::validate() const {
  switch (kind) {
    case Kind::Constant:
      require(std::isfinite(step_size) && step_size > 0.0, "schedule.step_size", "finite and > 0");
      return;
    case Kind::Polynomial:
      require(std::isfinite(a) && a > 0.0, "schedule.a", "finite and > 0");
      require(std::isfinite(b) && b > 0.0, "schedule.b", "finite and > 0");
      require(std::isfinite(gamma) && gamma >= 0.0 && gamma <= 1.0, "schedule.gamma", "in [0, 1]");
      return;
    case Kind::StepDecay:
      require(std::isfinite(step_size) && step_size > 0.0, "schedule.step_size", "finite and > 0");
      require(std::isfinite(factor) && factor > 0.0 && factor <= 1.0, "schedule.factor", "in (0, 1]");
      require(every >= 1, "schedule.every", ">= 1");
      return;
  }
  throw std::invalid_argument("schedule.kind must be constant, polynomial or step_decay");
}

std::string StepSizeSchedule::describe() const {
  switch (kind) {
    case Kind::Constant:
      return fmt::format("constant(step_size={})", step_size);
    case Kind::Polynomial:
      return fmt::format("polynomial(a={}, b={}, gamma={})", a, b, gamma);
    case Kind::StepDecay:
      return fmt::format("step_decay(step_size={}, factor={}, every={})", step_size, factor, every);
  }
  return "unknown";
}

}  // namespace uqnn::sgmcmc
