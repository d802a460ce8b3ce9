#include "uqnn/mcmc/sgmcmc/step_size_schedule.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn::sgmcmc {

StepSizeSchedule StepSizeSchedule::constant(double step_size) {
  StepSizeSchedule s;
  s.kind = Kind::Constant;
  s.step_size = step_size;
  s.validate();
  return s;
}

StepSizeSchedule StepSizeSchedule::polynomial(double a, double b, double gamma) {
  StepSizeSchedule s;
  s.kind = Kind::Polynomial;
  s.a = a;
  s.b = b;
  s.gamma = gamma;
  s.validate();
  return s;
}

StepSizeSchedule StepSizeSchedule::step_decay(double initial_step_size, double factor, Index every) {
  StepSizeSchedule s;
  s.kind = Kind::StepDecay;
  s.step_size = initial_step_size;
  s.factor = factor;
  s.every = every;
  s.validate();
  return s;
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
