#pragma once
/// @file The registry of `uqnn fit --method` names. Each method lives in one file,
/// src/services/method_<name>.cpp, which declares its typed Params with their options
/// (services/options.hpp), its runner, and registers both with designated initialisers:
///
///     const bool registered_slice = register_method({
///         .name = "slice",
///         .summary = "coordinate-wise slice sampler (no gradients; widths adapted in warmup)",
///         .reference = "Neal 2003",
///         .family = MethodFamily::Mcmc,
///         .groups = {&detail::chain_options().group(), &detail::chain_start_options().group(), &slice_options().group()},
///         .sampler = &make_slice,
///         .runs_in_parts = true});
///
/// Nothing else lists the methods: the CLI flags, --help, the TOML keys, the Python keywords and
/// docstrings, `uqnn demo --method X` and the tests' method lists come from the registry. A name that
/// is not registered is an error, never a fallback.
#include <functional>
#include <string>
#include <vector>

#include "uqnn/core/log_density.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/memory.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn {

/// What kind of answer a method gives, which decides how its output is judged: chains by R-hat and
/// ESS (Mcmc, StochasticGradientMcmc, Hybrid), members by their spread (Ensemble), samples of a fitted
/// distribution (Approximation), one point (PointEstimate) or a closed form (GaussianProcess).
enum class MethodFamily { PointEstimate, Mcmc, StochasticGradientMcmc, Approximation, Ensemble, Hybrid, GaussianProcess };
std::string to_string(MethodFamily family);

/// What a sampling method's convergence summary needs to know at given settings.
struct SamplerTraits {
  int max_tree_depth = 0;         ///< NUTS: draws that reach this depth are counted (0: no trees)
  std::string divergence_advice = {};  ///< the divergence warning's remedy; empty: Stan's
};

struct MethodSpec {
  std::string name = {};       ///< --method value
  std::string summary = {};    ///< one line for --help
  std::string reference = {};  ///< the paper or manual it follows
  MethodFamily family = MethodFamily::Mcmc;
  /// Option groups the method reads besides the fit's (data, model, probability, training,
  /// output); a group shared by several methods (e.g. chains) is one object.
  std::vector<const OptionGroup*> groups = {};
  /// Defaults of fit-level options that differ for this method, name -> value (dei-nuts trains
  /// its members for Sommer et al.'s 5000 epochs).
  nlohmann::json fit_defaults = nlohmann::json::object();
  /// The fit: from the posterior to draws. May be empty when `sampler` is set: the fit then runs
  /// the sampler's chains from the chain-start option (each chain's own MAP fit by default).
  MethodRunner run = {};
  /// Samplers that need nothing but a log density and its gradient (nuts, hmc, mala, amcmc, slice):
  /// one chain sampler per chain from the method's settings. Such a method also samples any
  /// LogDensity, e.g. a Python callable (services/sample.hpp).
  std::function<SamplerFactory(std::shared_ptr<const LogDensity>, const nlohmann::json& settings)> sampler = nullptr;
  /// The draws it keeps at the given settings, for the memory estimate (null: one point estimate).
  std::function<KeptDraws(const nlohmann::json& settings)> kept_draws = nullptr;
  /// The method's own large structures at K = `num_params` (services/memory.hpp), beyond what
  /// every fit holds (data, draws kept, working vectors): a dense covariance, SWAG's columns.
  std::function<std::vector<MemoryItem>(const FitConfig&, Index num_params)> memory = nullptr;
  /// Tree depth and divergence advice at the given settings (null: no trees, Stan's advice).
  std::function<SamplerTraits(const nlohmann::json& settings)> sampler_traits = nullptr;
  /// Whether `--part k/n` can run part of its chains or members (each an independent stream
  /// Rng(seed, c)) for `uqnn merge` to join: the samplers of the multi-chain driver, ens and rms.
  bool runs_in_parts = false;
  /// Whether the method keeps what a resumed run needs in OUT/checkpoint (uqnn fit --resume): each
  /// chain's state, each epoch loop's, each member's (set by register_method for every method with
  /// an option --checkpoint-every), or nothing when a resumed run recomputes the fit bitwise (nngp).
  bool checkpoints = false;
  /// Whether it fits class labels (--likelihood bernoulli or categorical); the GP methods model a
  /// regression function only.
  bool handles_classification = true;
  /// Whether it runs on an external network (nn/external_model.hpp: a PyTorch module the Python
  /// package could not translate), which it sees only through the Model interface: outputs,
  /// gradients, Jacobian- and Hessian-vector products. A method that needs uqnn's own layers, or
  /// whose cost in network evaluations makes a Python call per evaluation the wrong tool, says why
  /// in `external_model_refusal`; run_method refuses it with that text.
  bool runs_on_external_model = false;
  std::string external_model_refusal = {};
  /// `uqnn demo --method X`: settings beyond the demo's shared ones (20 points, NUTS's 300 + 300
  /// iterations, the fan-in prior) that this method needs to end without a warning its own settings
  /// cause. Each entry says why in a comment where it is declared.
  nlohmann::json demo_preset = nlohmann::json::object();
};

/// Adds a method to the registry (call it from a namespace-scope initialiser of the method's own
/// file); returns true. Throws std::logic_error for a duplicate name, or when two of the method's
/// groups declare the same option, or one option name has two types across groups.
bool register_method(MethodSpec spec);
/// The registered method `name`; throws InputError naming the valid ones.
const MethodSpec& find_method(const std::string& name);
/// Every registered method, in name order.
std::vector<const MethodSpec*> registered_methods();
/// The methods with runs_in_parts, and whether `name` is one of them.
std::vector<std::string> methods_with_parts();
bool method_runs_in_parts(const std::string& name);
/// Runs the method of `context.config.method`.
MethodResult run_method(const FitContext& context);

/// Trains a point estimate of `context.posterior` from `start` (used by MAP and as pre-training);
/// `report_progress` false for trainings that run concurrently (each chain's start).
/// `checkpoint`: the training loop's (Adam / SGD) checkpoints; none by default.
TrainResult train_map(const FitContext& context, const Vec& start, Rng& rng, bool report_progress = true,
                      const EpochCheckpoint& checkpoint = {});

/// An epoch callback for train() that reports progress (epochs, losses) to the fit's reporter. The
/// last epoch may come before `total` (early stopping): the tracker is finished by the callback's
/// owner going out of scope.
std::function<bool(Index, double, double)> epoch_progress(const FitContext& context, Index total, const std::string& task);

}  // namespace uqnn
