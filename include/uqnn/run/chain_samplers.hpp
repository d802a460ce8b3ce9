#pragma once
/// @file ChainSampler adapters binding each kernel, its state and its warmup for one chain, and
/// factories from a config struct (one per method, or the SamplerConfig variant).
///
/// Warmup: NUTS and HMC run Stan's warmup (StanWarmup: initial step-size heuristic, dual averaging
/// to target_accept 0.8, windowed diagonal or dense metric); MALA adapts its step size by dual
/// averaging (default target 0.574, Roberts & Rosenthal 1998); adaptive Metropolis adapts its
/// proposal covariance during warmup and keeps it fixed afterwards unless adapt_after_warmup.
/// After warmup every kernel is a fixed Markov kernel, so draws are a valid MCMC sample.
#include <functional>
#include <memory>
#include <optional>
#include <variant>

#include "uqnn/adaptation/dual_averaging.hpp"
#include "uqnn/adaptation/stan_warmup.hpp"
#include "uqnn/adaptation/welford.hpp"
#include "uqnn/adaptation/window_adaptation.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/adaptive_metropolis.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/mcmc/hmc.hpp"
#include "uqnn/mcmc/mala.hpp"
#include "uqnn/mcmc/nuts.hpp"

namespace uqnn {

struct NutsConfig {
  NutsParams kernel;        ///< initial step size and metric; tuned by warmup
  StanWarmupParams warmup;  ///< adapt step size and a diagonal metric by default
  void validate(Index dim) const { kernel.validate(dim); warmup.validate(); }
};

struct HmcConfig {
  HmcParams kernel;
  StanWarmupParams warmup;
  void validate(Index dim) const { kernel.validate(dim); warmup.validate(); }
};

/// MALA adapts as HMC does in Stan's warmup (it is HMC with one leapfrog step): the step size by
/// dual averaging, toward MALA's optimal acceptance 0.574 (Roberts & Rosenthal 1998), and a
/// diagonal (or dense) metric in the doubling windows, regularised relative to the posterior's
/// scale (StanWarmupParams::relative_regularization). warmup.metric = None keeps seed 001's unit
/// metric.
struct MalaConfig {
  MalaParams kernel;
  StanWarmupParams warmup{true, MetricAdaptation::Diagonal, DualAveragingParams{0.574, 0.05, 10.0, 0.75}, {}, true, {}};
  /// Warmup starts from the inverse curvature at the chain's start (diagonal, or dense with a dense
  /// metric) instead of the unit metric, when its 2K gradients are at most the warmup iterations
  /// (HamiltonianSampler::start_metric_from_curvature says why).
  bool curvature_start = true;
  void validate(Index dim) const {
    kernel.validate(dim);
    warmup.validate();
  }
};

/// How adaptive Metropolis learns its proposal during warmup.
/// - Windowed (default): Sigma = lambda^2 2.4^2/K C, with C the covariance of the draws of Stan's
///   doubling warmup windows (each window forgets the earlier ones, so a stuck start does not stay
///   in it; regularised toward 1e-3 of its mean variance, relative to the posterior's scale, as
///   Stan regularises its metric) and lambda tuned by dual averaging toward an acceptance rate of
///   0.234 (Roberts, Gelman & Gilks 1997; Andrieu & Thoms 2008, sec. 5, "AM with global adaptive
///   scaling"), restarted at 1 after every window.
/// - Haario: seed 001 exactly: Sigma = gamma 2.4^2/K (C_t + 1e-8 I) from the whole history,
///   refreshed at t0 and every t_adapt steps.
enum class AmAdaptation { Windowed, Haario };
/// Where the proposal starts: the inverse curvature at the chain's start (the Laplace covariance
/// at a MAP start, inverse_curvature) times 2.4^2/K, or seed 001's gamma 2.4^2/K I.
enum class AmStart { Curvature, Identity };
/// The proposal's covariance: dense (correlations; K^2 per step) or diagonal (K per step); Auto is
/// dense up to kAmDenseMaxDim parameters and diagonal above, where a dense one costs gigabytes.
enum class AmCovariance { Auto, Dense, Diagonal };

struct AdaptiveMetropolisConfig {
  AdaptiveMetropolisParams kernel;
  AmAdaptation adaptation = AmAdaptation::Windowed;
  AmStart start = AmStart::Curvature;
  AmCovariance covariance = AmCovariance::Auto;
  /// Keep refreshing Sigma from the whole history after warmup (Haario's original AM; QUiNN's
  /// behaviour; the chain is then not Markov). Default: frozen after warmup.
  bool adapt_after_warmup = false;
  /// Windowed: the scale's dual averaging (target acceptance 0.234) and the windows.
  DualAveragingParams scale_adaptation{0.234, 0.05, 10.0, 0.75};
  WindowAdaptationParams windows;
  void validate(Index dim) const {
    kernel.validate(dim);
    scale_adaptation.validate();
    windows.validate();
  }
};

using SamplerConfig = std::variant<NutsConfig, HmcConfig, MalaConfig, AdaptiveMetropolisConfig>;


/// HMC or NUTS with Stan's warmup (step-size heuristic, dual averaging, windowed metric): the two
/// differ only in their kernel, so one adapter serves both.
template <typename Kernel, typename Config>
class HamiltonianSampler : public ChainSampler {
 public:
  HamiltonianSampler(std::shared_ptr<const LogDensity> density, Config config);
  void init(const Vec& position) override;
  void begin_warmup(Index num_warmup) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  Index dim() const override { return density_->dim(); }
  std::string describe() const override;
  void archive(StateArchive& archive) override;
  const auto& params() const { return config_.kernel; }
  const StanWarmup& warmup() const { return warmup_; }

 private:
  std::shared_ptr<const LogDensity> density_;
  Config config_;
  Kernel kernel_;
  GradientState state_;
  StanWarmup warmup_;
  long num_warmup_ = 0, warmup_done_ = 0;
  bool need_step_size_init_ = false, finished_warmup_ = true;
  bool metric_from_curvature_ = false;
  void start_metric_from_curvature();  // MALA (MalaConfig::curvature_start)
};

using NutsSampler = HamiltonianSampler<Nuts, NutsConfig>;
using HmcSampler = HamiltonianSampler<Hmc, HmcConfig>;

using MalaSampler = HamiltonianSampler<Mala, MalaConfig>;

class AdaptiveMetropolisSampler : public ChainSampler {
 public:
  AdaptiveMetropolisSampler(std::shared_ptr<const LogDensity> density, AdaptiveMetropolisConfig config);
  void init(const Vec& position) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  Index dim() const override { return density_->dim(); }
  std::string describe() const override;
  void begin_warmup(Index num_warmup) override;
  void archive(StateArchive& archive) override;
  const AdaptiveMetropolisState& state() const { return state_; }

 private:
  void set_base_covariance(const Mat& covariance);
  std::shared_ptr<const LogDensity> density_;
  AdaptiveMetropolisConfig config_;
  AdaptiveMetropolis kernel_;
  AdaptiveMetropolisState state_;
  // Windowed adaptation: the proposal is lambda_ * base_cholesky_.
  Mat base_cholesky_;
  double lambda_ = 1.0;
  DualAveraging scale_;
  WelfordCovariance window_;           // a dense proposal's window
  WelfordVariance diagonal_window_;    // a diagonal one's
  std::optional<WindowSchedule> schedule_;
  long num_warmup_ = 0, warmup_done_ = 0;
  bool adapting_ = false;
};

/// One sampler for `config` (validated against density->dim()).
std::unique_ptr<ChainSampler> make_chain_sampler(std::shared_ptr<const LogDensity> density, const SamplerConfig& config);
/// A factory that makes a fresh sampler per chain (config validated once, here).
SamplerFactory make_sampler_factory(std::shared_ptr<const LogDensity> density, SamplerConfig config);

}  // namespace uqnn
