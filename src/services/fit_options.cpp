// The options of a fit that every method shares (run and output, data, model, probability,
// training), declared once here, and make_fit_config(): the one place where given values — from
// the command line, a TOML file, Python keywords or C++ — are checked and turned into a FitConfig.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/fit_output.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

/// "mlp (fully connected network), rnet (...)": a registry's names with their summaries, for --help.
template <typename Entry>
std::string describe_kinds(const Registry<Entry>& kinds) {
  std::vector<std::string> parts;
  for (const Entry& e : kinds) parts.push_back(e.name + " (" + e.summary + ")");
  return fmt::format("{}", fmt::join(parts, ", "));
}

/// "horseshoe: Carvalho et al. 2010; ard: Neal 1996": the references of the entries that have one.
template <typename Entry>
std::string cite_kinds(const Registry<Entry>& kinds) {
  std::vector<std::string> parts;
  for (const Entry& e : kinds)
    if (!e.reference.empty()) parts.push_back(e.name + ": " + e.reference);
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::vector<std::string> with_auto(std::vector<std::string> names) {
  names.insert(names.begin(), "auto");
  return names;
}

const OptionSchema<FitConfig>& output_schema() {
  static const auto s =
      OptionSchema<FitConfig>("output", "Run and output")
          .add("method", &FitConfig::method, "inference method (see the method groups below)")
          .add("seed", &FitConfig::seed, "random seed: the same seed gives the same draws whatever the thread count")
          .at_least(0)
          .add("threads", &FitConfig::threads, "threads for chains and ensemble members (0 = automatic); results do not depend on it")
          .at_least(0)
          .add("out", &FitConfig::out_dir, "output directory")
          .add("figure", &FitConfig::figure_format, "figure format")
          .one_of({"png", "svg", "none"})
          .add("quiet", &FitConfig::quiet, "no progress messages on stderr")
          .add("idata_extras", &FitConfig::idata_extras,
               "observed_data, log_likelihood (pointwise, for az.loo / az.compare) and posterior_predictive in "
               "posterior.nc, on the training rows: auto writes each when it holds at most 5 million values "
               "(draws x rows)")
          .one_of({"auto", "always", "never"})
          .add("train_predictions", &FitConfig::train_predictions,
               "predict the training rows too (predictions.csv, metrics.json's train split, posterior.nc's extras): "
               "never spares a forward pass per draw per training row (60,000 images x 10 draws), and keeps the test, "
               "validation and calibration rows' predictions")
          .one_of({"always", "never"})
          .add("draws_format", &FitConfig::draws_format,
               "the draws' file: csv (draws.csv, for spreadsheets and ArviZ), npy (draws.npy, float64 [draws, K], "
               "with draws_stats.csv for the chains and sampler statistics) or auto (npy above 100,000 parameters)")
          .one_of(draws_format_kinds().names())
          .add("max_memory_gb", &FitConfig::max_memory_gb,
               "stop at once when the fit's estimated memory (data, draws kept, working vectors, the method's "
               "matrices) is above this many GiB; 0 = 80% of physical memory")
          .at_least(0)
          .add("part", &FitConfig::part,
               "k/n: run only part k of n of the chains (c = k-1, k-1+n, ...) or ensemble members into --out; "
               "`uqnn merge` joins the parts' directories into one run")
          .add("shards", &FitConfig::shards,
               "MPI ranks per chain, each evaluating the log likelihood on its block of the training rows or of each minibatch (mpirun -np "
               "chains_groups*shards); the draws match the unsharded run to rounding, not bitwise")
          .at_least(1);
  return s;
}

const OptionSchema<DataConfig>& data_schema() {
  static const auto s =
      OptionSchema<DataConfig>("data", "Data")
          .add("data", &DataConfig::path,
               "CSV file with a header row, or images: an IDX file (gzipped or not; labels by --labels or MNIST's file "
               "names), a .npy array (labels by --labels) or a .npz archive (arrays x/y or x_train/y_train), told apart "
               "by content (docs/networks.md)")
          .existing()
          .add("labels", &DataConfig::labels,
               "image data: the labels (IDX or .npy) of an IDX or .npy --data (default for IDX: ...-labels-idx1-ubyte[.gz] "
               "beside ...-images-idx3-ubyte[.gz])")
          .existing()
          .add("target", &DataConfig::targets, "target column(s) (default: the last column)")
          .add("inputs", &DataConfig::inputs, "input columns, comma separated (default: all but the targets)")
          .add("standardize", &DataConfig::standardize,
               "standardise inputs and targets on the training rows (--no-standardize: priors are in the data's units)")
          .add("valid_fraction", &DataConfig::validation_fraction, "fraction of rows held out for validation (model selection)")
          .at_least(0)
          .below(1)
          .conflicts_with({"valid", "train_indices", "test_indices"})
          .add("valid", &DataConfig::validation_path, "held-out CSV (same columns) used as validation data (dei-nuts: LPPD monitoring)")
          .existing()
          .conflicts_with({"valid_fraction"})
          .add("test_fraction", &DataConfig::test_fraction, "fraction of rows held out for testing")
          .at_least(0)
          .below(1)
          .conflicts_with({"train_indices", "test_indices"})
          .add("split", &DataConfig::split,
               "random: the fractions with --split-seed; gap: the rows in the middle third of input --split-index held "
               "out for testing, between the training rows (Foong et al. 2019); uci: the standard split --split-index "
               "(0, 1, ...) of Hernandez-Lobato and Adams (2015), read from splits/<data stem>/ beside --data (data/uci "
               "ships yacht, energy, concrete and protein)")
          .one_of({"random", "gap", "uci"})
          .add("split_index", &DataConfig::split_index, "--split gap: the input dimension (0-based); --split uci: the split number")
          .at_least(0)
          .only_when("split", {"gap", "uci"})
          .add("split_seed", &DataConfig::split_seed, "seed of the random split")
          .at_least(0)
          .add("train_indices", &DataConfig::train_indices, "file of 0-based training row indices (one per line)")
          .existing()
          .add("test_indices", &DataConfig::test_indices, "file of 0-based test row indices")
          .existing()
          .add("calibration_fraction", &DataConfig::calibration_fraction,
               "fraction of all rows held out of training to calibrate --conformal (drawn from the training rows with "
               "--split-seed; as MAPIE's conformalize_size; 0: none)")
          .at_least(0)
          .below(1)
          .conflicts_with({"calibration_indices"})
          .add("calibration_indices", &DataConfig::calibration_indices,
               "file of 0-based calibration row indices for --conformal (held out of training; not test or validation rows)")
          .existing()
          .add("test_data", &DataConfig::test_path,
               "test rows from a file of --data's form (a CSV with the same columns, or images of the same shape: "
               "x_test/y_test of an .npz) instead of a split of --data")
          .existing()
          .conflicts_with({"test_fraction", "test_indices"})
          .add("test_labels", &DataConfig::test_labels, "image data: the labels of an IDX or .npy --test-data (default as --labels)")
          .existing()
          .add("ood_data", &DataConfig::ood_path,
               "out-of-distribution inputs (a CSV with the input columns, or images of the same shape; labels not needed): "
               "metrics.json's ood section gives AUROC, AUPR and FPR at 95% TPR of the predictive entropy and mutual "
               "information, test rows (else the training rows) against these (classification)")
          .existing();
  return s;
}

const OptionSchema<ConformalConfig>& conformal_schema() {
  std::vector<std::string> methods;
  for (const ConformalKind& k : conformal_kinds())
    if (k.name != "none") methods.push_back(k.name + " (" + k.summary + (k.reference.empty() ? "" : "; " + k.reference) + ")");
  static const auto s =
      OptionSchema<ConformalConfig>("conformal", "Conformal calibration")
          .add("conformal", &ConformalConfig::method,
               "calibrate the method's predictive on held-out rows (--calibration-fraction or --calibration-indices) after "
               "the fit; predictions.csv and `uqnn predict` then give the conformal intervals or sets beside the method's "
               "own: " + fmt::format("{}", fmt::join(methods, "; ")))
          .one_of(conformal_kinds().names())
          .add("confidence_level", &ConformalConfig::confidence_level,
               "coverage the conformal intervals or sets guarantee for exchangeable rows (1 - alpha)")
          .above(0)
          .below(1)
          .only_when("conformal", {"split", "cqr", "cv+", "jackknife+", "aps", "raps"})
          .add("raps_lambda", &ConformalConfig::raps_lambda, "RAPS penalty per class beyond --raps-k-reg")
          .at_least(0)
          .only_when("conformal", {"raps"})
          .add("raps_k_reg", &ConformalConfig::raps_k_reg, "classes free of the RAPS penalty")
          .at_least(0)
          .only_when("conformal", {"raps"});
  return s;
}

const OptionSchema<ModelConfig>& model_schema() {
  static const auto s =
      OptionSchema<ModelConfig>("model", "Model")
          .add("model", &ModelConfig::kind, "network: " + describe_kinds(model_kinds()))
          .one_of(model_kinds().names())
          .add("arch", &ModelConfig::hidden, "hidden widths, comma separated; empty (--arch '') gives the Linear model")
          .at_least(1)
          .add("bias", &ModelConfig::bias,
               "intercept of the Linear model (--no-bias: f(x) = W x, as in posteriordb's Bayesian linear regressions; "
               "needs --arch '')")
          .add("activation", &ModelConfig::activation, "activation of the hidden layers")
          .one_of(activation_kinds().names())
          .add("init", &ModelConfig::init, "initialisation: auto = glorot for tanh-like, he for relu-like activations")
          .one_of(with_auto(init_scheme_kinds().names()))
          .add("rnet_width", &ModelConfig::rnet_width, "rnet: state width")
          .at_least(1)
          .add("rnet_layers", &ModelConfig::rnet_layers, "rnet: number of layers L (L + 1 residual updates)")
          .at_least(1)
          .add("rnet_order", &ModelConfig::rnet_weight_order, "rnet: polynomial order of the weights over depth; -1 = one matrix per layer")
          .at_least(-1)
          .cite("QUiNN's manual, RNet")
          .add("layers", &ModelConfig::layers,
               "cnn: the layer list, e.g. conv16k3,pool2,conv32k3,pool2,fc128, or a ResNet preset such as resnet8w16; "
               "--activation follows each conv and fc, and the output layer is appended (docs/networks.md)")
          .only_when("model", {"cnn"})
          .add("input_shape", &ModelConfig::input_shape,
               "cnn: each example's inputs as C,H,W (e.g. 1,28,28): the input columns in PyTorch's order (channel, row, column)")
          .at_least(1)
          .only_when("model", {"cnn"})
          .cite("LeCun et al. 1998; He et al. 2016; Wu & He 2018 (GroupNorm); Singh & Krishnan 2020 (FRN)")
          .add("precision", &ModelConfig::precision,
               "arithmetic of the network's forward and reverse passes; float32 (JAX/NumPyro's default) gives about "
               "1.8x faster gradients while the sampler stays double")
          .one_of({"float64", "float32"});
  return s;
}

const OptionSchema<ProbabilityConfig>& probability_schema() {
  static const auto s =
      OptionSchema<ProbabilityConfig>("probability", "Likelihood and prior")
          .add("likelihood", &ProbabilityConfig::likelihood, "likelihood of the targets: " + describe_kinds(likelihood_kinds()))
          .one_of(likelihood_kinds().names())
          .add("noise", &ProbabilityConfig::noise,
               "Gaussian noise sd in the target's units (unset: learned, with log sigma ~ N(0, 3^2) in standardised units)")
          .above(0)
          .add("noise_prior", &ProbabilityConfig::noise_prior,
               "prior on a learned noise sd, in the target's units: lognormal:M,S (log sigma ~ N(M, S^2)), halfnormal:S, "
               "halfcauchy:S or flat (improper), with the Jacobian of the log transform; empty: log sigma ~ N(0, 3^2) in "
               "standardised units")
          .add("classes", &ProbabilityConfig::num_classes, "number of classes (categorical)")
          .at_least(2)
          .only_when("likelihood", {"categorical"})
          .add("prior", &ProbabilityConfig::prior,
               "prior on the weights: fan-in is sigma / sqrt(fan_in) per layer; flat is improper (p = 1, Stan's default), "
               "for models whose likelihood alone is proper such as a full-rank linear regression")
          .one_of(prior_kinds().names())
          .cite(cite_kinds(prior_kinds()))
          .add("prior_sigma", &ProbabilityConfig::prior_sigma,
               "prior sd (gaussian), scale (fan-in, laplace), the biases' sd (horseshoe, regularized-horseshoe, ard)")
          .above(0)
          .add("shrinkage_groups", &ProbabilityConfig::shrinkage_groups,
               "horseshoe: a local scale per weight (the classic horseshoe) or per unit (its incoming weights), each "
               "with a global scale per layer; or one local scale per layer and one global scale")
          .one_of({"weight", "unit", "layer"})
          .add_nested("horseshoe_global_scale", [](ProbabilityConfig& c) -> double& { return c.shrinkage.global_scale; },
                      "horseshoe: tau ~ C+(0, scale), relative to 1 / sqrt(fan_in)")
          .above(0)
          .add_nested("slab_scale", [](ProbabilityConfig& c) -> double& { return c.shrinkage.slab_scale; },
                      "regularized horseshoe: the slab's scale s, relative to 1 / sqrt(fan_in)")
          .above(0)
          .cite("Piironen & Vehtari 2017, eq. 2.8; brms's default 2")
          .add_nested("slab_df", [](ProbabilityConfig& c) -> double& { return c.shrinkage.slab_df; },
                      "regularized horseshoe: c^2 ~ Inv-Gamma(df / 2, df s^2 / 2)")
          .above(0)
          .add_nested("ard_shape", [](ProbabilityConfig& c) -> double& { return c.shrinkage.ard_shape; },
                      "ard: each scale's precision 1 / s^2 ~ Gamma(shape, rate), s relative to 1 / sqrt(fan_in)")
          .above(0)
          .add_nested("ard_rate", [](ProbabilityConfig& c) -> double& { return c.shrinkage.ard_rate; }, "ard: see --ard-shape")
          .above(0)
          .add("mixture_pi", &ProbabilityConfig::mixture_pi, "scale-mixture weight pi")
          .above(0)
          .below(1)
          .cite("Blundell et al. 2015 (Bayes by Backprop), eq. 7")
          .add("mixture_sigma1", &ProbabilityConfig::mixture_sigma1, "scale-mixture sigma1")
          .above(0)
          .add("mixture_sigma2", &ProbabilityConfig::mixture_sigma2, "scale-mixture sigma2")
          .above(0);
  return s;
}

const OptionSchema<TrainParams>& training_schema() {
  using T = TrainParams;
  static const auto s =
      OptionSchema<T>("training", "Training (MAP and every method's pre-training)")
          .add_nested("optimizer", [](T& t) -> std::string& { return t.optimizer.name; },
                      "optimiser; auto = lbfgs for a posterior mode on full batches without early stopping (map, "
                      "rms, laplace, swag's pre-training, MCMC's MAP start), adam otherwise. lbfgs (full batch "
                      "only) stops when the gradient norm reaches --gradient-tolerance, --epochs capping its iterations")
          .one_of(optimizer_kinds().names())
          .cite("Nocedal & Wright 2006, alg. 7.5 (lbfgs)")
          .add("gradient_tolerance", &T::gradient_tolerance,
               "lbfgs converges when the gradient norm of the loss per data point is at most this")
          .above(0)
          .add("convergence_window", &T::convergence_window,
               "adam/sgd have converged when the mean training loss of the last this many epochs is within "
               "--convergence-tolerance x |loss| of the window before's; 0 = not judged")
          .at_least(0)
          .add("convergence_tolerance", &T::convergence_tolerance, "relative change that counts as levelled off (adam/sgd)")
          .above(0)
          .add("stop_when_converged", &T::stop_when_converged,
               "adam/sgd stop at the first window where the loss levelled off, instead of running every epoch and "
               "judging at the end (a network's loss can be flat for a while before it falls again)")
          .add_nested("lr", [](T& t) -> double& { return t.optimizer.learning_rate; }, "learning rate")
          .above(0)
          .add_nested("weight_decay", [](T& t) -> double& { return t.optimizer.weight_decay; }, "weight decay: L2 added to the gradient (adam, sgd), decoupled (adamw)")
          .at_least(0)
          .add_nested("momentum", [](T& t) -> double& { return t.optimizer.momentum; }, "sgd momentum")
          .at_least(0)
          .below(1)
          .add("epochs", &T::epochs, "training epochs")
          .at_least(1)
          .add("batch_size", &T::batch_size, "minibatch size; 0 = full batch")
          .at_least(0)
          .add_nested("lr_schedule", [](T& t) -> std::string& { return t.schedule.name; }, "learning-rate schedule")
          .one_of(schedule_kinds().names())
          .add_nested("lr_step_every", [](T& t) -> Index& { return t.schedule.step_every; }, "step schedule: epochs between reductions")
          .at_least(1)
          .add_nested("lr_gamma", [](T& t) -> double& { return t.schedule.gamma; }, "step / exponential factor")
          .above(0)
          .at_most(1)
          .add_nested("lr_factor", [](T& t) -> double& { return t.schedule.factor; }, "plateau reduction factor")
          .above(0)
          .below(1)
          .add_nested("lr_patience", [](T& t) -> Index& { return t.schedule.patience; }, "plateau patience (epochs)")
          .at_least(0)
          .add("early_stopping", &T::early_stopping_patience,
               "stop after this many epochs without validation improvement; 0 = off (the best-validation snapshot is kept)")
          .at_least(0);
  return s;
}

std::vector<OptionGroup> fit_groups() {
  return {output_schema().group(), data_schema().group(), model_schema().group(), probability_schema().group(),
          training_schema().group(), conformal_schema().group()};
}

std::string join_names(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

/// The methods that read option `name`, for "does not apply" errors.
std::vector<std::string> methods_reading(const std::string& name) {
  std::vector<std::string> out;
  for (const MethodSpec* m : registered_methods())
    for (const OptionGroup* g : m->groups)
      if (g->find(name)) out.push_back(m->name);
  return out;
}

/// The rules options declare about each other (OptionSpec::conflicts_with, only_when_option), and
/// the fractions' sum: each refusal names the options as the user gave them. A later source
/// (the command line after a TOML file) overriding an earlier one is not a conflict: the last
/// value given for a name is the one checked.
void check_combinations(const FitRequest& request, const std::map<std::string, const OptionSpec*>& applies,
                        const nlohmann::json& settings) {
  std::map<std::string, std::string> given;  // name -> where it was last given
  for (const GivenOption& g : request.given)
    if (applies.count(g.name)) given[g.name] = g.where;
  for (const auto& [name, where] : given) {
    const OptionSpec& spec = *applies.at(name);
    for (const std::string& other : spec.conflicts_with)
      if (given.count(other))
        throw InputError(fmt::format("{} and {} cannot be given together (each chooses the same thing another way): give one",
                                     where, given.at(other)));
    if (!spec.only_when_option.empty()) {
      const nlohmann::json& value = settings.at(spec.only_when_option);
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      if (std::find(spec.only_when_values.begin(), spec.only_when_values.end(), text) == spec.only_when_values.end()) {
        const std::string flag = applies.at(spec.only_when_option)->flag();
        const std::string other = given.count(spec.only_when_option) ? given.at(spec.only_when_option) + " " + text
                                                                     : "the default " + flag + " " + text;
        throw InputError(fmt::format("{}: is read only with {} {}, not with {}: remove it, or give {} {}", where, flag,
                                     join_names(spec.only_when_values), other, flag, join_names(spec.only_when_values)));
      }
    }
  }
  for (const auto& [name, spec] : applies) {
    if (spec->at_most_option.empty() || !settings.at(name).is_number() || !settings.at(spec->at_most_option).is_number()) continue;
    const double low = settings.at(name).get<double>(), high = settings.at(spec->at_most_option).get<double>();
    if (low > high) {
      const auto shown = [&](const std::string& n, double v) {
        return given.count(n) ? fmt::format("{} {:g}", given.at(n), v) : fmt::format("the default {} {:g}", applies.at(n)->flag(), v);
      };
      throw InputError(fmt::format("{} is above {}: it must be at most {}", shown(name, low),
                                   shown(spec->at_most_option, high), applies.at(spec->at_most_option)->flag()));
    }
  }
  // A run of no draws has no result: it failed after the chains ran ("returned no draws", exit 1).
  // (The chains group declares draws >= 0 in chain_run.hpp; dei-nuts declares >= 1.)
  if (applies.count("draws") && settings.at("draws").is_number_integer() && settings.at("draws").get<long long>() < 1)
    throw InputError(fmt::format("{}: {} is invalid: it must be an integer >= 1",
                                 given.count("draws") ? given.at("draws") : "--draws", settings.at("draws").dump()));
  const double valid = settings.value("valid_fraction", 0.0), test = settings.value("test_fraction", 0.0);
  const double calibration = settings.value("calibration_fraction", 0.0);
  const auto where = [&](const std::string& name, const std::string& flag) { return given.count(name) ? given.at(name) : flag; };
  if (valid + test >= 1.0) {
    throw InputError(fmt::format("{} {:g} and {} {:g} leave no training rows: their sum must be below 1",
                                 where("valid_fraction", "--valid-fraction"), valid, where("test_fraction", "--test-fraction"), test));
  }
  if (valid + test + calibration >= 1.0)
    throw InputError(fmt::format("{} {:g}, {} {:g} and {} {:g} leave no training rows: their sum must be below 1",
                                 where("calibration_fraction", "--calibration-fraction"), calibration,
                                 where("valid_fraction", "--valid-fraction"), valid, where("test_fraction", "--test-fraction"), test));
  const std::string split = settings.value("split", std::string("random"));
  if (split != "random")
    for (const char* other : {"valid_fraction", "test_fraction", "train_indices", "test_indices"})
      if (given.count(other))
        throw InputError(fmt::format("{} {} and {} both choose the test rows: give one", where("split", "--split"), split, given.at(other)));
  // Calibration rows and a conformal method come together.
  const std::string conformal = settings.value("conformal", std::string("none"));
  const bool has_calibration = calibration > 0 || !settings.value("calibration_indices", std::string()).empty();
  const bool out_of_fold = conformal_kinds().contains(conformal) && conformal_kinds().find(conformal).out_of_fold;
  if (out_of_fold && has_calibration)
    throw InputError(fmt::format("{} {} calibrates on the training rows out of fold (each member leaves its fold out): remove {}",
                                 where("conformal", "--conformal"), conformal,
                                 given.count("calibration_fraction") ? given.at("calibration_fraction")
                                                                     : where("calibration_indices", "--calibration-indices")));
  if (out_of_fold && settings.value("train_predictions", std::string("always")) == "never")
    throw InputError(fmt::format("{} never: {} {} calibrates on the predictions of the training rows: remove one",
                                 where("train_predictions", "--train-predictions"), where("conformal", "--conformal"), conformal));
  if (conformal != "none" && !out_of_fold && !has_calibration)
    throw InputError(fmt::format("{} {} needs calibration rows held out of training: give --calibration-fraction (e.g. 0.2) "
                                 "or --calibration-indices FILE",
                                 where("conformal", "--conformal"), conformal));
  if (conformal == "none" && has_calibration)
    throw InputError(fmt::format("{} holds rows out for conformal calibration: give --conformal METHOD too ({}), or remove it",
                                 given.count("calibration_fraction") ? given.at("calibration_fraction")
                                                                     : where("calibration_indices", "--calibration-indices"),
                                 join_names(conformal_kinds().names())));
  if (conformal != "none") {
    const bool classifier = is_classification(settings.value("likelihood", std::string("gaussian")));
    if (conformal_kinds().find(conformal).classification != classifier) {
      std::vector<std::string> fitting;
      for (const ConformalKind& k : conformal_kinds())
        if (k.name != "none" && k.classification == classifier) fitting.push_back(k.name);
      throw InputError(fmt::format("{} {} does not apply to --likelihood {}: use {}", where("conformal", "--conformal"), conformal,
                                   settings.value("likelihood", std::string("gaussian")), join_names(fitting)));
    }
  }
}

}  // namespace

std::vector<OptionGroup> fit_option_groups(const std::string& method) {
  const MethodSpec& spec = find_method(method);
  std::vector<OptionGroup> groups = fit_groups();
  for (const OptionGroup* g : spec.groups) groups.push_back(*g);
  // The method's own defaults of fit-level options (e.g. dei-nuts' 5000 epochs).
  for (auto& g : groups)
    for (auto& o : g.options)
      if (spec.fit_defaults.contains(o.name)) o.default_value = spec.fit_defaults.at(o.name);
  return groups;
}

std::vector<OptionGroup> all_option_groups() {
  std::vector<OptionGroup> groups = fit_groups();
  std::set<const OptionGroup*> seen;
  for (const MethodSpec* m : registered_methods())
    for (const OptionGroup* g : m->groups)
      if (seen.insert(g).second) groups.push_back(*g);
  return groups;
}

FitConfig make_fit_config(const FitRequest& request) {
  // The method first: which options apply depends on it.
  std::string method = FitConfig{}.method;
  if (request.preset.contains("method")) method = request.preset.at("method").get<std::string>();
  for (const GivenOption& g : request.given)
    if (g.name == "method") {
      if (!g.value.is_string()) throw InputError(fmt::format("{}: {} is invalid: it must be a method name", g.where, g.value.dump()));
      method = g.value.get<std::string>();
    }
  const MethodSpec& spec = find_method(method);
  const std::vector<OptionGroup> groups = fit_option_groups(method);
  std::map<std::string, const OptionSpec*> applies;
  for (const auto& g : groups)
    for (const auto& o : g.options) applies.emplace(o.name, &o);
  std::set<std::string> tolerated;
  for (const auto& other : request.also_accept_methods)
    for (const OptionGroup* g : find_method(other).groups)
      for (const auto& o : g->options) tolerated.insert(o.name);

  nlohmann::json settings = nlohmann::json::object();
  for (const auto& g : groups)
    for (const auto& o : g.options) settings[o.name] = o.default_value;
  const auto apply = [&](const std::string& name, const nlohmann::json& value, const std::string& where) {
    const auto it = applies.find(name);
    if (it == applies.end()) {
      if (tolerated.count(name)) return;
      const auto readers = methods_reading(name);
      if (readers.empty()) throw InputError(fmt::format("{}: there is no such option (uqnn fit --help lists them)", where));
      throw InputError(fmt::format("{}: does not apply to --method {}; it is an option of {}", where, method, join_names(readers)));
    }
    settings[name] = it->second->check(value, where);
  };
  // A door's defaults apply where the method reads them (the demo's draws do not concern map).
  for (const auto& [name, value] : request.preset.items())
    if (applies.count(name)) apply(name, value, "preset " + name);
  for (const GivenOption& g : request.given) apply(g.name, g.value, g.where);
  check_combinations(request, applies, settings);

  FitConfig cfg = output_schema().read(settings);
  cfg.method = method;
  {
    std::string where = "part";
    for (const GivenOption& g : request.given)
      if (g.name == "part") where = g.where;
    const Part part = Part::parse(cfg.part, where);
    if (!part.whole() && !method_runs_in_parts(method))
      throw InputError(fmt::format("{}: --method {} cannot run in parts; methods that can: {}", where, method,
                                   join_names(methods_with_parts())));
    // Part k runs chains (members) k-1, k-1+n, ...: with fewer than k it has none to run.
    for (const char* count : {"chains", "ens_members", "members", "swag_members"}) {
      if (part.whole() || !applies.count(count) || !settings.at(count).is_number_integer()) continue;
      const auto total = settings.at(count).get<long long>();
      if (part.k > total)
        throw InputError(fmt::format("{}: part {} of {} runs {} k-1, k-1+n, ...: with {} {} it has none; give n parts "
                                     "with n <= {}",
                                     where, part.k, part.n, count, applies.at(count)->flag(), total, total));
      break;
    }
  }
  cfg.data = data_schema().read(settings);
  cfg.model = model_schema().read(settings);
  cfg.probability = probability_schema().read(settings);
  cfg.training = training_schema().read(settings);
  cfg.conformal = conformal_schema().read(settings);
  if (cfg.conformal.enabled() && conformal_kinds().find(cfg.conformal.method).out_of_fold) {
    const std::vector<std::string> supported = out_of_fold_methods();
    if (std::find(supported.begin(), supported.end(), method) == supported.end()) {
      std::string where = "--conformal";
      for (const GivenOption& g : request.given)
        if (g.name == "conformal") where = g.where;
      throw InputError(fmt::format("{} {} needs members each trained without one fold of the training rows, which only the "
                                   "ensemble-style methods have: use --method {} (or --conformal split or cqr with --method {})",
                                   where, cfg.conformal.method, join_names(supported), method));
    }
  }
  for (const OptionGroup* g : spec.groups)
    for (const auto& o : g->options) cfg.method_settings[o.name] = settings.at(o.name);
  cfg.record = {{"settings", settings}, {"invocation", request.invocation}};
  return cfg;
}

FitRequest request_from_settings(const nlohmann::json& settings, const std::string& source, const std::set<std::string>& skip) {
  FitRequest request;
  // Only what differs from the defaults is given (an unset path is recorded as "", which as a given
  // value would name a missing file).
  std::map<std::string, nlohmann::json> defaults;
  for (const auto& g : fit_option_groups(settings.value("method", std::string("map"))))
    for (const auto& o : g.options) defaults[o.name] = o.default_value;
  for (const auto& [name, value] : settings.items()) {
    if (skip.count(name)) continue;
    if (defaults.count(name) && defaults[name] == value && name != "method") continue;
    request.given.push_back({name, value, fmt::format("{}: settings.{}", source, name)});
  }
  return request;
}

FitConfig resume_fit_config(const std::filesystem::path& dir, const FitRequest& overrides) {
  // What a resumed run may change: how it runs, not what it draws.
  static const std::set<std::string> may_change{"threads", "quiet", "checkpoint_every"};
  for (const GivenOption& g : overrides.given)
    if (!may_change.count(g.name))
      throw InputError(fmt::format("{}: cannot be given with --resume, which continues the run with the settings it was "
                                   "started with; only --threads, --quiet and --checkpoint-every may change",
                                   g.where));
  const std::filesystem::path record = dir / "checkpoint" / "fit.json";
  if (!std::filesystem::exists(record))
    throw InputError(fmt::format("--resume {}: there is no checkpoint to resume ({} is missing: the run finished, "
                                 "or {} is not the --out of a uqnn fit)",
                                 dir.string(), record.string(), dir.string()));
  nlohmann::json saved;
  try {
    std::ifstream in(record);
    saved = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON ({})", record.string(), e.what()));
  }
  if (!saved.is_object() || !saved.contains("settings") || !saved["settings"].is_object())
    throw InputError(fmt::format("{}: holds no settings (it is not a uqnn checkpoint)", record.string()));
  if (saved["settings"].value("data", std::string()).empty())
    throw InputError(fmt::format("--resume {}: the run's data were not a file (uqnn demo, or arrays from Python): resume it "
                                 "where it was started (Python: BNN(..., out=DIR).fit(X, y, resume=True))",
                                 dir.string()));
  FitRequest request = request_from_settings(saved["settings"], record.string(), {"out"});
  // The run's own directory, whatever the current directory is.
  request.given.push_back({"out", dir.string(), "--resume"});
  for (const GivenOption& g : overrides.given) request.given.push_back(g);
  request.invocation = {{"resume", std::filesystem::absolute(dir).string()},
                        {"started_by", saved.value("invocation", nlohmann::json())},
                        {"resumed_by", overrides.invocation}};
  FitConfig cfg = make_fit_config(request);
  cfg.resume = true;
  return cfg;
}

FitConfig fit_config_from_options(const nlohmann::json& options) {
  FitRequest request;
  for (const auto& [name, value] : options.items()) request.given.push_back({name, value, name});
  request.invocation = {{"cpp", options}};
  return make_fit_config(request);
}

}  // namespace uqnn
