#include "uqnn/services/fit.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <set>

#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/data/image_files.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/io/staged_output_dir.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/cnn_layer_list.hpp"
#include "uqnn/nn/linear.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/nn/rnet.hpp"
#include "uqnn/prob/shrinkage_prior.hpp"
#include "uqnn/plot/plots.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/services/fit_output.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

/// The network's activation and initialisation from the config; --init auto gives the model's own
/// scheme, or the activation's default (glorot for tanh-like, he for relu-like) when it has none.
std::pair<Activation, InitScheme> activation_and_init(const ModelConfig& c, std::optional<InitScheme> model_default = {}) {
  const Activation activation = parse_activation(c.activation);
  if (c.init != "auto") return {activation, parse_init_scheme(c.init)};
  return {activation, model_default.value_or(default_init_scheme(activation))};
}

std::shared_ptr<Model> build_mlp(const ModelConfig& c, Index input_dim, Index output_dim) {
  if (!c.bias && !c.hidden.empty())
    throw InputError("--no-bias applies to the Linear model only (--model mlp --arch ''): hidden layers keep their biases");
  if (!c.bias) return std::make_shared<LinearNoBias>(input_dim, output_dim);
  const auto [activation, init] = activation_and_init(c);
  return std::make_shared<Mlp>(MlpSpec{input_dim, c.hidden, output_dim, activation, init});
}

std::shared_ptr<Model> build_rnet(const ModelConfig& c, Index input_dim, Index output_dim) {
  if (!c.bias) throw InputError("--no-bias applies to the Linear model only (--model mlp --arch ''): hidden layers keep their biases");
  RNetSpec s;
  s.input_dim = input_dim;
  s.output_dim = output_dim;
  s.width = c.rnet_width;
  s.num_layers = c.rnet_layers;
  s.weight_order = c.rnet_weight_order;
  std::tie(s.activation, s.init) = activation_and_init(c, InitScheme::Torch);  // QUiNN's RNet: PyTorch's init
  return std::make_shared<RNet>(s);
}

std::shared_ptr<Model> build_cnn(const ModelConfig& c, Index input_dim, Index output_dim) {
  if (!c.bias) throw InputError("--no-bias applies to the Linear model only (--model mlp --arch ''): hidden layers keep their biases");
  const ImageShape shape = parse_image_shape(c.input_shape, input_dim, "--input-shape");
  if (c.layers.empty())
    throw InputError("--model cnn needs --layers, e.g. conv16k3,pool2,conv32k3,pool2,fc128 or resnet8 (docs/networks.md)");
  const auto [activation, init] = activation_and_init(c);
  return std::make_shared<Cnn>(shape, parse_cnn_layers(c.layers, shape, output_dim, activation, "--layers"), init, c.layers);
}

std::shared_ptr<Likelihood> build_gaussian(const ProbabilityConfig& c, double target_scale) {
  if (c.noise) {
    if (!(*c.noise > 0) || !std::isfinite(*c.noise))
      throw InputError(fmt::format("--noise {} is invalid: it must be a finite number > 0 (in the target's units)", *c.noise));
    return make_gaussian_likelihood(*c.noise / target_scale);
  }
  // Unknown noise: learn log sigma, starting at 0.1 standard deviations of the target.
  if (c.noise_prior.empty()) return make_learned_sigma_likelihood(0.1);
  return make_learned_sigma_likelihood(0.1, NoiseSdPrior::parse(c.noise_prior, "--noise-prior").in_units_of(target_scale));
}

}  // namespace

const Registry<ModelKind>& model_kinds() {
  static const Registry<ModelKind> kinds(
      "--model", {{.name = "mlp", .summary = "fully connected network (--arch '' gives the Linear model)", .build = &build_mlp},
                  {.name = "rnet", .summary = "QUiNN's residual net with weights shared across depth", .build = &build_rnet},
                  {.name = "cnn", .summary = "convolutional and residual networks on images: --layers, --input-shape", .build = &build_cnn}});
  return kinds;
}

const Registry<LikelihoodKind>& likelihood_kinds() {
  static const Registry<LikelihoodKind> kinds(
      "--likelihood",
      {{.name = "gaussian", .summary = "Gaussian noise, fixed (--noise) or learned", .build = &build_gaussian},
       {.name = "heteroscedastic", .summary = "Gaussian with a noise sd per input (a second output)",
        .build = [](const ProbabilityConfig&, double) { return make_heteroscedastic_likelihood(); }},
       {.name = "bernoulli", .summary = "binary labels 0/1", .classification = true,
        .build = [](const ProbabilityConfig&, double) { return make_bernoulli_likelihood(); }},
       {.name = "categorical", .summary = "class labels 0..K-1 (--classes K), softmax outputs", .classification = true,
        .build = [](const ProbabilityConfig& c, double) { return make_categorical_likelihood(c.num_classes); }}});
  return kinds;
}

bool is_classification(const std::string& likelihood) { return likelihood_kinds().find(likelihood).classification; }

const Registry<PriorKind>& prior_kinds() {
  using P = std::shared_ptr<Prior>;
  static const Registry<PriorKind> kinds(
      "--prior",
      {{.name = "gaussian", .summary = "N(0, sigma^2) on every weight",
        .build = [](const ProbabilityConfig& c, const ParamLayout& l) -> P { return GaussianPrior::isotropic(l.size(), c.prior_sigma); }},
       {.name = "fan-in", .summary = "N(0, sigma^2 / fan_in) per layer", .reference = "Neal 1996",
        .build = [](const ProbabilityConfig& c, const ParamLayout& l) -> P { return GaussianPrior::fan_in_scaled(l, c.prior_sigma); }},
       {.name = "mixture", .summary = "scale mixture of two Gaussians", .reference = "Blundell et al. 2015",
        .build = [](const ProbabilityConfig& c, const ParamLayout& l) -> P {
          return std::make_shared<ScaleMixturePrior>(l.size(), c.mixture_pi, c.mixture_sigma1, c.mixture_sigma2);
        }},
       {.name = "laplace", .summary = "Laplace(0, sigma) on every weight",
        .build = [](const ProbabilityConfig& c, const ParamLayout& l) -> P { return std::make_shared<LaplacePrior>(l.size(), c.prior_sigma); }},
       {.name = "flat", .summary = "improper p = 1 (Stan's default)",
        .build = [](const ProbabilityConfig&, const ParamLayout& l) -> P { return std::make_shared<FlatPrior>(l.size()); }},
       {.name = "horseshoe", .summary = "horseshoe shrinkage", .reference = "Carvalho et al. 2010; Ghosh et al. 2019", .shrinkage = true},
       {.name = "regularized-horseshoe", .summary = "horseshoe with a slab", .reference = "Piironen & Vehtari 2017", .shrinkage = true},
       {.name = "ard", .summary = "automatic relevance determination", .reference = "Neal 1996", .shrinkage = true}});
  return kinds;
}

std::shared_ptr<Model> build_model(const ModelConfig& c, Index input_dim, Index output_dim) {
  auto model = model_kinds().find(c.kind).build(c, input_dim, output_dim);
  model->set_precision(parse_precision(c.precision));
  return model;
}

std::shared_ptr<Likelihood> build_likelihood(const ProbabilityConfig& c, double target_scale) {
  if (!c.noise_prior.empty() && (c.likelihood != "gaussian" || c.noise))
    throw InputError("--noise-prior applies to a learned noise sd (--likelihood gaussian without --noise)");
  return likelihood_kinds().find(c.likelihood).build(c, target_scale);
}

std::shared_ptr<Model> with_shrinkage(const ProbabilityConfig& c, std::shared_ptr<Model> network) {
  if (!prior_kinds().find(c.prior).shrinkage) return network;
  ShrinkageSpec spec = c.shrinkage;
  spec.kind = parse_shrinkage_kind(c.prior);
  spec.groups = parse_shrinkage_groups(c.shrinkage_groups);
  spec.bias_sd = c.prior_sigma;
  return std::make_shared<NonCentredModel>(std::move(network), spec);
}

std::shared_ptr<Prior> build_prior(const ProbabilityConfig& c, const Model& model) {
  if (!(c.prior_sigma > 0) || !std::isfinite(c.prior_sigma))
    throw InputError(fmt::format("--prior-sigma {} is invalid: it must be a finite number > 0", c.prior_sigma));
  const PriorKind& kind = prior_kinds().find(c.prior);
  if (kind.shrinkage) {
    const auto* non_centred = dynamic_cast<const NonCentredModel*>(&model);
    if (!non_centred) throw std::invalid_argument("--prior " + c.prior + " needs the model made by with_shrinkage()");
    return std::make_shared<ShrinkagePrior>(non_centred->hierarchy());
  }
  return kind.build(c, model.layout());
}

namespace {

/// Rng stream of the calibration rows, apart from the split's own ("calib").
constexpr std::uint64_t kCalibrationStream = 0x63616c6962;

Split train_validation_test(const DataConfig& c, const Mat& inputs) {
  const Index n = inputs.cols();
  const bool files = !c.train_indices.empty() || !c.test_indices.empty();
  if (c.split == "gap") return gap_split(inputs, c.split_index);
  if (c.split == "uci") {
    if (c.path.empty()) throw InputError("--split uci reads the split files beside --data: give the data as a file");
    const auto dir = c.path.parent_path() / "splits" / c.path.stem();
    const auto train = dir / fmt::format("train_{}.txt", c.split_index), test = dir / fmt::format("test_{}.txt", c.split_index);
    if (!std::filesystem::exists(train) || !std::filesystem::exists(test))
      throw InputError(fmt::format("--split uci --split-index {}: {} or {} is missing (data/uci/splits/<name>/ holds the "
                                   "standard splits of yacht, energy, concrete and protein, numbered from 0)",
                                   c.split_index, train.string(), test.string()));
    return read_split(train, test, n);
  }
  if (files && (c.validation_fraction > 0.0 || c.test_fraction > 0.0))
    throw InputError("--train-indices / --test-indices and --valid-fraction / --test-fraction both choose the split: "
                     "give split files or fractions, not both");
  if (!c.train_indices.empty()) {
    if (c.test_indices.empty()) {
      Split s;
      s.train = read_index_file(c.train_indices, n);
      return s;
    }
    return read_split(c.train_indices, c.test_indices, n);
  }
  if (!c.test_indices.empty()) {  // the test rows alone: every other row is for training
    Split s;
    s.test = read_index_file(c.test_indices, n);
    std::vector<bool> is_test(static_cast<std::size_t>(n), false);
    for (Index r : s.test) is_test[static_cast<std::size_t>(r)] = true;
    for (Index r = 0; r < n; ++r)
      if (!is_test[static_cast<std::size_t>(r)]) s.train.push_back(r);
    if (s.train.empty()) throw InputError(c.test_indices.string() + ": lists every row, which leaves no training rows");
    return s;
  }
  if (c.validation_fraction == 0.0 && c.test_fraction == 0.0) {
    Split s;
    for (Index i = 0; i < n; ++i) s.train.push_back(i);
    return s;
  }
  SplitParams p;
  p.validation_fraction = c.validation_fraction;
  p.test_fraction = c.test_fraction;
  p.train_fraction = 1.0 - c.validation_fraction - c.test_fraction;
  p.seed = c.split_seed;
  p.validate();
  return random_split(n, p);
}

}  // namespace

Split choose_split(const DataConfig& c, const Mat& inputs) {
  const Index n = inputs.cols();
  Split s = train_validation_test(c, inputs);
  if (c.calibration_fraction == 0.0 && c.calibration_indices.empty()) return s;
  std::vector<bool> is_calibration(static_cast<std::size_t>(n), false);
  if (!c.calibration_indices.empty()) {
    s.calibration = read_index_file(c.calibration_indices, n);
    for (Index r : s.calibration) is_calibration[static_cast<std::size_t>(r)] = true;
    for (const auto& [part, rows] : {std::pair<const char*, const IndexVec*>{"test", &s.test}, {"validation", &s.validation}})
      for (Index r : *rows)
        if (is_calibration[static_cast<std::size_t>(r)])
          throw InputError(fmt::format("{}: row {} is also a {} row: calibration rows must be held out of training, "
                                       "validation and testing alike",
                                       c.calibration_indices.string(), r, part));
  } else {
    // A share of all rows, drawn from the training rows (Fisher-Yates with its own stream).
    const auto count = static_cast<std::size_t>(std::llround(c.calibration_fraction * static_cast<double>(n)));
    if (count < 1 || count >= s.train.size())
      throw InputError(fmt::format("--calibration-fraction {} of {} rows gives {} calibration rows out of {} training rows: "
                                   "it must leave at least one row on each side",
                                   format_double(c.calibration_fraction), n, count, s.train.size()));
    IndexVec order = s.train;
    Rng rng(c.split_seed, kCalibrationStream);
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.uniform_index(i)]);
    s.calibration.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count));
    std::sort(s.calibration.begin(), s.calibration.end());
    for (Index r : s.calibration) is_calibration[static_cast<std::size_t>(r)] = true;
  }
  IndexVec train;
  for (Index r : s.train)
    if (!is_calibration[static_cast<std::size_t>(r)]) train.push_back(r);
  if (train.empty()) throw InputError(c.calibration_indices.string() + ": lists every training row, which leaves none for training");
  s.train = std::move(train);
  return s;
}

namespace {

/// A standardiser that leaves the targets alone (class labels must not be rescaled).
Standardizer inputs_only(const Standardizer& s) {
  nlohmann::json j = s.to_json();
  const auto k = static_cast<std::size_t>(s.target_mean().size());
  j["targets"]["mean"] = std::vector<double>(k, 0.0);
  j["targets"]["scale"] = std::vector<double>(k, 1.0);
  return Standardizer::from_json(j);
}

FitSize fit_size(const ModelConfig& c, const Model& model, const Dataset& data, const Split& split) {
  FitSize s;
  s.num_params = model.num_params();
  s.all_rows = data.size();
  s.train_rows = static_cast<Index>(split.train.size());
  s.inputs = data.input_dim();
  s.outputs = model.output_dim();
  s.layer_widths = s.inputs + s.outputs;
  if (c.kind == "rnet") s.layer_widths += c.rnet_width * c.rnet_layers;
  for (Index h : c.hidden)
    if (c.kind == "mlp") s.layer_widths += h;
  if (const auto* cnn = dynamic_cast<const Cnn*>(&model)) {
    s.layer_widths += cnn->activation_size();
    s.rows_per_pass = cnn->examples_per_pass();
  }
  return s;
}

}  // namespace

/// load_dataset, its column errors naming the flags (--target, --inputs) rather than the roles.
static Dataset load_fit_dataset(const std::filesystem::path& path, const std::vector<std::string>& targets,
                         const std::vector<std::string>& inputs) {
  try {
    return load_dataset(path, targets, inputs);
  } catch (const InputError& e) {
    std::string message = e.what();
    for (const auto& [role, flag] : {std::pair<std::string, std::string>{"as target", "by --target"}, {"as input", "by --inputs"}})
      for (const std::string& form : {"(requested " + role + ")", "listed twice " + role})
        if (const auto at = message.find(form); at != std::string::npos)
          message.replace(at, form.size(), form[0] == '(' ? "(requested " + flag + ")" : "listed twice " + flag);
    throw InputError(message);
  }
}

namespace {

/// One data file of a fit as the user named it: a CSV table or an image file (IDX, .npy, .npz).
struct FitDataFile {
  std::filesystem::path path, labels;
  std::string flag, labels_flag, role;
};

/// Whether `path` holds image arrays (data/image_files.hpp), not a CSV table.
bool is_image_data_file(const std::filesystem::path& path) { return detect_data_file_format(path) != DataFileFormat::Csv; }

/// The images of `file` as a Dataset (inputs c<channel>_<row>_<column>, target "label"), and
/// their shape in `shape` (C, H, W).
Dataset load_fit_images(const FitDataFile& file, const std::vector<Index>& input_shape, bool labels_required, std::vector<Index>& shape) {
  ImageFileRequest request;
  request.labels = file.labels;
  request.flag = file.flag;
  request.labels_flag = file.labels_flag;
  request.role = file.role;
  request.labels_required = labels_required;
  request.input_shape = input_shape;
  if (input_shape.size() == 2) request.input_shape = {1, input_shape[0], input_shape[1]};
  const ImageData images = read_image_file(file.path, request);
  shape = {images.channels, images.height, images.width};
  return to_dataset(images, file.path.string());
}

/// Rows of a second file (--test-data, --ood-data) must have the inputs of --data.
void check_same_inputs(const Dataset& rows, const Dataset& data, const std::string& flag, const std::filesystem::path& path) {
  if (rows.input_names != data.input_names)
    throw InputError(fmt::format("{} {}: {} inputs ({}{}), but --data has {} ({}{}): give rows of the same columns or images of the same shape",
                                 flag, path.string(), rows.input_dim(), rows.input_names.empty() ? "" : rows.input_names.front(),
                                 rows.input_dim() > 1 ? ", ..." : "", data.input_dim(),
                                 data.input_names.empty() ? "" : data.input_names.front(), data.input_dim() > 1 ? ", ..." : ""));
}

/// The OOD inputs of --ood-data: the input columns of a CSV file (any label column is ignored), or
/// images (labels not needed).
Mat load_ood_inputs(const DataConfig& c, const Dataset& data, bool images, const std::vector<Index>& input_shape) {
  if (is_image_data_file(c.ood_path)) {
    if (!images) throw InputError("--ood-data " + c.ood_path.string() + ": an image file, but --data is a CSV table: give both in one form");
    std::vector<Index> shape;
    Dataset ood = load_fit_images({c.ood_path, {}, "--ood-data", "--ood-data", "test"}, input_shape, false, shape);
    check_same_inputs(ood, data, "--ood-data", c.ood_path);
    return std::move(ood.inputs);
  }
  const CsvTable table = read_csv(c.ood_path);
  Mat inputs(data.input_dim(), table.num_rows());
  for (std::size_t i = 0; i < data.input_names.size(); ++i) {
    const Index col = table.find_column(data.input_names[i]);
    if (col < 0)
      throw InputError(fmt::format("--ood-data {}: no input column '{}' (the OOD rows need every input column of --data)",
                                   c.ood_path.string(), data.input_names[i]));
    inputs.row(static_cast<Index>(i)) = table.values.col(col).transpose();
  }
  return inputs;
}

/// Per-channel standardisation of images (torchvision's Normalize) as a per-column Standardizer:
/// each pixel column gets its channel's mean and sd over the training images; targets as `base`.
Standardizer per_channel(const Standardizer& base, const Mat& train_inputs, Index channels) {
  const ChannelStandardizer channel = ChannelStandardizer::fit(train_inputs, channels);
  const Index plane = train_inputs.rows() / channels;
  std::vector<double> mean, scale;
  for (Index c = 0; c < channels; ++c)
    for (Index k = 0; k < plane; ++k) {
      mean.push_back(channel.mean[c]);
      scale.push_back(channel.scale[c]);
    }
  nlohmann::json j = base.to_json();
  j["inputs"]["mean"] = mean;
  j["inputs"]["scale"] = scale;
  return Standardizer::from_json(j);
}

}  // namespace

FitProblem make_fit_problem(const FitConfig& cfg) {
  FitProblem p;
  // Data, split, standardisation (fitted on the training rows only).
  const bool images = !cfg.data.dataset && is_image_data_file(cfg.data.path);
  p.image_files = images;
  std::vector<Index> image_shape;  // C, H, W of image files
  if (!images && !cfg.data.dataset && !cfg.data.labels.empty())
    throw InputError("--labels " + cfg.data.labels.string() + ": --data " + cfg.data.path.string() +
                     " is a CSV table, whose labels are a column (--target); --labels is for IDX and .npy images");
  if (images && (!cfg.data.targets.empty() || !cfg.data.inputs.empty()))
    throw InputError(fmt::format("--data {} holds images: --target and --inputs choose columns of a CSV table", cfg.data.path.string()));
  if (cfg.data.dataset) p.data = *cfg.data.dataset;
  else if (images) p.data = load_fit_images({cfg.data.path, cfg.data.labels, "--data", "--labels", "train"}, cfg.model.input_shape, true, image_shape);
  else p.data = load_fit_dataset(cfg.data.path, cfg.data.targets, cfg.data.inputs);
  // A wide table of a few rows (a transposed file) made a fit of millions of weights run for
  // minutes on nothing: beyond 1000 inputs, at most as many inputs as rows.
  if (!cfg.data.dataset && !images && p.data.input_dim() > std::max<Index>(1000, p.data.size()))
    throw InputError(fmt::format("{}: {} input columns for {} rows: beyond 1000 columns a data set needs at least as many "
                                 "rows as input columns (is the table transposed? --inputs chooses columns)",
                                 cfg.data.path.string(), p.data.input_dim(), p.data.size()));
  p.split = choose_split(cfg.data, p.data.inputs);
  if (!cfg.data.test_path.empty()) {
    // Test rows from their own file, appended after the rows of --data.
    if (!cfg.data.test_labels.empty() && !is_image_data_file(cfg.data.test_path))
      throw InputError("--test-labels is for IDX and .npy images; --test-data " + cfg.data.test_path.string() + " is a CSV table");
    std::vector<Index> test_shape;
    Dataset test;
    if (is_image_data_file(cfg.data.test_path)) {
      test = load_fit_images({cfg.data.test_path, cfg.data.test_labels, "--test-data", "--test-labels", "test"}, cfg.model.input_shape,
                             true, test_shape);
    } else {
      try {
        test = load_fit_dataset(cfg.data.test_path, p.data.target_names, p.data.input_names);
      } catch (const InputError& e) {
        throw InputError(std::string("--test-data ") + e.what());
      }
    }
    check_same_inputs(test, p.data, "--test-data", cfg.data.test_path);
    const Index n = p.data.size();
    p.data.inputs.conservativeResize(Eigen::NoChange, n + test.size());
    p.data.inputs.rightCols(test.size()) = test.inputs;
    p.data.targets.conservativeResize(Eigen::NoChange, n + test.size());
    p.data.targets.rightCols(test.size()) = test.targets;
    p.split.test.clear();
    for (Index r = 0; r < test.size(); ++r) p.split.test.push_back(n + r);
  }
  // One copy of the training rows outlives this function, the posterior's (large data: every copy
  // of the rows counts).
  Dataset train_std;
  {
    const Dataset train = p.data.subset(p.split.train);
    p.standardizer = cfg.data.standardize ? Standardizer::fit(train) : Standardizer::identity(train);
    // Images: one mean and sd per channel, not per pixel (an always-black border stays black).
    if (images && cfg.data.standardize) p.standardizer = per_channel(p.standardizer, train.inputs, image_shape[0]);
    if (is_classification(cfg.probability.likelihood) && cfg.data.standardize) p.standardizer = inputs_only(p.standardizer);
    train_std = p.standardizer.transform(train);
  }
  if ((!cfg.data.ood_path.empty() || cfg.data.ood_inputs) && !is_classification(cfg.probability.likelihood))
    throw InputError(fmt::format("--ood-data: the detection scores are of class probabilities (entropy, mutual information); "
                                 "--likelihood {} is a regression (uqnn evaluate --ood-data scores a regression's predictive sd)",
                                 cfg.probability.likelihood));
  if (!cfg.data.ood_path.empty()) p.ood_inputs = load_ood_inputs(cfg.data, p.data, images, cfg.model.input_shape);
  if (cfg.data.ood_inputs) {
    if (cfg.data.ood_inputs->rows() != p.data.input_dim())
      throw InputError(fmt::format("ood_X has {} columns, X has {}", cfg.data.ood_inputs->rows(), p.data.input_dim()));
    p.ood_inputs = *cfg.data.ood_inputs;
  }

  // Model and posterior, in standardised units. A cnn on image files takes their shape unless
  // --input-shape is given.
  ModelConfig model_config = cfg.model;
  if (images && model_config.input_shape.empty()) model_config.input_shape = image_shape;
  const auto& standardizer = p.standardizer;
  const double target_scale = standardizer.target_scale().size() ? standardizer.target_scale()[0] : 1.0;
  const auto likelihood = build_likelihood(cfg.probability, target_scale);
  const Index outputs = likelihood->model_outputs(p.data.target_dim());
  std::shared_ptr<Model> network;
  if (cfg.external_network) {
    network = std::make_shared<ExternalModel>(cfg.external_network);
    if (network->input_dim() != p.data.input_dim() || network->output_dim() != outputs)
      throw InputError(fmt::format("{} takes {} inputs and gives {} outputs; the data have {} input columns and --likelihood {} "
                                   "needs {} outputs",
                                   cfg.external_network->description, network->input_dim(), network->output_dim(), p.data.input_dim(),
                                   cfg.probability.likelihood, outputs));
  } else {
    network = build_model(model_config, p.data.input_dim(), outputs);
  }
  const auto model = with_shrinkage(cfg.probability, std::move(network));
  check_fit_memory(cfg, fit_size(cfg.model, *model, p.data, p.split));  // before anything of size K is allocated
  const auto prior = build_prior(cfg.probability, *model);
  p.posterior = std::make_shared<Posterior>(model, likelihood, prior, std::move(train_std.inputs), std::move(train_std.targets));

  if (!p.split.validation.empty()) p.validation_std = standardizer.transform(p.data.subset(p.split.validation));
  if (!cfg.data.validation_path.empty()) {
    // A held-out file (--valid): same columns, standardised with the training rows' statistics.
    const Dataset held_out = load_fit_dataset(cfg.data.validation_path, p.data.target_names, p.data.input_names);
    p.validation_std = standardizer.transform(held_out);
  }
  return p;
}

namespace {

/// The work layout of one fit (--shards, --part; MPI ranks from the program's main), reset when the
/// fit ends however it ends.
struct WorkLayoutScope {
  WorkLayoutScope(int shards, Part part) { set_work_layout(shards, part); }
  ~WorkLayoutScope() { reset_work_layout(); }
  WorkLayoutScope(const WorkLayoutScope&) = delete;
  WorkLayoutScope& operator=(const WorkLayoutScope&) = delete;
};

/// The settings as a resumed run must find them: paths absolute (a run may be resumed from
/// another directory), without those a resumed run may change (threads, quiet, checkpoint_every)
/// and the output directory.
nlohmann::json comparable_settings(const FitConfig& cfg) {
  nlohmann::json settings = cfg.record.value("settings", nlohmann::json::object());
  for (const auto& group : fit_option_groups(cfg.method))
    for (const auto& option : group.options)
      if (option.type == OptionType::Path && settings.contains(option.name) && settings[option.name].is_string() &&
          !settings[option.name].get<std::string>().empty())
        settings[option.name] = std::filesystem::absolute(settings[option.name].get<std::string>()).lexically_normal().string();
  return settings;
}

/// A fingerprint of the training data (FNV-1a over the standardised inputs' and targets' bits): a
/// resumed run must continue on the data it started on.
std::string data_fingerprint(const Posterior& posterior) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const Mat* m : {&posterior.inputs(), &posterior.targets()}) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(m->data());
    for (std::size_t i = 0; i < static_cast<std::size_t>(m->size()) * sizeof(double); ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

/// Before the chains of a checkpointing fit. A fresh run removes the states a stopped run left in
/// the directory (they belong to another run) and records its settings and data fingerprint in
/// checkpoint/fit.json (for --resume). A resumed run checks that it is that run: same settings
/// (bar threads, quiet, checkpoint_every), same data.
void prepare_checkpoint_dir(const FitConfig& cfg, const Posterior& posterior) {
  static const std::set<std::string> may_change{"threads", "quiet", "checkpoint_every", "out"};
  const auto record = cfg.checkpoint_dir / "fit.json";
  nlohmann::json settings = comparable_settings(cfg);
  const std::string fingerprint = data_fingerprint(posterior);
  if (cfg.resume) {
    nlohmann::json saved;
    try {
      std::ifstream in(record);
      saved = nlohmann::json::parse(in);
    } catch (const std::exception&) {
      throw InputError(fmt::format("resume: {} is missing or not valid JSON (the run finished, or was never checkpointed)",
                                   record.string()));
    }
    const nlohmann::json saved_settings = saved.value("settings", nlohmann::json::object());
    for (const auto& [name, value] : saved_settings.items())
      if (!may_change.count(name) && settings.value(name, nlohmann::json()) != value)
        throw InputError(fmt::format("resume: the run in {} was started with {} = {}, this one has {} (a resumed run "
                                     "continues with the settings it was started with)",
                                     cfg.checkpoint_dir.parent_path().string(), name, value.dump(),
                                     settings.value(name, nlohmann::json()).dump()));
    if (saved.value("data_fingerprint", std::string()) != fingerprint)
      throw InputError(fmt::format("resume: the training data differ from those the run in {} started on",
                                   cfg.checkpoint_dir.parent_path().string()));
    return;
  }
  std::error_code error;
  std::filesystem::remove_all(cfg.checkpoint_dir, error);
  std::filesystem::create_directories(cfg.checkpoint_dir, error);
  if (error)
    throw InputError(fmt::format("{}: the checkpoint directory cannot be made ({})", cfg.checkpoint_dir.string(), error.message()));
  atomic_write_text(record, nlohmann::json{{"format", "uqnn-checkpoint"},
                                           {"settings", settings},
                                           {"data_fingerprint", fingerprint},
                                           {"invocation", cfg.record.value("invocation", nlohmann::json())}}
                                .dump(2));
}

/// A fresh run's OUT/checkpoint, undone when the run fails: the previous run's checkpoint (a
/// stopped run's state) is moved aside, beside OUT under the staging directories' prefix (so that
/// the next run removes it if this one is killed), and moved back; a directory OUT this run made
/// is removed again when nothing else was put in it.
class CheckpointRollback {
 public:
  CheckpointRollback() = default;
  CheckpointRollback(const CheckpointRollback&) = delete;
  CheckpointRollback& operator=(const CheckpointRollback&) = delete;
  ~CheckpointRollback() { discard_saved(); }

  void arm(const std::filesystem::path& out_dir, const std::filesystem::path& checkpoint_dir) {
    std::error_code ec;
    out_ = out_dir;
    dir_ = checkpoint_dir;
    out_existed_ = std::filesystem::exists(out_dir, ec);
    if (std::filesystem::exists(checkpoint_dir, ec)) {
      saved_ = std::filesystem::absolute(out_dir, ec).lexically_normal().parent_path() /
               fmt::format(".{}.uqnn-staging-{}.checkpoint", out_dir.filename().string(), ::getpid());
      std::filesystem::remove_all(saved_, ec);
      std::filesystem::rename(checkpoint_dir, saved_, ec);
      if (ec) saved_.clear();  // left in place: prepare_checkpoint_dir replaces it as before
    }
    armed_ = true;
  }
  /// The run's files are in place: the previous checkpoint is no longer wanted.
  void disarm() {
    armed_ = false;
    discard_saved();
  }
  /// The run failed: OUT as it was.
  void restore() {
    if (!armed_) return;
    armed_ = false;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    if (!saved_.empty()) {
      std::filesystem::rename(saved_, dir_, ec);
      if (!ec) saved_.clear();
    }
    if (!out_existed_ && std::filesystem::is_empty(out_, ec)) std::filesystem::remove(out_, ec);
  }

 private:
  void discard_saved() {
    std::error_code ec;
    if (!saved_.empty()) std::filesystem::remove_all(saved_, ec);
    saved_.clear();
  }
  std::filesystem::path out_, dir_, saved_;
  bool out_existed_ = true, armed_ = false;
};

}  // namespace

FitReport run_fit(const FitConfig& given, const MethodRunner& method) {
  given.training.validate();
  const auto started = std::chrono::steady_clock::now();
  const WorkLayoutScope scope(given.shards, Part::parse(given.part, "--part"));
  // SIGINT, SIGTERM and SIGHUP stop the chains at their next iteration and training at its next
  // epoch; what was drawn or trained is written, and the CLI exits with 128 + the signal.
  const StopSignalScope stop_scope;
  const WorkLayout& layout = work_layout();
  FitConfig cfg = given;
  // The ranks of a shard group must make the same posterior evaluations in the same order: one
  // chain at a time per rank (MPI is called from one thread).
  if (cfg.shards > 1) cfg.threads = 1;
  const bool root = layout.world->is_root();
  // Rank 0 writes every file into a staging directory beside --out (checked writable and locked
  // before any work), moved into place only when the whole set is written.
  std::optional<StagedOutputDir> out;
  if (root) {
    out.emplace(given.out_dir, "--out");
    cfg.out_dir = out->staging();
  }
  // Rank 0 reports; the other ranks' chains and members run silently.
  const std::shared_ptr<Reporter> reporter =
      !root ? make_silent_reporter() : cfg.reporter ? cfg.reporter : make_stderr_reporter(cfg.quiet);
  const auto log = [&](const std::string& message) { reporter->message(MessageLevel::Info, message); };
  const FitProblem problem = make_fit_problem(cfg);
  const auto& data = problem.data;
  const auto& split = problem.split;
  const auto& posterior = problem.posterior;
  log(fmt::format("uqnn fit: {} rows ({} train, {} validation, {} test{}), {} inputs, {} model with {} parameters, method {}",
                  data.size(), split.train.size(), split.validation.size(), split.test.size(),
                  split.calibration.empty() ? std::string() : fmt::format(", {} calibration", split.calibration.size()), data.input_dim(),
                  posterior->model().kind(), posterior->model().num_params(), cfg.method));
  if (const auto w = constant_inputs_warning(problem.standardizer)) reporter->message(MessageLevel::Warning, w->message);

  if (cfg.shards > 1) {
    posterior->distribute_rows(layout.shards);
    log(fmt::format("uqnn fit: {} MPI ranks: {} chain group(s) x {} shards of about {} training rows", layout.world->size(),
                    layout.chains->size(), cfg.shards, split.train.size() / static_cast<std::size_t>(cfg.shards)));
  } else if (layout.world->size() > 1) {
    log(fmt::format("uqnn fit: {} MPI ranks share out the chains / members", layout.world->size()));
  }
  // Methods that run chains keep each chain's state in --out/checkpoint (not in the staging
  // directory: it must outlive a killed run), with the run's settings for --resume.
  const bool checkpoints = !method && find_method(cfg.method).checkpoints;
  if (cfg.resume && !checkpoints)
    throw InputError(fmt::format("--resume: --method {} keeps no checkpoint", cfg.method));
  // All or nothing: a fresh run that is refused (a method's own checks), fails or cannot write
  // leaves --out as it was, without the checkpoint it began (a stopped run keeps it, to resume).
  CheckpointRollback rollback;
  if (checkpoints) cfg.checkpoint_dir = given.out_dir / "checkpoint";
  if (checkpoints && root && !cfg.resume) rollback.arm(given.out_dir, cfg.checkpoint_dir);
  try {
  if (checkpoints) {
    if (root) prepare_checkpoint_dir(cfg, *posterior);
    (void)layout.world->all_gather("");  // no rank writes a chain's state before rank 0 cleared old ones
  }
  const bool has_validation = !split.validation.empty() || !cfg.data.validation_path.empty();
  const FitContext context{cfg, posterior, has_validation ? problem.validation_std.inputs : posterior->inputs(),
                           has_validation ? problem.validation_std.targets : posterior->targets(), has_validation, reporter};
  MethodResult result = method ? method(context) : run_method(context);
  posterior->distribute_rows(nullptr);  // what follows runs on rank 0 alone
  const std::string resume_hint =
      checkpoints ? fmt::format("; the run's state is in {}: `uqnn fit --resume {}` (Python: fit(..., resume=True)) "
                                "continues the run",
                                cfg.checkpoint_dir.string(), given.out_dir.string())
                  : "";
  if (result.draws.empty() && stop_requested())
    throw std::runtime_error(fmt::format("stopped by signal {} before the first draw: nothing to write{}", stop_signal(), resume_hint));
  if (result.draws.empty()) throw std::runtime_error("method " + cfg.method + " returned no draws");
  if (stop_requested() && !result.info.value("interrupted", false)) {
    result.info["interrupted"] = true;
    log(fmt::format("{}: stopped by signal {}: writing what was trained so far", cfg.method, stop_signal()));
  }
  // Every rank holds every draw; rank 0 alone writes the files of a single-process run.
  if (!root) return {};

  // A method whose draws are not the network's weights (nngp) gives the posterior they belong to.
  const std::shared_ptr<const Posterior> drawn = result.posterior ? result.posterior : std::shared_ptr<const Posterior>(posterior);
  FitOutput output{cfg, data, split, problem.standardizer, drawn, result};
  if (problem.ood_inputs) output.ood_inputs = &*problem.ood_inputs;
  output.inputs_in_predictions = !problem.image_files;
  output.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  FitReport report = write_fit_output(output);
  out->commit();
  rollback.disarm();
  for (auto& file : report.files) file = out->final_path(file);
  if (checkpoints) {
    if (result.info.value("interrupted", false)) {
      log(fmt::format("stopped{}", resume_hint));
    } else {
      std::error_code ignored;  // the run is complete: its checkpoint has served
      std::filesystem::remove_all(cfg.checkpoint_dir, ignored);
    }
  }
  return report;
  } catch (...) {
    // Stopped by a signal: the checkpoint is the run's state, for --resume.
    if (!stop_requested()) rollback.restore();
    throw;
  }
}

}  // namespace uqnn
