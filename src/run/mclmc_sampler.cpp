#include "uqnn/run/mclmc_sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/mcmc/gradient_state.hpp"

namespace uqnn {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Phase 3 keeps at most this many coordinates and steps (MILE limits its FFT the same way): the
// ESS average over 1000 coordinates is as good as over all, and the memory stays at 16 MB a chain.
constexpr Index kEssMaxCoordinates = 1000;
constexpr long kEssMaxSteps = 2000;

void require_positive(double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value))
    throw std::invalid_argument(fmt::format("mclmc {} {} is invalid: it must be a finite number > 0", name, value));
}

}  // namespace

void MclmcTuningParams::validate() const {
  require_positive(energy_variance_start, "energy_variance_start");
  require_positive(energy_variance_end, "energy_variance_end");
  require_positive(trust_in_estimate, "trust_in_estimate");
  require_positive(L_factor, "L_factor");
  if (!(num_effective_samples > 1) || !std::isfinite(num_effective_samples))
    throw std::invalid_argument(fmt::format("mclmc num_effective_samples {} is invalid: it must be > 1", num_effective_samples));
  for (const double f : {variance_fraction, ess_fraction})
    if (!(f >= 0 && f < 1)) throw std::invalid_argument(fmt::format("mclmc phase fraction {} is invalid: it must be in [0, 1)", f));
  if (!(variance_fraction + ess_fraction < 1))
    throw std::invalid_argument("mclmc variance_fraction + ess_fraction must be < 1 (phase 1 tunes the step size)");
  if (initial_step_size) require_positive(*initial_step_size, "initial_step_size");
  if (initial_L) require_positive(*initial_L, "initial_L");
}

void MclmcConfig::validate(Index dim) const {
  tuning.validate();
  if (!adapt) kernel.validate(dim);
  else if (dim < 2) throw std::invalid_argument("mclmc needs at least 2 parameters (the momentum lives on the unit sphere)");
}

MclmcChainSampler::MclmcChainSampler(std::shared_ptr<const LogDensity> density, MclmcConfig config)
    : density_(std::move(density)), config_(std::move(config)), kernel_(*density_) {}

void MclmcChainSampler::init(const Vec& position) {
  const GradientState start = make_gradient_state(*density_, position);
  state_.position = start.position;
  state_.log_density = start.log_density;
  state_.grad = start.grad;
  momentum_drawn_ = false;
  const double sqrt_dim = std::sqrt(static_cast<double>(position.size()));
  if (config_.adapt) {
    params_ = MclmcParams{config_.tuning.initial_step_size.value_or(0.25 * sqrt_dim), config_.tuning.initial_L.value_or(sqrt_dim), Vec()};
  } else {
    params_ = config_.kernel;
  }
}

void MclmcChainSampler::begin_warmup(Index num_warmup) {
  num_warmup_ = static_cast<long>(num_warmup);
  warmup_done_ = 0;
  const auto share = [&](double fraction) { return static_cast<long>(std::floor(fraction * static_cast<double>(num_warmup_))); };
  const long n2 = share(config_.tuning.variance_fraction), n3 = share(config_.tuning.ess_fraction);
  phase1_end_ = num_warmup_ - n2 - n3;
  phase2_end_ = phase1_end_ + n2;
  retune_end_ = phase2_end_;
  // Phase 2 in doubling windows w, 2w, 4w, 8w (the last one runs to the phase's end), as Stan's
  // metric adaptation: a chain started far from a wide coordinate's scale explores it only once L
  // and the preconditioner have grown, so each window restarts from the previous one's estimates.
  const long first_window = n2 >= 30 ? n2 / 15 : n2;
  window_ends_.clear();
  for (long end = phase1_end_ + first_window, w = first_window; end < phase2_end_ && w > 0; w *= 2, end += w)
    if (phase2_end_ - end >= 2 * w) window_ends_.push_back(end);
  window_ends_.push_back(phase2_end_);
  next_window_ = 0;
  weight_sum_ = xi_average_ = 0.0;
  max_step_size_ = kInfinity;
  moment_weight_ = 0.0;
  moment_x_ = Vec::Zero(state_.position.size());
  moment_x2_ = Vec::Zero(state_.position.size());
  ess_draws_.clear();
}

void MclmcChainSampler::tune_step_size(const MclmcStep& step, double energy_variance_target) {
  const double dim = static_cast<double>(state_.position.size());
  const double eps = params_.step_size;
  double energy_change = step.info.energy_change;
  if (step.info.is_divergent) {
    max_step_size_ = 0.8 * eps;  // never return to a step size that diverged
    energy_change = 0.0;         // and give this step (almost) no weight below
  }
  const auto& t = config_.tuning;
  const double decay = (t.num_effective_samples - 1.0) / (t.num_effective_samples + 1.0);
  const double xi = energy_change * energy_change / (dim * energy_variance_target) + 1e-8;
  const double weight = std::exp(-0.5 * std::pow(std::log(xi) / (6.0 * t.trust_in_estimate), 2));
  // Var[E] grows as eps^6 (Robnik et al. 2023 sec. 3.3): xi / eps^6 estimates the constant.
  xi_average_ = decay * xi_average_ + weight * xi / std::pow(eps, 6);
  weight_sum_ = decay * weight_sum_ + weight;
  if (weight_sum_ > 0) {
    const double proposed = std::pow(xi_average_ / weight_sum_, -1.0 / 6.0);
    if (std::isfinite(proposed) && proposed > 0) params_.step_size = proposed;
  }
  params_.step_size = std::min(params_.step_size, max_step_size_);
}

void MclmcChainSampler::end_variance_window(bool last_window) {
  if (!(moment_weight_ > 0)) return;  // no successful step: keep L and the preconditioner
  const Vec mean = moment_x_ / moment_weight_;
  Vec variance = (moment_x2_ / moment_weight_ - mean.cwiseAbs2()).cwiseMax(0.0);
  moment_weight_ = 0.0;
  moment_x_.setZero();
  moment_x2_.setZero();
  params_.L = std::sqrt(variance.sum());
  if (config_.tuning.diagonal_preconditioning) {
    // A coordinate that never moved has no variance estimate: it gets the mean of the others.
    const Index positive = (variance.array() > 0).count();
    const double fallback = positive > 0 ? variance.sum() / static_cast<double>(positive) : 1.0;
    for (Index i = 0; i < variance.size(); ++i)
      if (!(variance[i] > 0) || !std::isfinite(variance[i])) variance[i] = fallback;
    params_.sqrt_diag_cov = variance.cwiseSqrt();
    params_.L = std::sqrt(static_cast<double>(variance.size()));
    // Re-tune eps in the new coordinates from scratch; after the last window for a third of phase
    // 2's length (BlackJAX).
    if (last_window) retune_end_ = std::min(num_warmup_, phase2_end_ + (phase2_end_ - phase1_end_) / 3);
    weight_sum_ = xi_average_ = 0.0;
    max_step_size_ = kInfinity;
  }
  if (!(params_.L > 0) || !std::isfinite(params_.L)) params_.L = std::sqrt(static_cast<double>(variance.size()));
}

void MclmcChainSampler::end_ess_phase() {
  if (ess_draws_.size() < 4) return;
  const Index n = static_cast<Index>(ess_draws_.size());
  double sum = 0.0;
  int counted = 0;
  Mat column(n, 1);
  for (Index j = 0; j < static_cast<Index>(ess_coordinates_.size()); ++j) {
    for (Index r = 0; r < n; ++r) column(r, 0) = ess_draws_[static_cast<std::size_t>(r)][j];
    const double ess = diagnostics::ess_basic(column);
    if (std::isfinite(ess) && ess > 0) {
      sum += static_cast<double>(n) / ess;
      ++counted;
    }
  }
  // L = L_factor eps <n / ESS> (Robnik et al. 2023 sec. 3.3; BlackJAX's Lfactor 0.4): the distance
  // travelled per effective sample. With every stride-th step kept, one kept step spans `stride`.
  if (counted > 0) params_.L = config_.tuning.L_factor * params_.step_size * static_cast<double>(ess_stride_) * sum / counted;
  ess_draws_.clear();
  ess_draws_.shrink_to_fit();
}

DrawStats MclmcChainSampler::transition(Rng& rng, bool warmup) {
  if (!momentum_drawn_) {
    state_.momentum.resize(state_.position.size());
    draw_random_direction(rng, state_.momentum);
    momentum_drawn_ = true;
  }
  const double used_step_size = params_.step_size;
  MclmcStep step = kernel_.step(rng, state_, params_);
  state_ = std::move(step.state);
  if (warmup && step.info.is_divergent) ++divergences_in_warmup_;
  if (warmup && config_.adapt && warmup_done_ < num_warmup_) {
    const long i = warmup_done_;
    const auto& t = config_.tuning;
    if (i < phase2_end_) {
      // MILE's linear schedule of the energy-variance target over phases 1 and 2.
      const double progress = std::min(1.0, static_cast<double>(i) / static_cast<double>(phase2_end_ + 1));
      tune_step_size(step, t.energy_variance_start + (t.energy_variance_end - t.energy_variance_start) * progress);
      if (i >= phase1_end_ && !step.info.is_divergent) {
        const double w = params_.step_size;
        moment_weight_ += w;
        moment_x_ += w * state_.position;
        moment_x2_ += w * state_.position.cwiseAbs2();
      }
      if (i + 1 == window_ends_[next_window_]) end_variance_window(++next_window_ == window_ends_.size());
    } else if (i < retune_end_) {
      tune_step_size(step, t.energy_variance_end);
    } else {
      if (i == retune_end_) {
        const Index dim = state_.position.size();
        const Index kept = std::min(dim, kEssMaxCoordinates);
        ess_coordinates_.resize(static_cast<std::size_t>(kept));
        for (Index j = 0; j < kept; ++j) ess_coordinates_[static_cast<std::size_t>(j)] = j * dim / kept;  // evenly spread
        ess_stride_ = std::max<long>(1, (num_warmup_ - retune_end_ + kEssMaxSteps - 1) / kEssMaxSteps);
        ess_steps_ = 0;
      }
      if (ess_steps_++ % ess_stride_ == 0) {
        Vec kept(static_cast<Index>(ess_coordinates_.size()));
        for (std::size_t j = 0; j < ess_coordinates_.size(); ++j) kept[static_cast<Index>(j)] = state_.position[ess_coordinates_[j]];
        ess_draws_.push_back(std::move(kept));
      }
      if (i + 1 == num_warmup_) end_ess_phase();
    }
    ++warmup_done_;
  }
  DrawStats stats;
  stats.lp = state_.log_density;
  stats.accept_prob = 1.0;  // no Metropolis step: every move is kept
  stats.step_size = used_step_size;
  stats.n_leapfrog = 2;     // gradient evaluations of one minimal-norm step
  stats.is_divergent = step.info.is_divergent;
  stats.energy = std::numeric_limits<double>::quiet_NaN();
  return stats;
}

void MclmcChainSampler::archive(StateArchive& a) {
  a.section("mclmc sampler");
  a.io(state_.position), a.io(state_.momentum), a.io(state_.log_density), a.io(state_.grad);
  a.io(params_.step_size), a.io(params_.L), a.io(params_.sqrt_diag_cov);
  a.io(momentum_drawn_), a.io(divergences_in_warmup_);
  a.io(num_warmup_), a.io(warmup_done_), a.io(phase1_end_), a.io(phase2_end_), a.io(retune_end_);
  a.io(weight_sum_), a.io(xi_average_), a.io(max_step_size_);
  a.io(window_ends_), a.io(next_window_), a.io(moment_weight_), a.io(moment_x_), a.io(moment_x2_);
  a.io(ess_coordinates_), a.io(ess_draws_), a.io(ess_stride_), a.io(ess_steps_);
}

std::string MclmcChainSampler::describe() const {
  std::string preconditioner = "identity";
  if (params_.sqrt_diag_cov.size() != 0)
    preconditioner = fmt::format("diagonal, sd {:.3g} to {:.3g}", params_.sqrt_diag_cov.minCoeff(), params_.sqrt_diag_cov.maxCoeff());
  return fmt::format("mclmc: step size {:.4g}, L {:.4g}, preconditioner {}, {} divergent warmup steps", params_.step_size, params_.L,
                     preconditioner, divergences_in_warmup_);
}

SamplerFactory make_mclmc_factory(std::shared_ptr<const LogDensity> density, MclmcConfig config) {
  config.validate(density->dim());
  return [density, config]() { return std::make_unique<MclmcChainSampler>(density, config); };
}

}  // namespace uqnn
