#include "uqnn/hybrid/dei_mcmc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "uqnn/core/error.hpp"
#include "uqnn/hybrid/linear_baseline.hpp"

namespace uqnn {

EnsembleParams DeiMcmcParams::default_ensemble() {
  // Seed 003 App. D: "full-batch for 5,000 epochs with a Gaussian negative log-likelihood loss
  // function ... Adam ... initial learning rate of 10^-2 and weight decay equal to 10^-2"; M = 12.
  EnsembleParams e;
  e.members = 12;
  e.loss = "nll";
  e.training.optimizer.name = "adam";
  e.training.optimizer.learning_rate = 1e-2;
  e.training.optimizer.weight_decay = 1e-2;
  e.training.epochs = 5000;
  e.training.batch_size = 0;
  e.noise_holdout = 0.0;  // the members' NLL-trained sigma starts the chains, as in seed 003
  return e;
}

void DeiMcmcParams::validate() const {
  require(start == "ensemble" || start == "prior" || start == "given", "start", "ensemble, prior or given");
  ensemble.validate();
  require(warmup >= 0, "warmup", ">= 0");
  require(draws >= 1, "draws", ">= 1");
  require(thin >= 1, "thin", ">= 1");
  require(threads >= 0, "threads", ">= 0 (0 = one per chain up to the hardware threads)");
  nuts.warmup.validate();
  if (mclmc) mclmc->tuning.validate();
  monitor.validate();
}

Draws DeiMcmcResult::merged(long max_draws_per_chain) const {
  Draws draws;
  for (int c = 0; c < run.num_chains(); ++c) {
    const auto ci = static_cast<std::size_t>(c);
    if (!kept.empty() && !kept[ci]) continue;
    const Mat& chain = run.draws[ci];
    const Index n = max_draws_per_chain < 0 ? chain.rows() : std::min<Index>(chain.rows(), max_draws_per_chain);
    if (n > 0) draws.add_chain(c, chain.topRows(n), {run.stats[ci].begin(), run.stats[ci].begin() + n});
  }
  return draws;
}

DeiMcmcResult run_dei_mcmc(std::shared_ptr<const Posterior> posterior, const DeiMcmcParams& params, std::uint64_t seed,
                           const Mat& held_out_inputs, const Mat& held_out_targets,
                           const std::vector<Vec>& given_starts, std::vector<Observer*> observers) {
  params.validate();
  require(posterior != nullptr, "posterior", "non-null");
  const Index chains = params.ensemble.members;
  DeiMcmcResult result;

  // 1. Starting points: the trained ensemble (sec. 7.2), prior draws (cold start) or given networks.
  InitialPoints initial;
  const auto t0 = std::chrono::steady_clock::now();
  if (params.start == "ensemble") {
    // DEI-MCMC: no validation data, the members must not see the held-out set that judges them.
    // MILE: members stop early on it (Sommer et al. 2025, App. B).
    result.members = params.members_see_held_out
                         ? fit_deep_ensemble(*posterior, params.ensemble, seed, held_out_inputs, held_out_targets)
                         : fit_deep_ensemble(*posterior, params.ensemble, seed);
    std::vector<Vec> starts;
    for (const auto& m : result.members) starts.push_back(m.theta);
    initial = starts;
  } else if (params.start == "given") {
    require(static_cast<Index>(given_starts.size()) == chains, "given starts",
            fmt::format("one network per chain ({} given, {} chains)", given_starts.size(), chains));
    for (std::size_t c = 0; c < given_starts.size(); ++c)
      require(given_starts[c].size() == posterior->dim(), "given start",
              fmt::format("{} parameters (network and likelihood extras); start {} has {}", posterior->dim(), c,
                          given_starts[c].size()));
    initial = given_starts;
  } else {
    initial = InitialPointFn([posterior](int, Rng& rng) { return posterior->sample_prior(rng); });
  }
  result.ensemble_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // 2. One NUTS chain per start, short warmup, the LPPD monitor watching every kept draw.
  RunConfig run;
  run.num_chains = static_cast<int>(chains);
  run.num_threads = params.threads;
  run.num_warmup = params.warmup;
  run.num_draws = params.draws;
  run.thin = params.thin;
  run.seed = seed + 1;  // the ensemble used Rng(seed, j); chains get their own streams
  run.checkpoint = params.checkpoint;
  SamplerFactory sampler;
  if (params.mclmc) {
    sampler = make_mclmc_factory(posterior, *params.mclmc);
  } else {
    NutsConfig nuts = params.nuts;
    nuts.kernel.metric = make_unit_metric(posterior->dim());  // the warmup adapts it
    sampler = make_sampler_factory(posterior, nuts);
  }
  LppdMonitor monitor(posterior, held_out_inputs, held_out_targets, params.monitor);
  observers.push_back(&monitor);
  result.run = run_chains(run, sampler, initial, observers);
  result.sampling_seconds = result.run.seconds;

  // 3. Function-space summaries and the dying-sampler filter (seed 003 sec. 4: RMSE vs the LM).
  const LinearBaseline lm = LinearBaseline::fit(posterior->inputs(), posterior->targets());
  result.linear_model_rmse = lm.rmse(held_out_inputs, held_out_targets);
  result.chain_rmse.resize(chains);
  for (int c = 0; c < static_cast<int>(chains); ++c) {
    result.lppd_traces.push_back(monitor.lppd_trace(c));
    result.log_pointwise_likelihood.push_back(monitor.log_pointwise_likelihood(c));
    result.draw_rmse.push_back(monitor.draw_rmse(c));
    result.converged_at.push_back(monitor.converged_at(c));
    result.stopped_early.push_back(monitor.stopped(c));
    const bool has_draws = !monitor.lppd_trace(c).empty();
    result.chain_rmse(c) = has_draws ? monitor.chain_rmse(c) : std::numeric_limits<double>::quiet_NaN();
    const bool dying = !has_draws || !(result.chain_rmse(c) < result.linear_model_rmse);
    result.dying.push_back(dying);
    result.num_dying += dying ? 1 : 0;
    result.kept.push_back(!(params.drop_dying && dying));
  }
  // Dropping every chain would leave no posterior: keep them all (num_dying still says so).
  if (std::none_of(result.kept.begin(), result.kept.end(), [](bool k) { return k; }))
    result.kept.assign(result.kept.size(), true);
  return result;
}

}  // namespace uqnn
