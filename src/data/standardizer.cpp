#include "uqnn/data/standardizer.hpp"

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/io/csv.hpp"

namespace uqnn {
namespace {

constexpr const char* kFormat = "uqnn.standardizer";
constexpr int kVersion = 1;

/// Per-row (= per-column of the file) mean and population sd of an [dim, n] matrix. A constant
/// row gets scale 1 (it standardises to 0, carrying no information, as scikit-learn's
/// StandardScaler does) when `constant_ok`, and its name goes into `constant`; otherwise it is an
/// error. Values whose squares overflow are always an error.
void fit_rows(const Mat& x, const std::vector<std::string>& names, const std::string& role, const std::string& source,
              Vec& mean, Vec& scale, bool constant_ok, std::vector<std::string>* constant) {
  const Index n = x.cols();
  mean = x.rowwise().mean();
  scale.resize(x.rows());
  for (Index r = 0; r < x.rows(); ++r) {
    const double sum_sq = (x.row(r).array() - mean[r]).square().sum();
    scale[r] = std::sqrt(sum_sq / static_cast<double>(n));  // population sd (ddof = 0), as np.std
    const std::string name = static_cast<std::size_t>(r) < names.size() ? names[static_cast<std::size_t>(r)]
                                                                        : "#" + std::to_string(r);
    if (!std::isfinite(mean[r]) || !std::isfinite(scale[r]))
      throw InputError(source + ": " + role + " column '" + name + "' has values too large to standardise (up to " +
                       format_double(x.row(r).cwiseAbs().maxCoeff()) + "): rescale the column or pass --no-standardize");
    // Exact constancy (max == min) rather than a threshold on sd: the mean of identical values can
    // differ from them in the last bit, which would give a tiny non-zero sd.
    if (x.row(r).maxCoeff() == x.row(r).minCoeff() || !(scale[r] > 0.0)) {
      if (!constant_ok)
        throw InputError(source + ": " + role + " column '" + name + "' is constant in the training data (every value is " +
                         format_double(x(r, 0)) + "), so it cannot be standardised; drop the column or pass " +
                         "--no-standardize");
      mean[r] = x(r, 0);
      scale[r] = 1.0;
      constant->push_back(name);
    }
  }
}

void check_rows(const Mat& x, const Vec& mean, const char* what) {
  if (x.rows() != mean.size())
    throw std::invalid_argument(std::string("Standardizer::") + what + ": expected " + std::to_string(mean.size()) +
                                " rows (one per column), got " + std::to_string(x.rows()));
}

Mat forward(const Mat& x, const Vec& mean, const Vec& scale, const char* what) {
  check_rows(x, mean, what);
  return (x.colwise() - mean).array().colwise() / scale.array();
}

Mat backward(const Mat& x, const Vec& mean, const Vec& scale, const char* what) {
  check_rows(x, mean, what);
  return (x.array().colwise() * scale.array()).matrix().colwise() + mean;
}

nlohmann::json block_to_json(const std::vector<std::string>& names, const Vec& mean, const Vec& scale) {
  return {{"names", names},
          {"mean", std::vector<double>(mean.data(), mean.data() + mean.size())},
          {"scale", std::vector<double>(scale.data(), scale.data() + scale.size())}};
}

void block_from_json(const nlohmann::json& json, const std::string& key, const std::string& source,
                     std::vector<std::string>& names, Vec& mean, Vec& scale) {
  const std::string where = source + ": field '" + key;
  if (!json.contains(key) || !json.at(key).is_object()) throw InputError(where + "' is missing or not an object");
  const auto& block = json.at(key);
  auto numbers = [&](const char* field) {
    if (!block.contains(field) || !block.at(field).is_array())
      throw InputError(where + "." + field + "' is missing or not an array");
    std::vector<double> values;
    for (std::size_t k = 0; k < block.at(field).size(); ++k) {
      const auto& v = block.at(field)[k];
      if (!v.is_number() || !std::isfinite(v.get<double>()))
        throw InputError(where + "." + field + "[" + std::to_string(k) + "]' must be a finite number, got " + v.dump());
      values.push_back(v.get<double>());
    }
    return Eigen::Map<const Vec>(values.data(), static_cast<Index>(values.size())).eval();
  };
  if (!block.contains("names") || !block.at("names").is_array())
    throw InputError(where + ".names' is missing or not an array");
  names.clear();
  for (const auto& name : block.at("names")) {
    if (!name.is_string()) throw InputError(where + ".names' must hold strings, got " + name.dump());
    names.push_back(name.get<std::string>());
  }
  mean = numbers("mean");
  scale = numbers("scale");
  if (mean.size() != static_cast<Index>(names.size()) || scale.size() != static_cast<Index>(names.size()))
    throw InputError(where + "': 'names', 'mean' and 'scale' must have the same length, got " +
                     std::to_string(names.size()) + ", " + std::to_string(mean.size()) + " and " +
                     std::to_string(scale.size()));
  for (Index r = 0; r < scale.size(); ++r)
    if (!(scale[r] > 0.0))
      throw InputError(where + ".scale[" + std::to_string(r) + "]' must be > 0, got " + format_double(scale[r]));
}

}  // namespace

Standardizer Standardizer::fit(const Dataset& train) {
  if (train.size() == 0) throw std::invalid_argument("Standardizer::fit: the training data has no rows");
  Standardizer s;
  const std::string source = train.source.empty() ? std::string("training data") : train.source;
  fit_rows(train.inputs, train.input_names, "input", source, s.input_mean_, s.input_scale_, true, &s.constant_inputs_);
  fit_rows(train.targets, train.target_names, "target", source, s.target_mean_, s.target_scale_, false, nullptr);
  s.input_names_ = train.input_names;
  s.target_names_ = train.target_names;
  s.is_identity_ = false;
  return s;
}

Standardizer Standardizer::identity(std::vector<std::string> input_names, std::vector<std::string> target_names) {
  Standardizer s;
  const auto d = static_cast<Index>(input_names.size()), t = static_cast<Index>(target_names.size());
  s.input_mean_ = Vec::Zero(d);
  s.input_scale_ = Vec::Ones(d);
  s.target_mean_ = Vec::Zero(t);
  s.target_scale_ = Vec::Ones(t);
  s.input_names_ = std::move(input_names);
  s.target_names_ = std::move(target_names);
  s.is_identity_ = true;
  return s;
}

Mat Standardizer::transform_inputs(const Mat& inputs) const {
  return forward(inputs, input_mean_, input_scale_, "transform_inputs");
}
Mat Standardizer::inverse_transform_inputs(const Mat& inputs) const {
  return backward(inputs, input_mean_, input_scale_, "inverse_transform_inputs");
}
Mat Standardizer::transform_targets(const Mat& targets) const {
  return forward(targets, target_mean_, target_scale_, "transform_targets");
}
Mat Standardizer::inverse_transform_targets(const Mat& targets) const {
  return backward(targets, target_mean_, target_scale_, "inverse_transform_targets");
}
Mat Standardizer::inverse_transform_target_sd(const Mat& sd) const {
  check_rows(sd, target_scale_, "inverse_transform_target_sd");
  return sd.array().colwise() * target_scale_.array();
}
Mat Standardizer::inverse_transform_target_variance(const Mat& variance) const {
  check_rows(variance, target_scale_, "inverse_transform_target_variance");
  return variance.array().colwise() * target_scale_.array().square();
}

Dataset Standardizer::transform(const Dataset& data) const {
  Dataset out;
  out.inputs = transform_inputs(data.inputs);
  out.targets = transform_targets(data.targets);
  out.input_names = data.input_names;
  out.target_names = data.target_names;
  out.source = data.source;
  return out;
}

nlohmann::json Standardizer::to_json() const {
  return {{"format", kFormat},
          {"version", kVersion},
          {"standardize", !is_identity_},
          {"inputs", block_to_json(input_names_, input_mean_, input_scale_)},
          {"targets", block_to_json(target_names_, target_mean_, target_scale_)}};
}

bool Standardizer::operator==(const Standardizer& other) const {
  auto same = [](const Vec& a, const Vec& b) { return a.size() == b.size() && (a.array() == b.array()).all(); };
  return is_identity_ == other.is_identity_ && input_names_ == other.input_names_ &&
         target_names_ == other.target_names_ && same(input_mean_, other.input_mean_) &&
         same(input_scale_, other.input_scale_) && same(target_mean_, other.target_mean_) &&
         same(target_scale_, other.target_scale_);
}

Standardizer Standardizer::from_json(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object()) throw InputError(source + ": expected a JSON object, got " + std::string(json.type_name()));
  if (json.value("format", std::string()) != kFormat)
    throw InputError(source + ": field 'format' must be \"" + kFormat + "\"");
  if (!json.contains("version") || !json.at("version").is_number_integer() || json.at("version").get<int>() != kVersion)
    throw InputError(source + ": field 'version' must be " + std::to_string(kVersion));
  if (!json.contains("standardize") || !json.at("standardize").is_boolean())
    throw InputError(source + ": field 'standardize' is missing or not true/false");
  Standardizer s;
  block_from_json(json, "inputs", source, s.input_names_, s.input_mean_, s.input_scale_);
  block_from_json(json, "targets", source, s.target_names_, s.target_mean_, s.target_scale_);
  s.is_identity_ = !json.at("standardize").get<bool>();
  return s;
}

}  // namespace uqnn
