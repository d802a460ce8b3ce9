#pragma once
/// @file The fit service behind `uqnn fit`, `uqnn demo` and the Python module: data -> split ->
/// standardise -> model + posterior -> method -> draws -> predictions, metrics, files, figures.
///
/// Every method (MAP, MCMC, approximations) returns weight draws; everything after that is shared.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/data/dataset.hpp"
#include "uqnn/data/split.hpp"
#include "uqnn/data/standardizer.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/optim/trainer.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

/// Network architecture.
struct ModelConfig {
  std::string kind = "mlp";          ///< mlp | rnet
  std::vector<Index> hidden{10, 10};  ///< mlp hidden widths (empty: Linear model)
  std::string activation = "tanh";
  std::string init;                  ///< glorot | he | torch; empty = default for the activation
  Index rnet_width = 3, rnet_layers = 3;
  int rnet_weight_order = 0;         ///< -1 = non-parametric
  std::string precision = "float64"; ///< float64 | float32: arithmetic of the network's passes
};

/// Likelihood and prior.
struct ProbabilityConfig {
  std::string likelihood = "gaussian";  ///< gaussian | heteroscedastic | bernoulli | categorical
  std::optional<double> noise;          ///< Gaussian noise sd in the targets' units; unset = learned
  Index num_classes = 2;                ///< categorical
  std::string prior = "gaussian";       ///< gaussian | fan-in | mixture | laplace
  double prior_sigma = 1.0;             ///< gaussian sd, fan-in scale, or laplace scale
  double mixture_pi = 0.5, mixture_sigma1 = 1.0, mixture_sigma2 = 0.1;
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
  std::filesystem::path validation_path;  ///< held-out CSV (same columns) used as validation data instead of a split
};

/// Settings of the MCMC methods (amcmc, hmc, mala, nuts, sgld, sghmc, psgld).
struct McmcConfig {
  int chains = 4;
  int threads = 0;            ///< 0 = min(chains, hardware threads)
  long warmup = 1000;         ///< warmup (adaptation) / burn-in iterations per chain
  long draws = 1000;          ///< sampling iterations per chain
  long thin = 1;
  std::string init = "map";   ///< map (each chain from its own MAP fit, as QUiNN's zflag) | random | prior
  double step_size = 0.0;     ///< initial / fixed step size; 0 = automatic (Stan's heuristic)
  int num_steps = 10;         ///< hmc: leapfrog steps L
  int max_depth = 10;         ///< nuts: maximum tree depth
  double target_accept = 0.8; ///< hmc / nuts warmup target (mala: 0.574)
  std::string metric = "diag";  ///< diag | dense | unit
  bool adapt = true;          ///< warmup adaptation of step size and metric
  double jitter = 0.0;        ///< step-size jitter fraction
  double am_gamma = 0.1;      ///< adaptive Metropolis gamma
  long am_t0 = 100, am_t_adapt = 1000;
  // Stochastic-gradient MCMC.
  Index batch_size = 0;       ///< 0 = full batch
  std::string schedule = "constant";  ///< constant | polynomial | step
  double schedule_b = 1.0, schedule_gamma = 0.55;  ///< polynomial a (b + t)^-gamma with a = step_size
  double decay = 0.9;         ///< step decay factor
  long decay_every = 5000;    ///< step decay period
  double friction = 0.1;      ///< sghmc friction C
  Index sghmc_steps = 1;      ///< sghmc / fsghmc gradient steps per draw (m of seed 002 Alg. 2)
  bool resample_momentum = false;  ///< sghmc / fsghmc: z ~ N(0, M) before each draw's m steps (Alg. 2)
  double psgld_alpha = 0.99, psgld_lambda = 1e-5;  ///< psgld RMSprop preconditioner
};

struct FitConfig {
  DataConfig data;
  ModelConfig model;
  ProbabilityConfig probability;
  std::string method = "map";
  TrainParams training;
  McmcConfig mcmc;
  std::uint64_t seed = 0;
  std::filesystem::path out_dir = "uqnn-out";
  std::string figure_format = "png";  ///< png | svg | none
  bool progress = false;              ///< progress on stderr
  /// Method-specific settings (e.g. chains, warmup) as given on the command line or in TOML.
  nlohmann::json method_options = nlohmann::json::object();
};

/// Everything a method needs; the posterior is in standardised units.
struct FitContext {
  const FitConfig& config;
  std::shared_ptr<const Posterior> posterior;
  Mat validation_inputs, validation_targets;  ///< standardised; equal to training data when no split
  std::function<void(const std::string&)> log;  ///< one-line messages to stderr
};

/// What a method returns: weight draws (network parameters followed by likelihood extras).
struct MethodResult {
  std::vector<Vec> draws;
  std::vector<Index> chain_of_draw;  ///< chain / member index of each draw (empty: one chain)
  std::vector<DrawStats> stats;      ///< sampler statistics per draw (MCMC only)
  nlohmann::json info = nlohmann::json::object();  ///< method summary for metrics.json
  std::vector<std::pair<std::string, std::vector<double>>> history;  ///< curves for history.<ext>
  std::string history_label = "loss";
  /// Predictions evaluate the draws with this model instead of the posterior's (Laplace's GLM
  /// predictive: the network linearised at the MAP); it is also what model.json records.
  std::shared_ptr<const Model> predictive_model;
};

using MethodRunner = std::function<MethodResult(const FitContext&)>;

/// Methods `uqnn fit --method` knows, by name.
std::vector<std::string> method_names();
/// Runs one method; throws InputError for an unknown name.
MethodResult run_method(const std::string& name, const FitContext& context);

/// Summary of a finished fit (also written to out_dir/metrics.json).
struct FitReport {
  nlohmann::json metrics;
  std::string summary_text;  ///< MCMC convergence table (empty for other methods)
  std::vector<std::filesystem::path> files;
};

FitReport run_fit(const FitConfig& config);

/// Predictions of a saved fit on new data: writes a CSV and returns its metrics (when targets exist).
struct PredictConfig {
  std::filesystem::path model_dir;
  std::filesystem::path data;
  std::filesystem::path out;  ///< default: model_dir / "predictions_<data stem>.csv"
  std::uint64_t seed = 0;
};
FitReport run_predict(const PredictConfig& config);

/// Builds the network a ModelConfig describes.
std::shared_ptr<Model> build_model(const ModelConfig& config, Index input_dim, Index output_dim);
/// Builds the likelihood and prior; `target_scale` converts a noise sd in target units to standardised units.
std::shared_ptr<Likelihood> build_likelihood(const ProbabilityConfig& config, double target_scale);
std::shared_ptr<Prior> build_prior(const ProbabilityConfig& config, const ParamLayout& layout);

}  // namespace uqnn
