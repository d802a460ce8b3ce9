#include "uqnn/services/fitted_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <map>

#include "uqnn/core/error.hpp"
#include "uqnn/io/user_file.hpp"
#include "uqnn/services/fit_output.hpp"

namespace uqnn {

namespace {

/// model.json is at most this large (an nngp run keeps its training inputs in it).
constexpr std::uintmax_t kMaxModelJsonBytes = std::uintmax_t{1} << 30;
/// A layer's width, an input or output dimension: at most the CSV reader's column bound.
constexpr double kMaxModelWidth = 1e6;
/// Parameters of a network read from model.json (8 GB per draw at the bound).
constexpr double kMaxModelParams = 1e9;

/// The sizes a model description holds (model.json's "model", nested for linearized and
/// non-centred models) checked before any is allocated: whole numbers in range, never 6.5 read as
/// 6 or 1e12 handed to an allocation (std::bad_alloc). Throws InputError naming the field.
void check_model_sizes(const nlohmann::json& d, const std::string& where) {
  // (A size of 0 is left to the model's own range check, which names the model kind.)
  static const std::map<std::string, double> kMinimum{{"input_dim", 0},  {"output_dim", 0},   {"hidden", 0},
                                                      {"width", 0},      {"num_layers", 0},   {"branch_input", 0},
                                                      {"trunk_input", 0}, {"branch_hidden", 0}, {"trunk_hidden", 0},
                                                      {"latent", 0},     {"depth", 0},        {"weight_order", -1}};
  if (!d.is_object()) return;
  const auto whole = [&](const nlohmann::json& v, const std::string& field, double minimum) {
    const bool ok = v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>()) &&
                    v.get<double>() >= minimum && v.get<double>() <= kMaxModelWidth;
    if (!ok)
      throw InputError(fmt::format("{}.{}: {} is invalid: it must be a whole number in [{:g}, {:g}]", where, field, v.dump(),
                                   minimum, kMaxModelWidth));
    return v.get<double>();
  };
  std::map<std::string, std::vector<double>> sizes;
  for (const auto& [key, value] : d.items()) {
    const auto it = kMinimum.find(key);
    if (it == kMinimum.end()) {
      if (value.is_object()) check_model_sizes(value, where + "." + key);
      continue;
    }
    if (value.is_array()) {
      if (value.size() > 10000) throw InputError(fmt::format("{}.{}: {} layers, more than 10000", where, key, value.size()));
      for (std::size_t i = 0; i < value.size(); ++i) sizes[key].push_back(whole(value[i], fmt::format("{}[{}]", key, i), it->second));
    } else {
      sizes[key].push_back(whole(value, key, it->second));
    }
  }
  // A dense network's parameters: (fan-in + 1) x fan-out per layer.
  if (sizes.count("input_dim") && sizes.count("output_dim")) {
    std::vector<double> widths{sizes["input_dim"].front()};
    for (double h : sizes["hidden"]) widths.push_back(h);
    if (sizes.count("width")) widths.push_back(sizes["width"].front());
    widths.push_back(sizes["output_dim"].front());
    double params = 0;
    for (std::size_t l = 1; l < widths.size(); ++l) params += (widths[l - 1] + 1) * widths[l];
    if (params > kMaxModelParams)
      throw InputError(fmt::format("{}: a network of {:.3g} parameters, more than the {:g} uqnn reads", where, params, kMaxModelParams));
  }
}

nlohmann::json read_model_json(const std::filesystem::path& path, const std::filesystem::path& dir) {
  if (!std::filesystem::exists(path)) throw InputError(path.string() + ": cannot open (is " + dir.string() + " a `uqnn fit` output directory?)");
  check_user_file(path, path.string(), kMaxModelJsonBytes);  // a directory, a FIFO, a device
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open (is " + dir.string() + " a `uqnn fit` output directory?)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path.string() + ": not valid JSON: " + e.what());
  }
  const auto format = j.is_object() ? j.find("format") : j.end();  // value() would throw for a non-string
  if (!j.is_object() || format == j.end() || !format->is_string() || format->get<std::string>() != "uqnn-fit")
    throw InputError(path.string() + ": field 'format' must be \"uqnn-fit\"");
  return j;
}

/// The draws file model.json names: a plain file name in the run directory, never a path that
/// leaves it (a model.json the user did not write must not make uqnn read other files).
std::filesystem::path draws_path(const nlohmann::json& j, const std::filesystem::path& dir, const std::filesystem::path& model_path) {
  const auto it = j.find("draws_file");
  if (it == j.end()) return dir / "draws.csv";
  if (!it->is_string()) throw InputError(model_path.string() + ": field 'draws_file' must be a file name");
  const std::filesystem::path name = it->get<std::string>();
  if (name.empty() || name.has_parent_path() || name.is_absolute() || name == "." || name == "..")
    throw InputError(model_path.string() +
                     ": field 'draws_file' must be a plain file name inside the run directory (no directories, no '..')");
  return dir / name;
}

}  // namespace

FittedModel FittedModel::load_model(const std::filesystem::path& dir) {
  FittedModel f;
  f.dir_ = dir;
  const auto model_path = dir / "model.json";
  f.json_ = read_model_json(model_path, dir);
  for (const char* field : {"model", "likelihood", "input_names", "target_names"})
    if (!f.json_.contains(field)) throw InputError(fmt::format("{}: field '{}' is missing", model_path.string(), field));
  if (const auto it = f.json_.find("num_draws");
      it != f.json_.end() && !(it->is_number_unsigned() || (it->is_number_integer() && it->get<std::int64_t>() >= 0)))
    throw InputError(fmt::format("{}: num_draws: {} is invalid: it must be a whole number >= 0", model_path.string(), it->dump()));
  check_model_sizes(f.json_.at("model"), model_path.string() + ": model");
  try {
    f.method_ = f.json_.value("method", std::string());
    f.model_ = make_model(f.json_.at("model"));
    f.likelihood_ = make_likelihood(f.json_.at("likelihood"));
    f.input_names_ = f.json_.at("input_names").get<std::vector<std::string>>();
    f.target_names_ = f.json_.at("target_names").get<std::vector<std::string>>();
    if (const auto it = f.json_.find("input_range"); it != f.json_.end()) {  // runs before it was recorded lack it
      f.input_min_ = it->at("min").get<std::vector<double>>();
      f.input_max_ = it->at("max").get<std::vector<double>>();
      if (f.input_min_.size() != f.input_names_.size() || f.input_max_.size() != f.input_names_.size())
        throw InputError(fmt::format("field 'input_range' has {} / {} entries for {} inputs", f.input_min_.size(),
                                     f.input_max_.size(), f.input_names_.size()));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(model_path.string() + ": " + e.what());
  } catch (const InputError& e) {  // the model or likelihood reader's own message, without the file
    throw InputError(model_path.string() + ": " + e.what());
  }
  if (!f.json_.contains("standardizer")) throw InputError(model_path.string() + ": field 'standardizer' is missing");
  f.standardizer_ = Standardizer::from_json(f.json_.at("standardizer"), model_path.string());
  f.layout_ = f.model_->layout();
  f.layout_.append(f.likelihood_->extra_layout(), "");

  return f;
}

FittedModel FittedModel::load(const std::filesystem::path& dir) {
  FittedModel f = load_model(dir);
  const auto path = draws_path(f.json_, dir, dir / "model.json");
  auto draws = std::make_shared<const Draws>(read_draws_file(path, f.layout_));
  if (draws->empty()) throw InputError(path.string() + ": no draws");
  f.draws_ = std::move(draws);
  return f;
}

FittedModel FittedModel::load_with_draws(const std::filesystem::path& dir, const Draws& draws) {
  FittedModel f = load_model(dir);
  require(!draws.empty() && draws.dim() == f.layout_.size(), "load_with_draws: draws",
          fmt::format("at least one, of dimension {} (the model's)", f.layout_.size()));
  f.draws_ = std::shared_ptr<const Draws>(&draws, [](const Draws*) {});  // borrowed
  return f;
}

bool FittedModel::regression() const { return likelihood_->kind() != "bernoulli" && likelihood_->kind() != "categorical"; }

PredictiveDraws FittedModel::predictive_draws(const Mat& inputs) const {
  if (inputs.rows() != static_cast<Index>(input_names_.size()))
    throw InputError(fmt::format("the model takes {} input column(s), got {}", input_names_.size(), inputs.rows()));
  return predict_draws(*model_, *likelihood_, *draws_, standardizer_.transform_inputs(inputs));
}

PredictiveSummary FittedModel::predict(const Mat& inputs, const std::vector<double>& levels, Rng& rng) const {
  PredictiveSummary s = summarize_predictive(predictive_draws(inputs), regression() ? levels : std::vector<double>{}, rng);
  if (regression()) rescale_summary(s, standardizer_.target_mean(), standardizer_.target_scale());
  return s;
}

RegressionMetrics FittedModel::metrics(const Mat& inputs, const Mat& targets, Rng& rng) const {
  if (!regression()) throw InputError("metrics: RMSE, NLL and interval coverage are for regression fits (" + likelihood_->kind() + " is a classification likelihood)");
  if (targets.cols() != inputs.cols() || targets.rows() != static_cast<Index>(target_names_.size()))
    throw InputError(fmt::format("metrics: targets must be {} column(s) x {} rows, got {} x {}", target_names_.size(), inputs.cols(), targets.rows(), targets.cols()));
  const PredictiveDraws pd = predictive_draws(inputs);
  PredictiveSummary s = summarize_predictive(pd, {0.5, 0.9, 0.95}, rng);
  rescale_summary(s, standardizer_.target_mean(), standardizer_.target_scale());
  const double log_scale = standardizer_.target_scale().array().log().sum();
  return regression_metrics(pd, s, standardizer_.transform_targets(targets), targets, log_scale);
}

Mat FittedModel::pointwise_log_likelihood(const Mat& inputs, const Mat& targets) const {
  if (targets.cols() != inputs.cols())
    throw InputError(fmt::format("{} target rows for {} input rows", targets.cols(), inputs.cols()));
  if (targets.rows() != static_cast<Index>(target_names_.size()))
    throw InputError(fmt::format("the model has {} target column(s), got {}", target_names_.size(), targets.rows()));
  const Mat x = standardizer_.transform_inputs(inputs);
  const Mat y = regression() ? standardizer_.transform_targets(targets) : targets;
  likelihood_->validate_targets(y);
  // p_original(y) = p_standardised(y_std) / prod_t scale_t (regression only: labels are not scaled).
  const double log_scale = regression() ? standardizer_.target_scale().array().log().sum() : 0.0;
  const Index P = model_->num_params();
  Mat out(draws_->size(), inputs.cols());
  draws_->for_each([&](Index s, const Vec& theta) {
    const Vec extra = theta.tail(theta.size() - P);
    out.row(s) = (likelihood_->pointwise_log_likelihood(model_->forward(theta.head(P), x), y, extra).array() - log_scale).matrix().transpose();
  });
  return out;
}

std::vector<Mat> FittedModel::sample_predictive(const Mat& inputs, const std::vector<Index>& draw_index, Rng& rng) const {
  const Mat x = standardizer_.transform_inputs(inputs);
  const Index P = model_->num_params();
  const std::string kind = likelihood_->kind();
  std::vector<Mat> out;
  out.reserve(draw_index.size());
  for (Index s : draw_index) {
    if (s < 0 || s >= draws_->size()) throw InputError(fmt::format("draw index {} is out of range", s));
    const Vec theta = draws_->draw(s);
    const Mat Y = model_->forward(theta.head(P), x);
    const Mat mean = likelihood_->mean(Y);
    if (kind == "bernoulli") {
      Mat y(mean.rows(), mean.cols());
      for (Index i = 0; i < y.size(); ++i) y(i) = rng.uniform() < mean(i) ? 1.0 : 0.0;
      out.push_back(std::move(y));
    } else if (kind == "categorical") {
      // mean is [classes, n]: one label per column.
      Mat y(1, mean.cols());
      for (Index i = 0; i < mean.cols(); ++i) {
        double u = rng.uniform(), cumulative = 0.0;
        Index label = mean.rows() - 1;
        for (Index c = 0; c < mean.rows(); ++c)
          if ((cumulative += mean(c, i)) > u) {
            label = c;
            break;
          }
        y(0, i) = static_cast<double>(label);
      }
      out.push_back(std::move(y));
    } else {
      const Mat sd = likelihood_->noise_variance(Y, theta.tail(theta.size() - P)).cwiseSqrt();
      Mat y(mean.rows(), mean.cols());
      for (Index i = 0; i < y.size(); ++i) y(i) = mean(i) + sd(i) * rng.normal();
      out.push_back(standardizer_.inverse_transform_targets(y));
    }
  }
  return out;
}

}  // namespace uqnn
