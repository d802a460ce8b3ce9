#include "uqnn/hybrid/vi_hmc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

#include "uqnn/adaptation/step_size.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {

void ViHmcParams::validate() const {
  require(tau > 0 && tau <= 1, "vi-hmc tau", "(0, 1]");
  require(sampler == "hmc" || sampler == "nuts", "vi-hmc sampler", "hmc or nuts");
  require(step_size >= 0 && std::isfinite(step_size), "vi-hmc step_size", ">= 0 (0 = find it)");
  require(target_accept > 0 && target_accept < 1, "vi-hmc target_accept", "(0, 1)");
  require(find_step_size_iterations >= 10, "vi-hmc find_step_size_iterations", ">= 10");
  require(num_leapfrog_steps >= 1, "vi-hmc num_leapfrog_steps", ">= 1");
  require(max_leapfrog_steps >= 1, "vi-hmc max_leapfrog_steps", ">= 1");
  require(init_spread >= 0 && std::isfinite(init_spread), "vi-hmc init_spread", ">= 0");
  require(step_size_jitter >= 0 && step_size_jitter < 1, "vi-hmc step_size_jitter", "[0, 1)");
  require(nuts_max_depth >= 1 && nuts_max_depth <= 30, "vi-hmc nuts_max_depth", "[1, 30]");
}

int paper_path_length(const Vec& sd, double step_size, SpreadStatistic statistic, SpreadMeasure measure, int max_steps) {
  require(sd.size() >= 1, "path-length spreads", "at least one");
  require(step_size > 0, "path-length step size", "> 0");
  Vec spread = measure == SpreadMeasure::Variance ? Vec(sd.array().square()) : sd;
  std::sort(spread.data(), spread.data() + spread.size());
  const Index n = spread.size();
  const double s = statistic == SpreadStatistic::Max ? spread[n - 1]
                                                     : (n % 2 ? spread[n / 2] : 0.5 * (spread[n / 2 - 1] + spread[n / 2]));
  // Appendix C: L = pi s / (2 eps), a quarter period of the harmonic flow of a N(., s^2) target.
  const double steps = std::ceil(std::numbers::pi * s / (2.0 * step_size));
  return static_cast<int>(std::clamp(steps, 1.0, static_cast<double>(max_steps)));
}

std::vector<Vec> ViHmcResult::full_draws() const {
  std::vector<Vec> out;
  const Index kept = run.min_draws();
  for (int c = 0; c < run.num_chains(); ++c)
    for (Index d = 0; d < kept; ++d) out.push_back(view->expand(run.draws[static_cast<std::size_t>(c)].row(d).transpose()));
  return out;
}

ViHmcResult run_vi_hmc(std::shared_ptr<const Posterior> posterior, const Vec& vi_mean, const Vec& vi_sd,
                       const ViHmcParams& params, const RunConfig& run, const std::vector<Observer*>& observers) {
  const Index P = posterior->model().num_params();
  if (vi_mean.size() != posterior->dim() || vi_sd.size() != posterior->dim())
    throw std::invalid_argument(fmt::format("vi-hmc: VI mean and sd need {} entries", posterior->dim()));
  SensitivityReport report =
      compute_sensitivities(posterior->model(), vi_mean.head(P), vi_sd.head(P), posterior->inputs());
  return run_vi_hmc(std::move(posterior), vi_mean, vi_sd, std::move(report), params, run, observers);
}

ViHmcResult run_vi_hmc(std::shared_ptr<const Posterior> posterior, const Vec& vi_mean, const Vec& vi_sd,
                       SensitivityReport sensitivities, const ViHmcParams& params, const RunConfig& run,
                       const std::vector<Observer*>& observers) {
  params.validate();
  run.validate();
  const Index P = posterior->model().num_params(), K = posterior->dim();
  if (vi_mean.size() != K || vi_sd.size() != K)
    throw std::invalid_argument(fmt::format("vi-hmc: VI mean and sd need {} entries", K));
  if (sensitivities.sensitivity.size() != P)
    throw std::invalid_argument(fmt::format("vi-hmc: {} sensitivities for {} network parameters", sensitivities.sensitivity.size(), P));
  ViHmcResult result;
  result.num_kept = sensitivities.num_kept(params.tau);
  if (params.subset == SubsetRule::Sensitive) {
    result.active = sensitivities.sensitive_subset(params.tau);
  } else {
    Rng rng(params.subset_seed, 0);
    result.active = random_subset(P, result.num_kept, rng);
  }
  for (Index e = P; e < K; ++e) result.active.push_back(e);  // extras are always sampled
  result.sensitivities = std::move(sensitivities);
  auto view = std::make_shared<const SubspaceView>(posterior, result.active, vi_mean);
  result.view = view;
  const Vec mean_s = view->restrict(vi_mean), sd_s = view->restrict(vi_sd);

  // Step size: given, or found by dual averaging for the target acceptance (HMC) from the VI means.
  double step_size = params.step_size;
  if (params.sampler == "hmc" && step_size == 0.0) {
    const auto started = std::chrono::steady_clock::now();
    FindStepSizeOptions o;
    o.num_iterations = params.find_step_size_iterations;
    o.num_leapfrog_steps = params.num_leapfrog_steps;
    o.seed = run.seed;
    step_size = find_step_size(*view, mean_s, params.target_accept, o).step_size;
    result.find_step_size_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  SamplerConfig config;
  if (params.sampler == "hmc") {
    HmcConfig c;
    c.kernel.step_size = step_size;
    c.kernel.num_leapfrog_steps =
        params.paper_path_length
            ? paper_path_length(sd_s, step_size, params.spread_statistic, params.spread_measure, params.max_leapfrog_steps)
            : params.num_leapfrog_steps;
    c.kernel.metric = make_unit_metric(view->dim());
    c.kernel.jitter_path_length = params.jitter_path_length;
    c.kernel.step_size_jitter = params.step_size_jitter;
    c.warmup.adapt_step_size = false;  // warmup is burn-in at the fixed step (Algorithm 2)
    c.warmup.metric = MetricAdaptation::None;
    result.num_leapfrog_steps = c.kernel.num_leapfrog_steps;
    config = c;
  } else {
    NutsConfig c;
    c.kernel.step_size = step_size > 0 ? step_size : 0.1;
    c.kernel.max_depth = params.nuts_max_depth;
    c.kernel.metric = make_unit_metric(view->dim());
    c.warmup.adapt_step_size = step_size == 0.0;
    c.warmup.metric = step_size == 0.0 ? MetricAdaptation::Diagonal : MetricAdaptation::None;
    c.warmup.dual_averaging.target_accept = params.target_accept;
    config = c;
  }
  result.step_size = step_size;
  const double spread = params.init_spread;
  const InitialPointFn start = [mean_s, sd_s, spread](int, Rng& rng) -> Vec {
    if (spread == 0.0) return mean_s;
    return mean_s + spread * sd_s.cwiseProduct(rng.normal_vector(mean_s.size()));
  };
  result.run = run_chains(run, make_sampler_factory(view, config), start, observers);
  if (params.sampler == "nuts" && !result.run.stats.empty() && !result.run.stats.front().empty())
    result.step_size = result.run.stats.front().front().step_size;
  return result;
}

}  // namespace uqnn
