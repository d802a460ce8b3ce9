// `uqnn fit --method dei-nuts`: Deep Ensemble Initialized MCMC (seed 003 sec. 7.2), and `--method
// mile`: Microcanonical Langevin Ensembles (Sommer et al. 2025: the same ensemble starts, tuned MCLMC
// chains instead of NUTS, members stopped early on the held-out set), both through
// include/uqnn/hybrid/dei_mcmc.hpp. Their options are DeiOptions and MileOptions below; the members' optimiser comes
// from the training options (seed 003 App. D's defaults for dei-nuts, MILE's for mile), the held-out set
// from --valid or the validation split (loaded by the fit service).
//
// Besides the merged draws (each chain under its own index), the runner writes
// out_dir/dei_chains.json: per chain its start, kept / dying flag, held-out RMSE, the LM's RMSE,
// eq. 9 convergence time and the expanding-window LPPD trace (read by `uqnn diagnose DIR`).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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
#include "sampler_options.hpp"

namespace uqnn {

namespace {

/// DEI-MCMC's settings: DeiMcmcParams (seed 003's defaults) and the networks of --dei-start given.
struct DeiOptions {
  DeiMcmcParams params;
  /// Members = chains; unset: DeiMcmcParams' 12, or one chain per network with --dei-start given.
  std::optional<Index> members;
  std::filesystem::path dei_init;
  std::string checkpoint_every;  ///< as the chain options' (chain_run.hpp)
};

/// MILE's settings (Sommer et al. 2025, experiments/replicate_uci/mclmc.yaml of their code): 12
/// members, 50,000 warmup steps split 80/10/10 over MCLMC's three tuning phases, 10,000 steps thinned
/// by 10 to 1,000 draws per chain, no preconditioning, Var[E]/d from 0.5 down to 0.1, 100 effective
/// samples, initial step size 1e-3 and L = max(sqrt(K), 15).
struct MileOptions : DeiOptions {
  MclmcTuningParams tuning = mile_tuning();
  std::optional<double> energy_variance_end = 0.1;
  MileOptions() {
    params.warmup = 50000;
    params.draws = 10000;
    params.thin = 10;
  }
  static MclmcTuningParams mile_tuning() {
    MclmcTuningParams t;
    t.energy_variance_start = 0.5;
    t.energy_variance_end = 0.1;
    t.num_effective_samples = 100;
    t.diagonal_preconditioning = false;
    t.variance_fraction = 0.1;
    t.ess_fraction = 0.1;
    t.initial_step_size = 1e-3;
    return t;
  }
};

/// The options every ensemble-initialised sampler shares: members and where chains start.
template <typename O>
OptionSchema<O>& add_starts(OptionSchema<O>& s, const std::string& sampler) {
  return s
      .add_nested("members", [](O& o) -> std::optional<Index>& { return o.members; },
                  "ensemble members M = " + sampler + " chains (unset: 12, or one chain per network with --dei-start given)")
      .at_least(1)
      .cite("Sommer et al., sec. 7.2")
      .add_nested("dei_start", [](O& o) -> std::string& { return o.params.start; },
                  "chain starts: ensemble (DEI-MCMC) | prior (cold start) | given (--dei-init)")
      .one_of({"ensemble", "prior", "given"})
      .add_nested("dei_init", [](O& o) -> std::filesystem::path& { return o.dei_init; },
                  "with --dei-start given: the output directory of an earlier fit on the same data and model (e.g. --method "
                  "map or ens) or its draws.csv; one chain per network, or --members chains cycling through them")
      .existing()
      .add_nested("checkpoint_every", [](O& o) -> std::string& { return o.checkpoint_every; }, detail::kCheckpointEveryHelp)
      .checked_by(detail::check_checkpoint_interval);
}

/// ... and the held-out LPPD monitor (seed 003 eq. 8-9) with the dying-sampler filter.
template <typename O>
OptionSchema<O>& add_monitor(OptionSchema<O>& s) {
  return s.add_nested("lppd_window", [](O& o) -> Index& { return o.params.monitor.window; }, "window of the LPPD stopping rule")
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
}

const OptionSchema<DeiOptions>& dei_options() {
  using O = DeiOptions;
  static const auto s = [] {
    auto schema = OptionSchema<O>("dei", "DEI-MCMC (Deep Ensemble Initialized NUTS)");
    add_starts(schema, "NUTS")
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
        .cite("Sommer et al., sec. 3");
    add_monitor(schema);
    return schema;
  }();
  return s;
}

MclmcTuningParams& tuning_of(MileOptions& o) { return o.tuning; }
std::optional<double>& end_of(MileOptions& o) { return o.energy_variance_end; }

const OptionSchema<MileOptions>& mile_options() {
  using O = MileOptions;
  static const auto s = [] {
    auto schema = OptionSchema<O>("mile", "MILE (Microcanonical Langevin Ensembles)");
    add_starts(schema, "MCLMC")
        .add_nested("warmup", [](O& o) -> long& { return o.params.warmup; },
                    "MCLMC tuning steps per chain (80% step size, 10% variances, 10% L)")
        .at_least(0)
        .cite("Sommer et al. 2025, App. B")
        .add_nested("draws", [](O& o) -> long& { return o.params.draws; }, "sampling steps per chain")
        .at_least(0)
        .add_nested("thin", [](O& o) -> long& { return o.params.thin; }, "keep every thin-th step")
        .at_least(1);
    detail::add_mclmc_tuning(schema, &tuning_of, &end_of);
    add_monitor(schema);
    return schema;
  }();
  return s;
}

/// The members' training defaults of seed 003 App. D, as defaults of the fit's training options.
nlohmann::json dei_training_defaults() {
  const TrainParams t = DeiMcmcParams::default_ensemble().training;
  return {{"epochs", t.epochs}, {"weight_decay", t.optimizer.weight_decay}, {"lr", t.optimizer.learning_rate},
          {"optimizer", t.optimizer.name}, {"batch_size", t.batch_size}};
}

}  // namespace

/// MILE's members (Sommer et al. 2025, App. B): AdamW with learning rate 1e-3 and weight decay 1e-3,
/// minibatches of 32, at most 500 epochs, stopped after 10 without improvement on the held-out set.
nlohmann::json mile_training_defaults() {
  return {{"epochs", 500}, {"weight_decay", 1e-3}, {"lr", 1e-3}, {"optimizer", "adamw"}, {"batch_size", 32}, {"early_stopping", 10}};
}

/// DEI-MCMC and MILE: train the ensemble, run one chain per member, monitor and merge them.
MethodResult run_ensemble_initialized(const FitContext& context, const DeiOptions& o, DeiMcmcParams p,
                                      const std::string& method, const std::string& sampler) {
  const FitConfig& cfg = context.config;
  if (o.members) p.ensemble.members = *o.members;
  p.ensemble.threads = cfg.threads;
  p.ensemble.training = cfg.training;  // seed 003 App. D's defaults: dei_training_defaults()
  p.threads = cfg.threads;
  // The members' and the chains' checkpoints (run_fit sets the directory for methods that keep them).
  p.ensemble.checkpoint = detail::member_checkpoint(cfg);
  p.checkpoint.directory = cfg.checkpoint_dir;
  p.checkpoint.resume = cfg.resume;
  const detail::CheckpointInterval every = detail::parse_checkpoint_interval(o.checkpoint_every, "--checkpoint-every");
  p.checkpoint.every_iterations = every.iterations;
  p.checkpoint.every_seconds = every.seconds;
  // --dei-start given: the networks of an earlier fit (its out dir or its draws.csv, e.g. `uqnn fit
  // --method map` or `--method ens`: one row per network, columns chain, draw, parameter names).
  // One chain per network unless --members is given; then chain c starts at network c mod K.
  std::vector<Vec> given;
  if (p.start == "given") {
    if (o.dei_init.empty())
      throw InputError("--dei-start given needs --dei-init FILE (a fit's output directory or its draws.csv)");
    std::filesystem::path path = o.dei_init;
    if (std::filesystem::is_directory(path)) path = run_draws_path(path);
    if (!std::filesystem::exists(path)) throw InputError(fmt::format("--dei-init: {} does not exist", path.string()));
    const Draws networks = read_draws_file(path, context.posterior->layout());
    if (networks.empty()) throw InputError(fmt::format("--dei-init: {} holds no networks", path.string()));
    if (!o.members) p.ensemble.members = networks.size();
    for (Index c = 0; c < p.ensemble.members; ++c) given.push_back(networks.draw(c % networks.size()));
    context.log(fmt::format("{}: {} chains start at the {} network(s) of {}", method, p.ensemble.members, networks.size(),
                            path.string()));
  } else if (!o.dei_init.empty()) {
    throw InputError("--dei-init is used with --dei-start given only");
  }
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(method + ": " + e.what());
  }
  context.log(fmt::format("{}: {} members/chains from {}, {} warmup + {} draws each", method, p.ensemble.members, p.start,
                          p.warmup, p.draws));
  // Ctrl-C, SIGTERM and SIGHUP end the chains with what they drew (and their checkpoint); progress.
  const detail::ChainRunObservers observers(context);
  const DeiMcmcResult r = run_dei_mcmc(context.posterior, p, cfg.seed, context.validation_inputs, context.validation_targets,
                                       given, observers.list());

  MethodResult result;
  // Equal chain lengths for the InferenceData file: chains ended early by the monitor (eq. 9) are
  // cut to the shortest kept chain; dei_chains.json keeps every chain's full LPPD trace.
  long common = -1;
  for (int c = 0; c < r.run.num_chains(); ++c)
    if (r.kept[static_cast<std::size_t>(c)]) {
      const long n = r.run.draws[static_cast<std::size_t>(c)].rows();
      common = common < 0 ? n : std::min(common, n);
    }
  result.draws = r.merged(common);
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
  if (cfg.resume) result.info["resumed_at_iteration"] = r.run.resumed_at;  // per chain; 0: started afresh
  result.info.update({{"sampler", sampler},
                 {"start", p.start},
                 {"chains", r.run.num_chains()},
                 {"chains_kept", kept},
                 {"chains_dying", r.num_dying},
                 {"chains_dropped", r.run.num_chains() - kept},
                 {"chains_stopped_early", stopped},
                 {"linear_model_rmse", r.linear_model_rmse},
                 {"warmup", p.warmup},
                 {"draws_per_chain", common},
                 {"thin", p.thin},
                 {"lppd_window", p.monitor.window},
                 {"lppd_epsilon", p.monitor.epsilon},
                 {"divergences", r.run.num_divergent()},
                 {"ensemble_seconds", r.ensemble_seconds},
                 {"sampling_seconds", r.sampling_seconds},
                 {"held_out", "function-space monitoring uses the --valid file, the validation split, or else the training data"},
                 {"tuned", r.run.sampler_descriptions}});
  if (r.num_dying > 0)
    context.log(fmt::format("{}: {} of {} chains have a held-out RMSE worse than the linear model ({:.4g}){}", method,
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
                     fmt::format("{} ({} start): chain-wise expanding-window LPPD (Sommer et al. eq. 8)", method, p.start));
  }
  return result;
}

MethodResult run_dei_nuts(const FitContext& context) {
  const DeiOptions o = dei_options().read(context.config.method_settings);
  return run_ensemble_initialized(context, o, o.params, "dei-nuts", "nuts");
}

MethodResult run_mile(const FitContext& context) {
  const MileOptions o = mile_options().read(context.config.method_settings);
  DeiMcmcParams p = o.params;
  MclmcConfig mclmc;
  mclmc.tuning = o.tuning;
  mclmc.tuning.energy_variance_end = o.energy_variance_end.value_or(o.tuning.energy_variance_start);
  // MILE starts L at max(sqrt(K), 15) (Sommer et al. 2025, App. B).
  mclmc.tuning.initial_L = std::max(std::sqrt(static_cast<double>(context.posterior->dim())), 15.0);
  p.mclmc = mclmc;
  p.members_see_held_out = true;
  return run_ensemble_initialized(context, o, p, "mile", "mclmc");
}

}  // namespace uqnn

namespace uqnn {
namespace {
/// Both keep their finished members and their chains' states in OUT/checkpoint.
/// One chain per ensemble member (12 unless given), ceil(draws / thin) each.
KeptDraws member_chain_draws(const DeiOptions& o) {
  return chain_draws(static_cast<long>(o.members.value_or(o.params.ensemble.members)), o.params.draws, o.params.thin,
                     "fewer --draws or --members");
}

const bool registered_dei = register_method({
    .name = "dei-nuts",
    .summary = "Deep Ensemble Initialized NUTS: ensemble members as chain starts",
    .reference = "Sommer et al. 2024, sec. 7.2",
    .family = MethodFamily::Hybrid,
    .groups = {&dei_options().group()},
    .fit_defaults = dei_training_defaults(),
    .run = &run_dei_nuts,
    .kept_draws = [](const nlohmann::json& settings) { return member_chain_draws(dei_options().read(settings)); },
    // dei-nuts' chains are NUTS chains: their trees (the members' draws and working vectors are
    // counted for every method, services/memory.cpp).
    .memory = [](const FitConfig& config, Index num_params) {
      const DeiOptions o = dei_options().read(config.method_settings);
      const double chains = static_cast<double>(o.members.value_or(o.params.ensemble.members));
      return std::vector<MemoryItem>{detail::nuts_tree_memory(config, num_params, chains, o.params.nuts.kernel.max_depth)};
    },
    .sampler_traits = [](const nlohmann::json& settings) {
      return SamplerTraits{.max_tree_depth = dei_options().read(settings).params.nuts.kernel.max_depth};
    },
    .checkpoints = true,
    // Sommer et al.'s 100 warmup iterations are too few to adapt the step size here (the nuts demo
    // uses 300); the trees still reach depth 10, which is a note once the chains converged.
    .demo_preset = {{"warmup", 400}, {"draws", 400}}});
const bool registered_mile = register_method({
    .name = "mile",
    .summary = "Microcanonical Langevin Ensembles: ensemble members as starts of tuned MCLMC chains",
    .reference = "Sommer et al. 2025",
    .family = MethodFamily::Hybrid,
    .groups = {&mile_options().group()},
    .fit_defaults = mile_training_defaults(),
    .run = &run_mile,
    .kept_draws = [](const nlohmann::json& settings) { return member_chain_draws(mile_options().read(settings)); },
    .sampler_traits = [](const nlohmann::json&) { return SamplerTraits{.divergence_advice = detail::kMclmcDivergenceAdvice}; },
    .checkpoints = true});
}  // namespace
}  // namespace uqnn
