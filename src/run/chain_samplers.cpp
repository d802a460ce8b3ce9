#include "uqnn/run/chain_samplers.hpp"

#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "uqnn/adaptation/step_size.hpp"
#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

DrawStats stats_of(const GradientState& s, const HmcInfo& info) {
  return DrawStats{s.log_density, info.accept_prob, info.step_size, 0, info.num_leapfrog_steps, info.is_divergent,
                   info.energy};
}
DrawStats stats_of(const GradientState& s, const NutsInfo& info) {
  return DrawStats{s.log_density, info.accept_prob, info.step_size, info.tree_depth, info.num_leapfrog_steps,
                   info.is_divergent, info.energy};
}
DrawStats stats_of(const GradientState& s, const MalaInfo& info) {
  return DrawStats{s.log_density, info.accept_prob, info.step_size, 0, 1, info.is_divergent, kNaN};
}
double accept_of(const HmcInfo& info) { return info.accept_prob; }
double accept_of(const MalaInfo& info) { return info.accept_prob; }
double accept_of(const NutsInfo& info) { return info.accept_prob; }

/// The shared warmup/transition logic of NutsSampler, HmcSampler and MalaSampler (Stan's
/// adapt_*_nuts::transition).
template <typename Kernel, typename Params>
DrawStats hamiltonian_transition(const Kernel& kernel, const LogDensity& density, Rng& rng, bool warmup,
                                 GradientState& state, Params& params, StanWarmup& adaptation, long num_warmup,
                                 long& warmup_done, bool& need_step_size_init, bool& finished_warmup) {
  const bool adapting = warmup && !finished_warmup;
  if (!warmup && !finished_warmup) {  // warmup ended early (e.g. fewer warmup calls than announced)
    params.step_size = adaptation.final_step_size(params.step_size);
    finished_warmup = true;
  }
  if (adapting && need_step_size_init) {
    params.step_size = initial_step_size(density, params.metric, state.position, params.step_size, rng);
    adaptation.restart_step_size(params.step_size);
    need_step_size_init = false;
  }
  auto step = kernel.step(rng, state, params);
  state = std::move(step.state);
  DrawStats stats = stats_of(state, step.info);
  if (adapting) {
    if (adaptation.learn(warmup_done, accept_of(step.info), state.position, state.grad, params.step_size, params.metric) &&
        adaptation.params().adapt_step_size) {
      params.step_size = initial_step_size(density, params.metric, state.position, params.step_size, rng);
      adaptation.restart_step_size(params.step_size);
    }
    if (++warmup_done >= num_warmup) {
      params.step_size = adaptation.final_step_size(params.step_size);
      finished_warmup = true;
    }
  }
  return stats;
}

std::string describe_metric(const Metric& metric) {
  // The diagonal only: forming the dense matrix of a diagonal metric costs dim^2 memory (20 GB for
  // the 50,000 sampled parameters of a VI-HMC DeepONet run; found by seed 000's Burgers example).
  const Vec d = inverse_metric_diagonal(metric);
  if (d.size() == 0) return fmt::format("metric={} (unit)", metric_name(metric));
  if (const auto* low_rank = std::get_if<LowRankMetric>(&metric))
    return fmt::format("metric={} (rank {}), inverse_metric diag min {:.4g} max {:.4g}", metric_name(metric),
                       low_rank->values.size(), d.minCoeff(), d.maxCoeff());
  return fmt::format("metric={}, inverse_metric diag min {:.4g} max {:.4g}", metric_name(metric), d.minCoeff(),
                     d.maxCoeff());
}

}  // namespace

// ---------------------------------------------------------------- HMC and NUTS
template <typename Kernel, typename Config>
HamiltonianSampler<Kernel, Config>::HamiltonianSampler(std::shared_ptr<const LogDensity> density, Config config)
    : density_(std::move(density)), config_(std::move(config)), kernel_(*density_), warmup_(config_.warmup) {
  config_.validate(density_->dim());
  config_.kernel.metric = resolve_metric(config_.kernel.metric, density_->dim());
}

template <typename Kernel, typename Config>
void HamiltonianSampler<Kernel, Config>::init(const Vec& position) {
  state_ = kernel_.init(position);
}

template <typename Kernel, typename Config>
void HamiltonianSampler<Kernel, Config>::begin_warmup(Index num_warmup) {
  num_warmup_ = static_cast<long>(num_warmup);
  warmup_done_ = 0;
  finished_warmup_ = num_warmup_ <= 0;
  if (finished_warmup_) return;
  warmup_.begin(num_warmup_, config_.kernel.step_size, density_->dim());
  need_step_size_init_ = config_.warmup.adapt_step_size;
  start_metric_from_curvature();
}

template <typename Kernel, typename Config>
void HamiltonianSampler<Kernel, Config>::start_metric_from_curvature() {
  // MALA moves each coordinate by about eps sqrt(D_k) per step, so a coordinate whose start metric
  // is far below its posterior variance barely moves in the first windows, their variance estimate
  // is as small, and so is the next metric: with the unit start, sigma's coordinate of a regression
  // 70x wider than its weights stayed stuck through all of warmup (posteriordb's sblrc, bulk ESS 5).
  // The inverse curvature at the start (a MAP fit by default) is the Laplace covariance, the right
  // scale from the first iteration. Its 2K gradients are spent only when they are at most the
  // warmup's own count. NUTS and HMC start from the unit metric, as Stan does.
  if constexpr (std::is_same_v<Config, MalaConfig>) {
    const Index dim = density_->dim();
    const auto* start = std::get_if<DiagonalMetric>(&config_.kernel.metric);
    const bool unit_start = start && (start->inverse_metric.array() == 1.0).all();  // not a metric the caller chose
    if (!config_.curvature_start || !unit_start || config_.warmup.metric == MetricAdaptation::None || 2 * dim > num_warmup_)
      return;
    const bool dense = config_.warmup.metric == MetricAdaptation::Dense;
    try {
      const Mat covariance = inverse_curvature(*density_, state_.position, dense ? dim : 0);
      config_.kernel.metric =
          dense ? make_dense_metric(0.5 * (covariance + covariance.transpose())) : make_diagonal_metric(covariance.col(0));
      metric_from_curvature_ = true;
    } catch (const InputError&) {
      // a gradient that is not finite next to the start: warmup starts from the unit metric
    }
  }
}

template <typename Kernel, typename Config>
DrawStats HamiltonianSampler<Kernel, Config>::transition(Rng& rng, bool warmup) {
  return hamiltonian_transition(kernel_, *density_, rng, warmup, state_, config_.kernel, warmup_, num_warmup_,
                                warmup_done_, need_step_size_init_, finished_warmup_);
}

template <typename Kernel, typename Config>
void HamiltonianSampler<Kernel, Config>::archive(StateArchive& a) {
  a.section("hamiltonian sampler");
  a.io(state_.position), a.io(state_.log_density), a.io(state_.grad);
  a.io(config_.kernel.step_size);
  archive_metric(a, config_.kernel.metric);
  a.io(warmup_);
  a.io(num_warmup_), a.io(warmup_done_), a.io(need_step_size_init_), a.io(finished_warmup_), a.io(metric_from_curvature_);
}

template <typename Kernel, typename Config>
std::string HamiltonianSampler<Kernel, Config>::describe() const {
  if constexpr (std::is_same_v<Kernel, Nuts>)
    return fmt::format("nuts: step_size={:.6g}, max_depth={}, {}", config_.kernel.step_size,
                       config_.kernel.max_depth, describe_metric(config_.kernel.metric));
  else if constexpr (std::is_same_v<Kernel, Mala>)
    return fmt::format("mala: step_size={:.6g}, {}{}", config_.kernel.step_size, describe_metric(config_.kernel.metric),
                       metric_from_curvature_ ? ", warmup started from the inverse curvature" : "");
  else
    return fmt::format("hmc: step_size={:.6g}, num_leapfrog_steps={}, {}", config_.kernel.step_size,
                       config_.kernel.num_leapfrog_steps, describe_metric(config_.kernel.metric));
}

template class HamiltonianSampler<Nuts, NutsConfig>;
template class HamiltonianSampler<Hmc, HmcConfig>;
template class HamiltonianSampler<Mala, MalaConfig>;

// ---------------------------------------------------------------- adaptive Metropolis
AdaptiveMetropolisSampler::AdaptiveMetropolisSampler(std::shared_ptr<const LogDensity> density,
                                                     AdaptiveMetropolisConfig config)
    : density_(std::move(density)), config_(std::move(config)), kernel_(*density_) {
  const Index dim = density_->dim();
  if (config_.covariance != AmCovariance::Auto) config_.kernel.diagonal = config_.covariance == AmCovariance::Diagonal;
  else config_.kernel.diagonal = config_.kernel.diagonal || dim > kAmDenseMaxDim;
  config_.validate(dim);
}

void AdaptiveMetropolisSampler::set_base_covariance(const Mat& covariance) {
  const double k = static_cast<double>(density_->dim());
  base_cholesky_ = robust_cholesky((2.4 * 2.4 / k) * covariance);
  state_.proposal_cholesky = lambda_ * base_cholesky_;
}

void AdaptiveMetropolisSampler::init(const Vec& position) {
  state_ = kernel_.init(position, config_.kernel);
  lambda_ = 1.0;
  base_cholesky_ = state_.proposal_cholesky;
}

void AdaptiveMetropolisSampler::begin_warmup(Index num_warmup) {
  num_warmup_ = static_cast<long>(num_warmup);
  warmup_done_ = 0;
  // The curvature start costs 2 K gradient evaluations, O(K^2) in all: above kAmDenseMaxDim
  // parameters it is spent only when warmup's own evaluations pay for it (as MALA's), else the
  // windows learn the scales from the identity start.
  const Index dim = density_->dim();
  if (config_.start == AmStart::Curvature && config_.kernel.initial_covariance.size() == 0 &&
      (dim <= kAmDenseMaxDim || 2 * dim <= num_warmup_)) {
    // Haario keeps seed 001's gamma in front of 2.4^2/K; the windowed scale starts at 1.
    lambda_ = config_.adaptation == AmAdaptation::Haario ? std::sqrt(config_.kernel.gamma) : 1.0;
    set_base_covariance(inverse_curvature(*density_, state_.position, config_.kernel.diagonal ? 0 : dim));
  }
  adapting_ = config_.adaptation == AmAdaptation::Windowed && config_.kernel.adapt && num_warmup_ > 0;
  if (!adapting_) return;
  schedule_.emplace(num_warmup_, config_.windows);
  window_.reset(config_.kernel.diagonal ? 0 : density_->dim());
  diagonal_window_.reset(config_.kernel.diagonal ? density_->dim() : 0);
  scale_ = DualAveraging(config_.scale_adaptation);
  scale_.restart(lambda_);
}

DrawStats AdaptiveMetropolisSampler::transition(Rng& rng, bool warmup) {
  AdaptiveMetropolisParams params = config_.kernel;
  if (config_.adaptation == AmAdaptation::Haario) {
    params.adapt = config_.kernel.adapt && (warmup || config_.adapt_after_warmup);
  } else {
    // The windows below adapt during warmup; afterwards only Haario's refresh, when asked for.
    params.adapt = config_.kernel.adapt && !warmup && config_.adapt_after_warmup;
    if (!warmup && adapting_) {  // warmup ended early (an interrupted or shortened run)
      lambda_ = scale_.iterations() > 0 ? scale_.final_step_size() : lambda_;
      state_.proposal_cholesky = lambda_ * base_cholesky_;
      adapting_ = false;
    }
  }
  AdaptiveMetropolisStep step = kernel_.step(rng, state_, params);
  state_ = std::move(step.state);
  if (warmup && adapting_) {
    lambda_ = scale_.update(step.info.accept_prob);
    const long t = warmup_done_++;
    const bool diagonal = config_.kernel.diagonal;
    if (schedule_->in_window(t)) diagonal ? diagonal_window_.add(state_.position) : window_.add(state_.position);
    const long count = diagonal ? diagonal_window_.count() : window_.count();
    if (schedule_->ends_window(t) && count >= 2) {
      // Stan's regularisation of a window's covariance, made relative to its scale.
      const double n = static_cast<double>(count);
      Mat c = (n / (n + 5.0)) * (diagonal ? Mat(diagonal_window_.variance()) : window_.covariance());
      const double mean_variance = diagonal ? c.mean() : c.diagonal().mean();
      const double shrink = 1e-3 * (5.0 / (n + 5.0)) * std::max(mean_variance, std::numeric_limits<double>::min());
      if (diagonal) c.array() += shrink;
      else c.diagonal().array() += shrink;
      lambda_ = 1.0;
      set_base_covariance(c);
      window_.restart();
      diagonal_window_.restart();
      scale_.restart(lambda_);
    }
    if (warmup_done_ >= num_warmup_) {
      lambda_ = scale_.final_step_size();
      adapting_ = false;
    }
    state_.proposal_cholesky = lambda_ * base_cholesky_;
  }
  return DrawStats{state_.log_density, step.info.accept_prob, kNaN, 0, 0, step.info.is_divergent, kNaN};
}

void AdaptiveMetropolisSampler::archive(StateArchive& a) {
  a.section("adaptive metropolis sampler");
  a.io(state_.position), a.io(state_.log_density), a.io(state_.iteration), a.io(state_.history_count);
  a.io(state_.history_mean), a.io(state_.history_m2), a.io(state_.proposal_cholesky);
  a.io(base_cholesky_), a.io(lambda_), a.io(scale_), a.io(window_), a.io(diagonal_window_);
  a.io(num_warmup_), a.io(warmup_done_), a.io(adapting_);
}

std::string AdaptiveMetropolisSampler::describe() const {
  const Mat& factor = state_.proposal_cholesky;
  const Vec sd = config_.kernel.diagonal ? Vec(factor.col(0).cwiseAbs()) : Vec(factor.rowwise().norm());
  const char* shape = config_.kernel.diagonal ? "diagonal" : "dense";
  if (config_.adaptation == AmAdaptation::Haario)
    return fmt::format("adaptive_metropolis (Haario, {}): gamma={}, t0={}, t_adapt={}, proposal sd min {:.4g} max {:.4g}", shape,
                       config_.kernel.gamma, config_.kernel.t0, config_.kernel.t_adapt, sd.minCoeff(), sd.maxCoeff());
  return fmt::format("adaptive_metropolis (windowed, {}): scale {:.4g}, proposal sd min {:.4g} max {:.4g}", shape, lambda_,
                     sd.minCoeff(), sd.maxCoeff());
}

// ---------------------------------------------------------------- factories
std::unique_ptr<ChainSampler> make_chain_sampler(std::shared_ptr<const LogDensity> density, const SamplerConfig& config) {
  require(density != nullptr, "density", "non-null");
  return std::visit(
      [&](const auto& c) -> std::unique_ptr<ChainSampler> {
        using C = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<C, NutsConfig>) return std::make_unique<NutsSampler>(density, c);
        else if constexpr (std::is_same_v<C, HmcConfig>) return std::make_unique<HmcSampler>(density, c);
        else if constexpr (std::is_same_v<C, MalaConfig>) return std::make_unique<MalaSampler>(density, c);
        else return std::make_unique<AdaptiveMetropolisSampler>(density, c);
      },
      config);
}

SamplerFactory make_sampler_factory(std::shared_ptr<const LogDensity> density, SamplerConfig config) {
  (void)make_chain_sampler(density, config);  // validates now, not inside a worker thread
  return [density = std::move(density), config = std::move(config)] { return make_chain_sampler(density, config); };
}

}  // namespace uqnn
