#include "uqnn/adaptation/dual_averaging.hpp"

#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

void DualAveragingParams::validate() const {
  require(target_accept > 0.0 && target_accept < 1.0, "target_accept", "in (0, 1)");
  require(std::isfinite(gamma) && gamma > 0.0, "gamma", "finite and > 0");
  require(std::isfinite(t0) && t0 >= 0.0, "t0", "finite and >= 0");
  require(kappa > 0.5 && kappa <= 1.0, "kappa", "in (0.5, 1]");
}

DualAveraging::DualAveraging(DualAveragingParams params) : params_(params) { params_.validate(); }

void DualAveraging::restart(double initial_step_size) {
  require(std::isfinite(initial_step_size) && initial_step_size > 0.0, "initial_step_size", "finite and > 0");
  counter_ = 0;
  s_bar_ = 0.0;
  x_bar_ = 0.0;
  mu_ = std::log(10.0 * initial_step_size);
}

double DualAveraging::update(double accept_prob) {
  ++counter_;
  if (!(accept_prob >= 0.0)) accept_prob = 0.0;  // NaN counts as a rejection
  accept_prob = std::min(1.0, accept_prob);
  const double t = static_cast<double>(counter_);
  // Hoffman & Gelman (2014) eq. (6) with Stan's update order.
  const double eta = 1.0 / (t + params_.t0);
  s_bar_ = (1.0 - eta) * s_bar_ + eta * (params_.target_accept - accept_prob);
  const double x = mu_ - s_bar_ * std::sqrt(t) / params_.gamma;
  const double x_eta = std::pow(t, -params_.kappa);
  x_bar_ = (1.0 - x_eta) * x_bar_ + x_eta * x;
  return std::exp(x);
}

double DualAveraging::final_step_size() const { return std::exp(x_bar_); }

}  // namespace uqnn
