#pragma once
// Options shared by several sampling methods (private to src/services): the step size and whether
// warmup adapts, where chains start, Stan's warmup tuning of the Hamiltonian samplers; and the run
// of a method's chains through the driver. A method's own options live in its method_<name>.cpp.
#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chain_run.hpp"
#include "uqnn/adaptation/stan_warmup.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/lockstep.hpp"
#include "uqnn/run/mclmc_sampler.hpp"
#include "uqnn/services/memory.hpp"
#include "uqnn/services/methods.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn::detail {

/// The step size: unset = automatic (the kernel's default start, refined by Stan's heuristic and
/// dual averaging in warmup); required when adaptation is off.
struct StepOptions {
  std::optional<double> step_size;
  bool adapt = true;
};
const OptionSchema<StepOptions>& step_options();

/// Chains in lockstep (run/lockstep.hpp): each thread's chains batch their gradients, one chain per
/// SIMD lane. Read by run_method and sample(), which wrap the density in its lockstep form.
struct LockstepOptions {
  bool lockstep = false;
};
const OptionSchema<LockstepOptions>& lockstep_options();
/// `density` in its lockstep form (make_lockstep_density) when the settings ask for --lockstep, else itself.
inline std::shared_ptr<const LogDensity> lockstep_density(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings) {
  if (!lockstep_options().read(settings).lockstep) return density;
  return make_lockstep_density(std::move(density));
}

/// Where chains start: their own MAP fit (QUiNN's zflag), the network initialisation, or a prior draw.
struct ChainStartOptions {
  std::string chain_init = "map";
};
const OptionSchema<ChainStartOptions>& chain_start_options();

/// The metric's memory per chain of nuts, hmc and mala:
/// - --metric dense: four K x K matrices (the inverse metric, its Cholesky factor, the warmup
///   window's Welford covariance and its regularised copy);
/// - --metric low-rank: the largest warmup window's draws and gradients (2 x K x n, n rounded up to
///   a power of two), and while the metric is estimated about 6 K x n more (centred copies, the
///   joint span's QR and basis); the metric itself is K (r + 1) with r <= 2n.
inline std::vector<MemoryItem> metric_memory(const FitConfig& config, Index num_params, MetricAdaptation metric) {
  const ChainOptions run = chain_options().read(config.method_settings);
  const double chains = static_cast<double>(run.chains);
  const double K = static_cast<double>(num_params);
  if (metric == MetricAdaptation::Dense)
    return {{fmt::format("the dense metric: {:.0f} chains x 4 matrices of {:.0f} x {:.0f}", chains, K, K),
             4.0 * 8.0 * chains * K * K, "--metric diag, or a smaller --arch"}};
  if (metric != MetricAdaptation::LowRank) return {};
  const WindowSchedule schedule(run.warmup);
  long window = 0;
  for (const auto& w : schedule.windows()) window = std::max(window, w.end - w.begin);
  double columns = 16;
  while (columns < static_cast<double>(window)) columns *= 2;
  const double parallel = concurrent_producers(config, chains);
  return {{fmt::format("the low-rank metric's warmup window: {:.0f} chains x 2 x {:.0f} draws of {:.0f}", chains,
                       columns, K),
           2.0 * 8.0 * chains * columns * K, "--metric diag or fisher-diag, or a shorter --warmup"},
          {fmt::format("the low-rank metric's estimate: {:.0f} chains at a time x 6 x {:.0f} x {:.0f}", parallel, columns, K),
           6.0 * 8.0 * parallel * columns * K, "--metric diag or fisher-diag, or a shorter --warmup"}};
}

/// While it builds a tree NUTS keeps about ten K-vectors per level in each chain (the ends of
/// every open subtree, their proposals and momentum sums): measured at K = 161k, 1-6 levels
/// (FitMemoryCli), beside the working vectors every chain has. Counted as 12 for a margin, for
/// the chains that run at once (`chains`, at most --threads).
inline MemoryItem nuts_tree_memory(const FitConfig& config, Index num_params, double chains, int max_depth) {
  const double parallel = concurrent_producers(config, chains);
  const double depth = static_cast<double>(max_depth);
  const double K = static_cast<double>(num_params);
  return {fmt::format("NUTS trees: {:.0f} chains at a time x {:.0f} levels x 12 vectors of {:.0f}", parallel, depth, K),
          12.0 * 8.0 * parallel * depth * K, "a smaller --max-depth or --arch, or fewer --threads"};
}

/// The draws of a method run by the multi-chain driver.
inline KeptDraws chain_kept_draws(const nlohmann::json& settings) {
  const ChainOptions o = chain_options().read(settings);
  return chain_draws(o.chains, o.draws, o.thin, "fewer --draws or --chains, or --thin");
}

/// The divergence remedy of a sampler whose step size the user sets.
inline const std::string kLowerTheStepSize = "Lower the step size (--step-size) or reparameterise the model.";

/// Samplers without a step size (adaptive Metropolis, slice): a transition that diverges met a
/// density that is not finite.
inline const std::string kNonFiniteDensityAdvice =
    "Check the data and the prior for values where the log density is not finite, or reparameterise the model.";
inline SamplerTraits non_finite_density_traits(const nlohmann::json&) { return {.divergence_advice = kNonFiniteDensityAdvice}; }

/// MCLMC's step size is tuned to an energy-error target, which is what the user lowers.
inline const std::string kMclmcDivergenceAdvice =
    "Lower the energy-error target (--mclmc-energy-variance; warmup then tunes a smaller step size) or reparameterise the model.";

/// nuts and hmc: Stan's advice (raise --target-accept) while warmup adapts the step size; with
/// --no-adapt warmup changes nothing, so a smaller fixed step.
inline SamplerTraits hamiltonian_traits(const nlohmann::json& settings) {
  SamplerTraits traits;
  if (!step_options().read(settings).adapt) traits.divergence_advice = kLowerTheStepSize;
  return traits;
}

/// --metric: adapted in Stan's warmup windows from the draws (diag, dense: Stan) or from the draw /
/// gradient pairs (fisher-diag, low-rank: nutpie's), or none (unit metric).
inline std::vector<std::pair<std::string, MetricAdaptation>> metric_choices() {
  return {{"diag", MetricAdaptation::Diagonal},
          {"dense", MetricAdaptation::Dense},
          {"fisher-diag", MetricAdaptation::FisherDiagonal},
          {"low-rank", MetricAdaptation::LowRank},
          {"unit", MetricAdaptation::None}};
}

/// Adds the warmup options of a Hamiltonian sampler's config (`Config::warmup`, `Config::kernel`):
/// target acceptance, metric and step-size jitter, with the library's defaults.
template <typename Config>
OptionSchema<Config>& add_hamiltonian_tuning(OptionSchema<Config>& s) {
  return s
      .add_nested("target_accept", [](Config& c) -> double& { return c.warmup.dual_averaging.target_accept; },
                  "warmup's target acceptance statistic (dual averaging)")
      .above(0)
      .below(1)
      .cite("Hoffman & Gelman 2014, sec. 3.2; Stan's default 0.8")
      .add_choice("metric", [](Config& c) -> MetricAdaptation& { return c.warmup.metric; }, metric_choices(),
                  "inverse metric adapted in Stan's warmup windows: diag and dense from the draws (Stan), fisher-diag "
                  "and low-rank (a diagonal corrected in the strongly correlated directions) from draw/gradient pairs "
                  "(nutpie's); unit: none")
      .cite("Stan's diag_e/dense_e; Seyboldt, Carlson & Carpenter 2025 (nutpie)")
      .add_nested("jitter", [](Config& c) -> double& { return c.kernel.step_size_jitter; }, "step-size jitter fraction")
      .at_least(0)
      .below(1);
}

/// Applies the step options to a Hamiltonian config; throws InputError when --no-adapt lacks --step-size.
template <typename Config>
void apply_step_options(const StepOptions& step, Config& config) {
  if (step.step_size) config.kernel.step_size = *step.step_size;
  else if (!step.adapt) throw InputError("--step-size is required when adaptation is off (--no-adapt)");
  config.warmup.adapt_step_size = step.adapt;
  if (!step.adapt) config.warmup.metric = MetricAdaptation::None;
}

/// MCLMC's tuning as options (mclmc, mile): `access` reaches the MclmcTuningParams inside Options,
/// whose defaults are the method's (BlackJAX's for mclmc, MILE's for mile); `end` is the energy
/// variance at the end of warmup, unset = the start value.
template <typename Options>
OptionSchema<Options>& add_mclmc_tuning(OptionSchema<Options>& s, MclmcTuningParams& (*access)(Options&),
                                        std::optional<double>& (*end)(Options&)) {
  return s
      .add_nested("mclmc_energy_variance", [access](Options& o) -> double& { return access(o).energy_variance_start; },
                  "energy error variance per parameter, Var[E]/d, that warmup tunes the step size to (the bias tolerance)")
      .above(0)
      .cite("Robnik et al. 2023, sec. 3.3")
      .add_nested("mclmc_energy_variance_end", end,
                  "Var[E]/d at the end of the step-size phases, reached linearly (unset: no schedule)")
      .above(0)
      .cite("Sommer et al. 2025 (MILE), App. B")
      .add_nested("mclmc_preconditioning", [access](Options& o) -> bool& { return access(o).diagonal_preconditioning; },
                  "diagonal preconditioner from warmup's variance estimates")
      .add_nested("mclmc_effective_samples", [access](Options& o) -> double& { return access(o).num_effective_samples; },
                  "memory of the step-size average, in steps")
      .above(1)
      .add_nested("mclmc_trust", [access](Options& o) -> double& { return access(o).trust_in_estimate; },
                  "how far from the target a step's energy error may be and still count")
      .above(0)
      .add_nested("mclmc_variance_fraction", [access](Options& o) -> double& { return access(o).variance_fraction; },
                  "share of warmup that estimates the variances (L, preconditioner)")
      .at_least(0)
      .below(1)
      .add_nested("mclmc_ess_fraction", [access](Options& o) -> double& { return access(o).ess_fraction; },
                  "share of warmup that sets L from the chain's effective sample size")
      .at_least(0)
      .below(1)
      .add_nested("mclmc_l_factor", [access](Options& o) -> double& { return access(o).L_factor; },
                  "L = factor x step size x steps per effective sample")
      .above(0)
      .cite("Robnik et al. 2023, sec. 3.3; BlackJAX's Lfactor");
}

/// Runs the method's chains (chain options and starts from the method's settings) on `factory`
/// and returns their draws; `info` is extended with the run's summary.
MethodResult run_sampling_method(const FitContext& context, const SamplerFactory& factory, nlohmann::json info);

/// The chain sampler of a Hamiltonian method (hmc, nuts): its own options, the step options, and a
/// unit metric for warmup to adapt.
template <typename Config>
SamplerFactory make_hamiltonian_sampler(std::shared_ptr<const LogDensity> density, const nlohmann::json& settings,
                                        const OptionSchema<Config>& options) {
  Config config = options.read(settings);
  apply_step_options(step_options().read(settings), config);
  config.kernel.metric = make_unit_metric(density->dim());
  return make_sampler_factory(std::move(density), config);
}

}  // namespace uqnn::detail
