#include "uqnn/mcmc/slice.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace uqnn {

void SliceParams::validate(Index dim) const {
  if (!(initial_width > 0) || !std::isfinite(initial_width))
    throw std::invalid_argument(fmt::format("slice initial_width {} is invalid: it must be a finite number > 0", initial_width));
  if (max_steps_out < 1) throw std::invalid_argument(fmt::format("slice max_steps_out {} is invalid: it must be >= 1", max_steps_out));
  if (widths.size() != 0 && widths.size() != dim)
    throw std::invalid_argument(fmt::format("slice widths has {} entries for {} coordinates", widths.size(), dim));
  if (widths.size() != 0 && !(widths.array() > 0).all())
    throw std::invalid_argument("slice widths must all be > 0");
}

double SliceKernel::log_density(const Vec& x) const {
  const double lp = density_->log_density(x);
  return std::isfinite(lp) ? lp : -std::numeric_limits<double>::infinity();
}

SliceState SliceKernel::init(const Vec& position) const {
  SliceState s{position, density_->log_density(position)};
  if (!std::isfinite(s.log_density)) throw std::invalid_argument("slice: the log density at the initial point is not finite");
  return s;
}

SliceStep SliceKernel::step(Rng& rng, const SliceState& state, const SliceParams& params) const {
  SliceStep out{state, {}};
  Vec& x = out.state.position;
  const Index dim = x.size();
  for (Index i = 0; i < dim; ++i) {
    const double w = params.widths.size() ? params.widths[i] : params.initial_width;
    const double x0 = x[i];
    // The slice {x : log p(x) > log y}, log y = log p(x0) - Exp(1) (Neal 2003, eq. 2 on the log scale).
    const double log_y = out.state.log_density + std::log(rng.uniform());
    const auto inside = [&](double xi) {
      x[i] = xi;
      ++out.info.num_evaluations;
      return log_density(x) >= log_y;
    };
    // Stepping out (Fig. 3): at most m widths in all, split at random between the two ends.
    double left = x0 - w * rng.uniform(), right = left + w;
    long steps_left = static_cast<long>(std::floor(params.max_steps_out * rng.uniform()));
    long steps_right = params.max_steps_out - 1 - steps_left;
    while (steps_left-- > 0 && inside(left)) left -= w;
    while (steps_right-- > 0 && inside(right)) right += w;
    // Shrinkage (Fig. 5): the current point is inside, so the interval shrinks onto it. ">=": when
    // log u rounds to 0 next to a large |log p|, log y equals log p(x0) and x0 must still count.
    for (;;) {
      const double candidate = left + (right - left) * rng.uniform();
      x[i] = candidate;
      ++out.info.num_evaluations;
      const double lp = log_density(x);
      if (lp >= log_y) {
        out.state.log_density = lp;
        break;
      }
      if (candidate < x0) left = candidate;
      else right = candidate;
      if (!(right - left > 0)) {  // rounding left no room: stay (p(x0) > y, so x0 is in the slice)
        x[i] = x0;
        out.state.log_density = log_density(x);
        break;
      }
    }
  }
  return out;
}

SliceChainSampler::SliceChainSampler(std::shared_ptr<const LogDensity> density, SliceParams params)
    : density_(std::move(density)), kernel_(*density_), params_(std::move(params)) {
  params_.validate(density_->dim());
  if (params_.widths.size() == 0) params_.widths = Vec::Constant(density_->dim(), params_.initial_width);
  mean_move_ = Vec::Zero(density_->dim());
}

void SliceChainSampler::init(const Vec& position) { state_ = kernel_.init(position); }

DrawStats SliceChainSampler::transition(Rng& rng, bool warmup) {
  const Vec before = state_.position;
  const SliceStep s = kernel_.step(rng, state_, params_);
  state_ = s.state;
  if (warmup) {
    // PyMC's tuning: w_i = 2 mean |move_i|, from the second sweep on (the first may start far out).
    ++warmup_sweeps_;
    mean_move_ += ((state_.position - before).cwiseAbs() - mean_move_) / static_cast<double>(warmup_sweeps_);
    for (Index i = 0; i < mean_move_.size(); ++i)
      if (mean_move_[i] > 0 && std::isfinite(mean_move_[i])) params_.widths[i] = 2.0 * mean_move_[i];
  }
  DrawStats stats;
  stats.lp = state_.log_density;
  stats.accept_prob = 1.0;  // a slice update always moves to a point of the slice
  stats.step_size = params_.widths.mean();
  stats.n_leapfrog = s.info.num_evaluations;  // density evaluations (no gradients)
  stats.energy = std::numeric_limits<double>::quiet_NaN();
  return stats;
}

void SliceChainSampler::archive(StateArchive& a) {
  a.section("slice sampler");
  a.io(state_.position), a.io(state_.log_density), a.io(params_.widths), a.io(mean_move_), a.io(warmup_sweeps_);
}

std::string SliceChainSampler::describe() const {
  return fmt::format("slice: widths min {:.3g} mean {:.3g} max {:.3g}", params_.widths.minCoeff(), params_.widths.mean(),
                     params_.widths.maxCoeff());
}

}  // namespace uqnn
