#pragma once
/// @file The fit service behind `uqnn fit`, `uqnn demo` and the Python module: data -> split ->
/// standardise -> model + posterior -> method -> draws -> predictions, metrics, files, figures.
///
/// Every method (MAP, MCMC, approximations) returns weight draws; everything after that is shared.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/draws.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/registry.hpp"
#include "uqnn/core/reporter.hpp"
#include "uqnn/data/dataset.hpp"
#include "uqnn/data/split.hpp"
#include "uqnn/data/standardizer.hpp"
#include "uqnn/diagnostics/warnings.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/optim/trainer.hpp"
#include "uqnn/nn/external_model.hpp"
#include "uqnn/nn/non_centred_model.hpp"
#include "uqnn/prob/posterior.hpp"
#include "uqnn/services/conformal.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn {

/// Network architecture.
struct ModelConfig {
  std::string kind = "mlp";          ///< mlp | rnet | cnn
  std::vector<Index> hidden{10, 10};  ///< mlp hidden widths (empty: Linear model)
  bool bias = true;                  ///< false: the Linear model f(x) = W x (needs hidden empty)
  std::string activation = "tanh";
  std::string init = "auto";         ///< auto (glorot for tanh-like, he for relu-like) | glorot | he | torch
  Index rnet_width = 3, rnet_layers = 3;
  int rnet_weight_order = 0;         ///< -1 = non-parametric
  std::string precision = "float64"; ///< float64 | float32: arithmetic of the network's passes
  std::string layers;                ///< cnn: the layer list (nn/cnn_layer_list.hpp)
  std::vector<Index> input_shape;    ///< cnn: C, H, W of each example's inputs
};

/// Likelihood and prior.
struct ProbabilityConfig {
  std::string likelihood = "gaussian";  ///< gaussian | heteroscedastic | bernoulli | categorical
  std::optional<double> noise;          ///< Gaussian noise sd in the targets' units; unset = learned
  /// Prior on a learned noise sd in the targets' units (NoiseSdPrior::parse); empty = log sigma ~
  /// N(0, 3^2) in standardised units.
  std::string noise_prior;
  Index num_classes = 2;                ///< categorical
  /// gaussian | fan-in | mixture | laplace | flat | horseshoe | regularized-horseshoe | ard (the last
  /// three wrap the network in a NonCentredModel: nn/non_centred_model.hpp)
  std::string prior = "gaussian";
  double prior_sigma = 1.0;             ///< gaussian sd, fan-in scale, laplace scale, or shrinkage priors' bias sd
  double mixture_pi = 0.5, mixture_sigma1 = 1.0, mixture_sigma2 = 0.1;
  std::string shrinkage_groups = "weight";  ///< horseshoe: a local scale per weight, unit or layer
  ShrinkageSpec shrinkage;                ///< the shrinkage priors' hyperparameters (kind, groups, bias_sd set from the above)
};

struct DataConfig {
  std::filesystem::path path;             ///< CSV with a header
  std::optional<Dataset> dataset;         ///< in-memory data instead of `path` (demo, Python)
  std::vector<std::string> targets;       ///< default: the last column
  std::vector<std::string> inputs;        ///< default: every other column
  bool standardize = true;
  double validation_fraction = 0.0;       ///< 0: validate on the training data (as QUiNN)
  double test_fraction = 0.0;
  std::uint64_t split_seed = 0;
  std::filesystem::path train_indices, test_indices;  ///< split files (override the fractions)
  /// random (the fractions) | gap (Foong et al. 2019: the middle third of input --split-index held
  /// out for testing) | uci (the standard split --split-index of Hernández-Lobato and Adams 2015:
  /// splits/<data stem>/train_K.txt and test_K.txt beside the data file, as data/uci ships them)
  std::string split = "random";
  Index split_index = 0;
  std::filesystem::path validation_path;  ///< held-out CSV (same columns) used as validation data instead of a split
  /// Rows held out of training for conformal calibration (--conformal): this share of all rows,
  /// drawn from the training rows with --split-seed, or the rows a file lists.
  double calibration_fraction = 0.0;
  std::filesystem::path calibration_indices;
  /// Image data (--data an IDX, .npy or .npz file; data/image_files.hpp): the labels file of an
  /// IDX or .npy images file (default: MNIST's name convention beside an IDX file).
  std::filesystem::path labels;
  /// Test rows from a file of the data's form (CSV with the same columns, or images of the same
  /// shape) instead of a split of --data; with its labels file (IDX / .npy).
  std::filesystem::path test_path, test_labels;
  /// Out-of-distribution inputs (CSV with the input columns, or images of the same shape, labels
  /// not needed): metrics.json's "ood" section scores how well the predictive's entropy and mutual
  /// information tell them from the test rows (classification).
  std::filesystem::path ood_path;
  std::optional<Mat> ood_inputs;  ///< in-memory OOD inputs [input_dim, n] instead of `ood_path` (Python)
};

/// Everything `uqnn fit` does, as make_fit_config() builds it from the options' declarations
/// (services/options.hpp): the fit-level settings as typed structs, the method's own as checked
/// option values that its runner reads into its typed Params.
struct FitConfig {
  DataConfig data;
  ModelConfig model;
  ProbabilityConfig probability;
  TrainParams training;
  ConformalConfig conformal;  ///< --conformal: calibration after the method, recorded in model.json
  std::string method = "map";
  std::uint64_t seed = 0;
  int threads = 0;                    ///< chains / members in parallel; 0 = automatic
  std::filesystem::path out_dir = "uqnn-out";
  std::string figure_format = "png";  ///< png | svg | none
  bool quiet = false;                 ///< no progress messages on stderr
  std::string idata_extras = "auto";  ///< posterior.nc's data groups: auto | always | never
  /// always | never: predict the training rows (predictions.csv, metrics.json's "train" split,
  /// posterior.nc's extras). never spares a network's forward pass per draw per training image.
  std::string train_predictions = "always";
  std::string draws_format = "auto";  ///< draws.csv or draws.npy (fit_output.hpp's draws_format_kinds)
  double max_memory_gb = 0.0;         ///< stop before a fit whose estimate is above this; 0 = 80% of physical memory
  /// Where messages and progress go instead of stderr (the Python module's logging and tqdm).
  std::shared_ptr<Reporter> reporter;
  /// Part k of n of the run's chains / members (Part::parse; "1/1" = all); `uqnn merge` joins parts.
  std::string part = "1/1";
  int shards = 1;                     ///< MPI ranks per chain that share its data rows (--shards)
  /// Every option of the method's own groups (name -> checked value, defaults filled in).
  nlohmann::json method_settings = nlohmann::json::object();
  /// How the fit was asked for (command line, config file, Python call) and every setting used:
  /// model.json records it so a run can be repeated from its directory.
  nlohmann::json record = nlohmann::json::object();
  /// Continue the stopped run whose chains' states are in out_dir/checkpoint (uqnn fit --resume;
  /// resume_fit_config makes the rest of the config from the run's own record).
  bool resume = false;
  /// Set by run_fit for methods that run chains (those with --checkpoint-every): out_dir/checkpoint
  /// (beside the staged files, so that it outlives a killed run).
  std::filesystem::path checkpoint_dir;
  /// Where training and chains start instead of the network initialisation (the Python module's
  /// BNN.from_torch: the user's trained network), network parameters then likelihood extras.
  std::optional<Vec> start;
  /// The network when it is evaluated outside uqnn (the Python package's PyTorch modules it cannot
  /// translate; nn/external_model.hpp) instead of the one `model` describes.
  std::shared_ptr<const ExternalNetwork> external_network;
};

/// What a door (CLI, TOML, Python, C++) asks for: the values the user gave, and the door's own
/// defaults for options the user did not give (e.g. `uqnn demo` runs NUTS with 300 draws).
struct FitRequest {
  std::vector<GivenOption> given;
  /// Option name -> value, checked like given ones; ignored where the method does not read the option.
  nlohmann::json preset = nlohmann::json::object();
  /// Options of these methods are accepted (and ignored) even when `method` does not read them
  /// (`uqnn compare` passes one option list to several methods).
  std::vector<std::string> also_accept_methods;
  nlohmann::json invocation;  ///< recorded in model.json: {"command": ...} or {"python": ...}
};

/// The option groups a fit with `method` reads: data, model, probability, training, output, then
/// the method's own (--help, the Python docstrings and the TOML reader are made from these). Throws
/// InputError for an unknown method.
std::vector<OptionGroup> fit_option_groups(const std::string& method);
/// Every option of every method (name -> the groups declaring it), for the CLI's flags.
std::vector<OptionGroup> all_option_groups();

/// Checks every given option (known, applies to the method, type, range, choices) and builds the
/// config; errors are InputError starting with the option's `where`.
FitConfig make_fit_config(const FitRequest& request);
/// The config that continues the stopped run in `dir` (uqnn fit --resume DIR): its settings as
/// recorded in dir/checkpoint/fit.json, with `overrides` applied, which may only be options that do
/// not change the draws (threads, quiet, checkpoint_every). Throws InputError when `dir` holds no
/// checkpoint or an override would change the run.
FitConfig resume_fit_config(const std::filesystem::path& dir, const FitRequest& overrides);
/// The request that repeats a run from its recorded `settings` (model.json's or a checkpoint's):
/// the settings that differ from their defaults, as given options named "<source>: settings.<name>",
/// except those in `skip`.
FitRequest request_from_settings(const nlohmann::json& settings, const std::string& source, const std::set<std::string>& skip);
/// C++ convenience: options by name, e.g. {{"method", "nuts"}, {"chains", 2}, {"draws", 100}}.
FitConfig fit_config_from_options(const nlohmann::json& options);

/// Everything a method needs; the posterior is in standardised units.
struct FitContext {
  const FitConfig& config;
  std::shared_ptr<const Posterior> posterior;
  /// Standardised; the posterior's training data when there is no validation split (references:
  /// the data are not copied for each method).
  const Mat& validation_inputs;
  const Mat& validation_targets;
  bool has_validation = false;                ///< a validation split or --valid file (else the above are the training data)
  std::shared_ptr<Reporter> reporter;  ///< messages and progress (never null)
  void log(const std::string& message) const { reporter->message(MessageLevel::Info, message); }
  /// The point training and chains start from: config.start when given, else the network
  /// initialisation drawn from `rng`.
  Vec initial_point(Rng& rng) const {
    if (!config.start) return posterior->initial_point(rng);
    if (config.start->size() != posterior->dim())
      throw InputError("the start point has " + std::to_string(config.start->size()) + " parameters; the model has " +
                       std::to_string(posterior->dim()));
    return *config.start;
  }
};

/// What a method returns: weight draws (network parameters followed by likelihood extras).
struct MethodResult {
  Draws draws;  ///< by chain or member, with the sampler's statistics (MCMC)
  nlohmann::json info = nlohmann::json::object();  ///< method summary for metrics.json
  std::vector<std::pair<std::string, std::vector<double>>> history;  ///< curves for history.<ext>
  std::string history_label = "loss";
  /// Reasons not to trust the result that the method itself found (an optimiser that did not
  /// converge); metrics.json "warnings" and the console, with the diagnostics' own.
  std::vector<diagnostics::Warning> warnings;
  /// Predictions evaluate the draws with this model instead of the posterior's (Laplace's GLM
  /// predictive: the network linearised at the MAP); it is also what model.json records.
  std::shared_ptr<const Model> predictive_model;
  /// The posterior the draws belong to when it is not the fit's (nngp: a Gaussian process written as
  /// a one-parameter model, nn/nngp_posterior_model.hpp); its layout names draws.csv's columns.
  std::shared_ptr<const Posterior> posterior;
};

using MethodRunner = std::function<MethodResult(const FitContext&)>;

/// Methods `uqnn fit --method` knows, by name (services/methods.hpp registers them).
std::vector<std::string> method_names();

/// The optimiser's report for metrics.json: converged, iterations, the final gradient norm of the
/// full objective and why it stopped.
nlohmann::json training_info(const ConvergenceReport& report);
/// The reports of several optimisations (ensemble members): how many converged, the largest
/// final gradient norm, and each member's report.
nlohmann::json training_info(const std::vector<ConvergenceReport>& reports);
/// A "not_converged" warning when an optimisation did not converge (a stop signal or early
/// stopping, both asked for, are not warned about); `what` names what was trained.
std::optional<diagnostics::Warning> not_converged_warning(const std::vector<ConvergenceReport>& reports,
                                                          const std::string& what);

/// Summary of a finished fit (also written to out_dir/metrics.json).
struct FitReport {
  nlohmann::json metrics;
  std::string summary_text;  ///< MCMC convergence table (empty for other methods)
  std::vector<std::filesystem::path> files;
  std::vector<std::string> notes;  ///< what the user may want to know about the files (e.g. a group left out)
  std::vector<std::string> figure_warnings;  ///< figures that could not be drawn (the data files are written)
  bool not_finite = false;  ///< draws or predictions hold NaN or infinity (metrics.json warns; the CLI exits 3)
};

/// Runs the fit; `method`, when given, replaces the registered method's runner (uqnn merge reads the
/// parts' draws through it, so the rest of the pipeline is the fit's own).
FitReport run_fit(const FitConfig& config, const MethodRunner& method = {});

/// The rows of each split for data with `inputs` ([input_dim, n]): --split gap or uci, split files
/// (--train-indices / --test-indices), else the fractions with --split-seed, else every row for training; then the calibration rows
/// (--calibration-fraction / --calibration-indices) taken out of the training rows. Throws
/// InputError when both are given, or when calibration rows are test or validation rows.
Split choose_split(const DataConfig& config, const Mat& inputs);

/// What a fit works on, before any method runs: the data, its split, the standardiser fitted on the
/// training rows, the posterior (standardised units) and the standardised validation data. run_fit
/// builds it; the Python module's uqnn.LogDensity exposes its posterior to other samplers.
struct FitProblem {
  Dataset data;  ///< original units, all rows
  Split split;
  Standardizer standardizer;
  std::shared_ptr<Posterior> posterior;  ///< not const: --shards distributes its rows
  Dataset validation_std;  ///< empty when there is no validation split (then the posterior's training rows serve)
  std::optional<Mat> ood_inputs;  ///< out-of-distribution inputs, original units (--ood-data)
  bool image_files = false;       ///< --data is an image file (IDX, .npy, .npz), not a CSV table
};
FitProblem make_fit_problem(const FitConfig& config);

/// Predictions of a saved fit on new data: writes a CSV and returns its metrics (when targets exist).
struct PredictConfig {
  std::filesystem::path model_dir;
  std::filesystem::path data;
  std::filesystem::path out;  ///< default: model_dir / "predictions_<data stem>.csv"
  std::uint64_t seed = 0;
  std::filesystem::path labels;    ///< labels of image data (IDX / .npy; see DataConfig::labels)
  std::filesystem::path ood_data;  ///< out-of-distribution inputs: the metrics get an "ood" section
};
FitReport run_predict(const PredictConfig& config);

/// Builds the network a ModelConfig describes.
std::shared_ptr<Model> build_model(const ModelConfig& config, Index input_dim, Index output_dim);
/// Builds the likelihood and prior; `target_scale` converts a noise sd in target units to standardised units.
std::shared_ptr<Likelihood> build_likelihood(const ProbabilityConfig& config, double target_scale);
/// A shrinkage prior (--prior horseshoe | regularized-horseshoe | ard) wraps the network in its
/// NonCentredModel; any other prior leaves it alone.
std::shared_ptr<Model> with_shrinkage(const ProbabilityConfig& config, std::shared_ptr<Model> network);
/// The prior on `model`'s parameters (a shrinkage prior needs the model with_shrinkage made).
std::shared_ptr<Prior> build_prior(const ProbabilityConfig& config, const Model& model);

/// A network of `--model`: how a ModelConfig becomes one.
struct ModelKind {
  std::string name = {};
  std::string summary = {};
  std::function<std::shared_ptr<Model>(const ModelConfig&, Index input_dim, Index output_dim)> build = nullptr;
};
const Registry<ModelKind>& model_kinds();

/// A likelihood of `--likelihood`.
struct LikelihoodKind {
  std::string name = {};
  std::string summary = {};
  bool classification = false;  ///< targets are class labels (never standardised; accuracy, Brier, ECE)
  /// `target_scale` converts a noise sd in target units to standardised units.
  std::function<std::shared_ptr<Likelihood>(const ProbabilityConfig&, double target_scale)> build = nullptr;
};
const Registry<LikelihoodKind>& likelihood_kinds();
/// Whether `--likelihood name` models class labels.
bool is_classification(const std::string& likelihood);

/// A prior of `--prior`.
struct PriorKind {
  std::string name = {};
  std::string summary = {};
  std::string reference = {};
  /// A hierarchical shrinkage prior: the network is wrapped in its NonCentredModel (with_shrinkage)
  /// and the prior is that model's hierarchy.
  bool shrinkage = false;
  /// The prior on a network's parameters (null for shrinkage priors, which the model carries).
  std::function<std::shared_ptr<Prior>(const ProbabilityConfig&, const ParamLayout&)> build = nullptr;
};
const Registry<PriorKind>& prior_kinds();

}  // namespace uqnn
