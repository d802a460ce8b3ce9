// `uqnn fit --method dei-nuts`: Deep Ensemble Initialized MCMC (seed 003 sec. 7.2) through
// include/uqnn/hybrid/dei_mcmc.hpp. Settings in FitConfig::method_options (CLI flags in
// apps/uqnn/dei_options.cpp): members, dei_start, lppd_window, lppd_epsilon, lppd_min_draws,
// stop_converged, drop_dying, dei_init (networks for dei_start "given"), valid (held-out file,
// loaded by the fit service). Warmup, draws,
// threads, target acceptance, tree depth and the members' optimiser come from the shared flags.
//
// Besides the merged draws (chain identity kept in chain_of_draw), the runner writes
// out_dir/dei_chains.json: per chain its start, kept / dying flag, held-out RMSE, the LM's RMSE,
// eq. 9 convergence time and the expanding-window LPPD trace (read by `uqnn diagnose DIR`).
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/layerwise.hpp"
#include "uqnn/hybrid/dei_figures.hpp"
#include "uqnn/hybrid/dei_mcmc.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/services/fit_output.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

template <typename T>
T option_or(const nlohmann::json& j, const char* key, T fallback) {
  if (!j.contains(key)) return fallback;
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(fmt::format("option '{}': wrong type ({})", key, j.at(key).dump()));
  }
}

}  // namespace

MethodResult run_dei_nuts(const FitContext& context) {
  const FitConfig& cfg = context.config;
  const nlohmann::json& o = cfg.method_options;
  DeiMcmcParams p;
  p.start = option_or<std::string>(o, "dei_start", "ensemble");
  p.ensemble.members = option_or<Index>(o, "members", 12);
  p.ensemble.threads = cfg.mcmc.threads;
  p.ensemble.training = cfg.training;  // seed 003 App. D defaults are set by the CLI for dei-nuts
  p.warmup = cfg.mcmc.warmup;
  p.draws = cfg.mcmc.draws;
  p.threads = cfg.mcmc.threads;
  p.nuts.kernel.max_tree_depth = cfg.mcmc.max_depth;
  p.nuts.warmup.dual_averaging.target_accept = cfg.mcmc.target_accept;
  p.monitor.window = option_or<Index>(o, "lppd_window", p.monitor.window);
  p.monitor.epsilon = option_or<double>(o, "lppd_epsilon", p.monitor.epsilon);
  p.monitor.min_draws = option_or<Index>(o, "lppd_min_draws", p.monitor.min_draws);
  p.monitor.stop_converged = option_or<bool>(o, "stop_converged", false);
  p.drop_dying = option_or<bool>(o, "drop_dying", false);
  // --dei-start given: the networks of an earlier fit (its out dir or its draws.csv, e.g. `uqnn fit
  // --method map` or `--method ens`: one row per network, columns chain, draw, parameter names).
  // One chain per network unless --members is given; then chain c starts at network c mod K.
  std::vector<Vec> given;
  if (p.start == "given") {
    if (!o.contains("dei_init"))
      throw InputError("--dei-start given needs --dei-init FILE (a fit's output directory or its draws.csv)");
    std::filesystem::path path = option_or<std::string>(o, "dei_init", "");
    if (std::filesystem::is_directory(path)) path /= "draws.csv";
    if (!std::filesystem::exists(path)) throw InputError(fmt::format("--dei-init: {} does not exist", path.string()));
    const std::vector<Vec> networks = read_draws_csv_as_vectors(path, context.posterior->layout());
    if (networks.empty()) throw InputError(fmt::format("--dei-init: {} holds no networks", path.string()));
    if (!o.contains("members")) p.ensemble.members = static_cast<Index>(networks.size());
    for (Index c = 0; c < p.ensemble.members; ++c)
      given.push_back(networks[static_cast<std::size_t>(c) % networks.size()]);
    context.log(fmt::format("dei-nuts: {} chains start at the {} network(s) of {}", p.ensemble.members, networks.size(),
                            path.string()));
  } else if (o.contains("dei_init")) {
    throw InputError("--dei-init is used with --dei-start given only");
  }
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("dei-nuts: ") + e.what());
  }
  context.log(fmt::format("dei-nuts: {} members/chains from {}, {} warmup + {} draws each", p.ensemble.members, p.start,
                          p.warmup, p.draws));
  const DeiMcmcResult r =
      run_dei_mcmc(context.posterior, p, cfg.seed, context.validation_inputs, context.validation_targets, given);

  MethodResult result;
  // Equal chain lengths for the InferenceData file: chains ended early by the monitor (eq. 9) are
  // cut to the shortest kept chain; dei_chains.json keeps every chain's full LPPD trace.
  long common = -1;
  for (int c = 0; c < r.run.num_chains(); ++c)
    if (r.kept[static_cast<std::size_t>(c)]) {
      const long n = r.run.draws[static_cast<std::size_t>(c)].rows();
      common = common < 0 ? n : std::min(common, n);
    }
  r.merged(result.draws, result.chain_of_draw, common);
  std::map<Index, std::size_t> next_draw;
  for (const Index c : result.chain_of_draw)
    result.stats.push_back(r.run.stats[static_cast<std::size_t>(c)][next_draw[c]++]);
  nlohmann::json chains = nlohmann::json::array();
  int kept = 0, stopped = 0;
  for (int c = 0; c < r.run.num_chains(); ++c) {
    const auto ci = static_cast<std::size_t>(c);
    kept += r.kept[ci] ? 1 : 0;
    stopped += r.stopped_early[ci] ? 1 : 0;
    chains.push_back({{"chain", c},
                      {"kept", static_cast<bool>(r.kept[ci])},
                      {"dying", static_cast<bool>(r.dying[ci])},
                      {"rmse", r.chain_rmse(c)},
                      {"draws", r.run.draws[ci].rows()},
                      {"stopped_early", static_cast<bool>(r.stopped_early[ci])},
                      {"converged_at", r.converged_at[ci] ? nlohmann::json(*r.converged_at[ci]) : nlohmann::json()},
                      {"start", std::vector<double>(r.run.initial_points[ci].data(),
                                                    r.run.initial_points[ci].data() + r.run.initial_points[ci].size())},
                      {"lppd_trace", r.lppd_traces[ci]},
                      {"log_pointwise_likelihood", r.log_pointwise_likelihood[ci]}});
  }
  result.info = {{"sampler", "nuts"},
                 {"start", p.start},
                 {"chains", r.run.num_chains()},
                 {"chains_kept", kept},
                 {"chains_dying", r.num_dying},
                 {"chains_dropped", r.run.num_chains() - kept},
                 {"chains_stopped_early", stopped},
                 {"linear_model_rmse", r.linear_model_rmse},
                 {"warmup", p.warmup},
                 {"draws_per_chain", common},
                 {"lppd_window", p.monitor.window},
                 {"lppd_epsilon", p.monitor.epsilon},
                 {"divergences", r.run.num_divergent()},
                 {"ensemble_seconds", r.ensemble_seconds},
                 {"sampling_seconds", r.sampling_seconds},
                 {"held_out", "function-space monitoring uses the --valid file, the validation split, or else the training data"},
                 {"tuned", r.run.sampler_descriptions}};
  if (r.num_dying > 0)
    context.log(fmt::format("dei-nuts: {} of {} chains have a held-out RMSE worse than the linear model ({:.4g}){}",
                            r.num_dying, r.run.num_chains(), r.linear_model_rmse,
                            p.drop_dying ? "; dropped" : " (kept; --drop-dying drops them)"));
  std::filesystem::create_directories(cfg.out_dir);
  nlohmann::json monitor = {{"linear_model_rmse", r.linear_model_rmse},
                            {"lppd_window", p.monitor.window},
                            {"lppd_epsilon", p.monitor.epsilon},
                            {"chains", chains}};
  // Seed 003 Fig. 10 / App. B.2: R-hat^(2) across the kept chains per parameter and per held-out
  // point of the predictive mean (first output), for `uqnn diagnose`'s histogram.
  std::vector<Mat> kept_draws, kept_predictions;
  const Posterior& post = *context.posterior;
  for (int c = 0; c < r.run.num_chains() && common >= 4; ++c) {
    if (!r.kept[static_cast<std::size_t>(c)]) continue;
    const Mat draws = r.run.draws[static_cast<std::size_t>(c)].topRows(common);
    Mat predictions(common, context.validation_inputs.cols());
    for (Index s = 0; s < common; ++s)
      predictions.row(s) =
          post.likelihood().mean(post.model().forward(draws.row(s).head(post.model().num_params()).transpose(),
                                                      context.validation_inputs)).row(0);
    kept_draws.push_back(draws);
    kept_predictions.push_back(predictions);
  }
  if (kept_draws.size() >= 2) {
    const Vec ps = diagnostics::columnwise_rhat(kept_draws), fs = diagnostics::columnwise_rhat(kept_predictions);
    monitor["rhat"] = {{"parameter_space", std::vector<double>(ps.data(), ps.data() + ps.size())},
                       {"function_space", std::vector<double>(fs.data(), fs.data() + fs.size())}};
  }
  atomic_write_text(cfg.out_dir / "dei_chains.json", monitor.dump(1));
  if (cfg.figure_format != "none") {
    const auto path = cfg.out_dir / ("lppd_traces." + cfg.figure_format);
    plot_lppd_traces(path, r.lppd_traces, r.converged_at, r.dying,
                     fmt::format("dei-nuts ({} start): chain-wise expanding-window LPPD (seed 003 eq. 8)", p.start));
  }
  return result;
}

}  // namespace uqnn
