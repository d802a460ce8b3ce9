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
#include <variant>

#include "uqnn/adaptation/stan_warmup.hpp"
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

struct MalaConfig {
  MalaParams kernel;
  bool adapt_step_size = true;
  DualAveragingParams step_size_adaptation{0.574, 0.05, 10.0, 0.75};
  void validate() const { kernel.validate(); step_size_adaptation.validate(); }
};

struct AdaptiveMetropolisConfig {
  AdaptiveMetropolisParams kernel;
  /// Keep refreshing Sigma after warmup (Haario's original AM; QUiNN's behaviour). Default: frozen.
  bool adapt_after_warmup = false;
  void validate(Index dim) const { kernel.validate(dim); }
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
  std::string describe() const override;
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
};

using NutsSampler = HamiltonianSampler<Nuts, NutsConfig>;
using HmcSampler = HamiltonianSampler<Hmc, HmcConfig>;

class MalaSampler : public ChainSampler {
 public:
  MalaSampler(std::shared_ptr<const LogDensity> density, MalaConfig config);
  void init(const Vec& position) override;
  void begin_warmup(Index num_warmup) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  std::string describe() const override;
  const MalaParams& params() const { return config_.kernel; }

 private:
  std::shared_ptr<const LogDensity> density_;
  MalaConfig config_;
  Mala kernel_;
  GradientState state_;
  DualAveraging averaging_;
  long num_warmup_ = 0, warmup_done_ = 0;
  bool need_step_size_init_ = false, finished_warmup_ = true;
};

class AdaptiveMetropolisSampler : public ChainSampler {
 public:
  AdaptiveMetropolisSampler(std::shared_ptr<const LogDensity> density, AdaptiveMetropolisConfig config);
  void init(const Vec& position) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  std::string describe() const override;
  const AdaptiveMetropolisState& state() const { return state_; }

 private:
  std::shared_ptr<const LogDensity> density_;
  AdaptiveMetropolisConfig config_;
  AdaptiveMetropolis kernel_;
  AdaptiveMetropolisState state_;
};

/// One sampler for `config` (validated against density->dim()).
std::unique_ptr<ChainSampler> make_chain_sampler(std::shared_ptr<const LogDensity> density, const SamplerConfig& config);
/// A factory that makes a fresh sampler per chain (config validated once, here).
SamplerFactory make_sampler_factory(std::shared_ptr<const LogDensity> density, SamplerConfig config);

}  // namespace uqnn
