// `uqnn fit --method dei-nuts`: Deep Ensemble Initialized MCMC (seed 003 sec. 7.2) through
// include/uqnn/hybrid/dei_mcmc.hpp. Its options are DeiOptions below; the members' optimiser comes
// from the training options (with seed 003 App. D's defaults for this method), the held-out set
// from --valid or the validation split (loaded by the fit service).
//
// Besides the merged draws (chain identity kept in chain_of_draw), the runner writes
// out_dir/dei_chains.json: per chain its start, kept / dying flag, held-out RMSE, the LM's RMSE,
// eq. 9 convergence time and the expanding-window LPPD trace (read by `uqnn diagnose DIR`).
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/layerwise.hpp"
#include "uqnn/plot/dei_figures.hpp"
#include "uqnn/hybrid/dei_mcmc.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/services/fit_output.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

/// DEI-MCMC's settings: DeiMcmcParams (seed 003's defaults) and the networks of --dei-start given.
struct DeiOptions {
  DeiMcmcParams params;
  /// Members = chains; unset: DeiMcmcParams' 12, or one chain per network with --dei-start given.
  std::optional<Index> members;
  std::filesystem::path dei_init;
};

const OptionSchema<DeiOptions>& dei_options() {
  using O = DeiOptions;
  static const auto s =
      OptionSchema<O>("dei", "DEI-MCMC (Deep Ensemble Initialized NUTS)")
          .add("members", &O::members,
               "ensemble members M = NUTS chains (unset: 12, or one chain per network with --dei-start given)")
          .at_least(1)
          .cite("Sommer et al., sec. 7.2")
          .add_nested("dei_start", [](O& o) -> std::string& { return o.params.start; },
                      "chain starts: ensemble (DEI-MCMC) | prior (cold start) | given (--dei-init)")
          .one_of({"ensemble", "prior", "given"})
          .add("dei_init", &O::dei_init,
               "with --dei-start given: the output directory of an earlier fit on the same data and model (e.g. --method "
               "map or ens) or its draws.csv; one chain per network, or --members chains cycling through them")
          .existing()
          .add_nested("warmup", [](O& o) -> long& { return o.params.warmup; }, "NUTS warmup iterations per chain")
          .at_least(0)
          .cite("Sommer et al., App. C.4")
          .add_nested("draws", [](O& o) -> long& { return o.params.draws; }, "kept draws per chain")
          .at_least(0)
          .add_nested("max_depth", [](O& o) -> int& { return o.params.nuts.kernel.max_depth; }, "NUTS maximum tree depth")
          .at_least(1)
          .at_most(30)
          .add_nested("target_accept", [](O& o) -> double& { return o.params.nuts.warmup.dual_averaging.target_accept; },
                      "warmup's target acceptance statistic")
          .above(0)
          .below(1)
          .cite("Sommer et al., sec. 3")
          .add_nested("lppd_window", [](O& o) -> Index& { return o.params.monitor.window; }, "window of the LPPD stopping rule")
          .at_least(1)
          .cite("Sommer et al., eq. 9")
          .add_nested("lppd_epsilon", [](O& o) -> double& { return o.params.monitor.epsilon; }, "epsilon of the LPPD stopping rule")
          .above(0)
          .add_nested("lppd_min_draws", [](O& o) -> Index& { return o.params.monitor.min_draws; },
                      "with --stop-converged, never stop a chain before this many draws")
          .at_least(0)
          .add_nested("stop_converged", [](O& o) -> bool& { return o.params.monitor.stop_converged; },
                      "end a chain once its held-out LPPD has converged (eq. 9)")
          .add_nested("drop_dying", [](O& o) -> bool& { return o.params.drop_dying; },
                      "drop chains whose held-out RMSE is worse than a linear model's (always counted)");
  return s;
}

/// The members' training defaults of seed 003 App. D, as defaults of the fit's training options.
nlohmann::json dei_training_defaults() {
  const TrainParams t = DeiMcmcParams::default_ensemble().training;
  return {{"epochs", t.epochs}, {"weight_decay", t.optimizer.weight_decay}, {"lr", t.optimizer.learning_rate},
          {"optimizer", t.optimizer.name}, {"batch_size", t.batch_size}};
}

}  // namespace

MethodResult run_dei_nuts(const FitContext& context) {
  const FitConfig& cfg = context.config;
  const DeiOptions o = dei_options().read(cfg.method_settings);
  DeiMcmcParams p = o.params;
  if (o.members) p.ensemble.members = *o.members;
  p.ensemble.threads = cfg.threads;
  p.ensemble.training = cfg.training;  // seed 003 App. D's defaults: dei_training_defaults()
  p.threads = cfg.threads;
  // --dei-start given: the networks of an earlier fit (its out dir or its draws.csv, e.g. `uqnn fit
  // --method map` or `--method ens`: one row per network, columns chain, draw, parameter names).
  // One chain per network unless --members is given; then chain c starts at network c mod K.
  std::vector<Vec> given;
  if (p.start == "given") {
    if (o.dei_init.empty())
      throw InputError("--dei-start given needs --dei-init FILE (a fit's output directory or its draws.csv)");
    std::filesystem::path path = o.dei_init;
    if (std::filesystem::is_directory(path)) path /= "draws.csv";
    if (!std::filesystem::exists(path)) throw InputError(fmt::format("--dei-init: {} does not exist", path.string()));
    const std::vector<Vec> networks = read_draws_csv_as_vectors(path, context.posterior->layout());
    if (networks.empty()) throw InputError(fmt::format("--dei-init: {} holds no networks", path.string()));
    if (!o.members) p.ensemble.members = static_cast<Index>(networks.size());
    for (Index c = 0; c < p.ensemble.members; ++c)
      given.push_back(networks[static_cast<std::size_t>(c) % networks.size()]);
    context.log(fmt::format("dei-nuts: {} chains start at the {} network(s) of {}", p.ensemble.members, networks.size(),
                            path.string()));
  } else if (!o.dei_init.empty()) {
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
  if (!world_communicator()->is_root()) return result;  // rank 0 alone writes files (MPI)
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
                     fmt::format("dei-nuts ({} start): chain-wise expanding-window LPPD (Sommer et al. eq. 8)", p.start));
  }
  return result;
}

}  // namespace uqnn

namespace uqnn {
namespace {
const bool registered = register_method({"dei-nuts", "Deep Ensemble Initialized NUTS: ensemble members as chain starts",
                                         "Sommer et al., sec. 7.2", {&dei_options().group()}, dei_training_defaults(), &run_dei_nuts});
}  // namespace
}  // namespace uqnn
