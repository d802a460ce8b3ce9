#include "uqnn/nn/cnn_layer.hpp"

#include <fmt/format.h>

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

std::string ImageShape::to_string() const { return fmt::format("{}x{}x{}", channels, height, width); }

namespace {

constexpr std::pair<CnnLayerType, const char*> kCnnLayerTypeNames[] = {
    {CnnLayerType::Conv, "conv"},         {CnnLayerType::MaxPool, "maxpool"},    {CnnLayerType::AvgPool, "avgpool"},
    {CnnLayerType::GlobalAvgPool, "gap"}, {CnnLayerType::Flatten, "flatten"},    {CnnLayerType::Linear, "linear"},
    {CnnLayerType::Activation, "activation"}, {CnnLayerType::GroupNorm, "groupnorm"},
    {CnnLayerType::FilterResponseNorm, "frn"}, {CnnLayerType::BatchNorm, "batchnorm"}, {CnnLayerType::Residual, "residual"},
};

CnnLayerType parse_cnn_layer_type(const std::string& name) {
  std::string valid;
  for (const auto& [type, text] : kCnnLayerTypeNames) {
    if (name == text) return type;
    valid += (valid.empty() ? "" : ", ") + std::string(text);
  }
  throw InputError("cnn layer type '" + name + "' is not known: valid are " + valid);
}

/// A size of a description: a whole number in [0, 10^6] (never 6.5 read as 6, nor 10^12 handed to
/// an allocation); the layer's own checks then say which sizes must be >= 1.
Index cnn_size_of(const nlohmann::json& j, const std::string& field) {
  constexpr double kMaxSize = 1e6;
  const bool ok = j.is_number() && std::isfinite(j.get<double>()) && j.get<double>() == std::floor(j.get<double>()) &&
                  j.get<double>() >= 0 && j.get<double>() <= kMaxSize;
  if (!ok) throw InputError(fmt::format("cnn layer: {} {} is invalid: it must be a whole number in [0, {:g}]", field, j.dump(), kMaxSize));
  return static_cast<Index>(j.get<double>());
}

/// [a, b] from a JSON pair, or [a, a] from a number.
std::pair<Index, Index> cnn_pair_of(const nlohmann::json& j, const std::string& field) {
  if (j.is_array()) {
    if (j.size() != 2) throw InputError("cnn layer: " + field + " must be a number or a pair [h, w], not " + j.dump());
    return {cnn_size_of(j.at(0), field), cnn_size_of(j.at(1), field)};
  }
  const Index v = cnn_size_of(j, field);
  return {v, v};
}

}  // namespace

std::string to_string(CnnLayerType type) {
  for (const auto& [t, text] : kCnnLayerTypeNames)
    if (t == type) return text;
  return "?";
}

nlohmann::json CnnLayer::to_json() const {
  nlohmann::json j = {{"type", uqnn::to_string(type)}};
  const auto window = [&] {
    j["kernel"] = {kernel_h, kernel_w};
    j["stride"] = {stride_h, stride_w};
    j["padding"] = {pad_h, pad_w};
  };
  switch (type) {
    case CnnLayerType::Conv:
      j["name"] = name;
      j["out"] = out;
      window();
      j["groups"] = groups;
      j["bias"] = bias;
      break;
    case CnnLayerType::MaxPool:
    case CnnLayerType::AvgPool: window(); break;
    case CnnLayerType::GlobalAvgPool:
    case CnnLayerType::Flatten: break;
    case CnnLayerType::Linear:
      j["name"] = name;
      j["out"] = out;
      j["bias"] = bias;
      break;
    case CnnLayerType::Activation: j["activation"] = uqnn::to_string(activation); break;
    case CnnLayerType::GroupNorm:
      j["name"] = name;
      j["groups"] = groups;
      j["eps"] = eps;
      break;
    case CnnLayerType::FilterResponseNorm:
      j["name"] = name;
      j["eps"] = eps;
      break;
    case CnnLayerType::BatchNorm:
      j["name"] = name;
      j["eps"] = eps;
      j["running_mean"] = running_mean;
      j["running_var"] = running_var;
      break;
    case CnnLayerType::Residual: {
      nlohmann::json b = nlohmann::json::array(), s = nlohmann::json::array();
      for (const auto& l : body) b.push_back(l.to_json());
      for (const auto& l : shortcut) s.push_back(l.to_json());
      j["body"] = b;
      j["shortcut"] = s;
      j["activation"] = uqnn::to_string(activation);
      break;
    }
  }
  return j;
}

CnnLayer CnnLayer::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw InputError("cnn layer: each layer must be an object with a \"type\", not " + j.dump());
  CnnLayer l;
  l.type = parse_cnn_layer_type(j.at("type").get<std::string>());
  l.name = j.value("name", std::string());
  const auto window = [&](bool stride_defaults_to_kernel) {
    std::tie(l.kernel_h, l.kernel_w) = cnn_pair_of(j.at("kernel"), "kernel");
    if (j.contains("stride")) std::tie(l.stride_h, l.stride_w) = cnn_pair_of(j.at("stride"), "stride");
    else if (stride_defaults_to_kernel) std::tie(l.stride_h, l.stride_w) = std::pair{l.kernel_h, l.kernel_w};
    if (j.contains("padding")) std::tie(l.pad_h, l.pad_w) = cnn_pair_of(j.at("padding"), "padding");
  };
  switch (l.type) {
    case CnnLayerType::Conv:
      l.out = cnn_size_of(j.at("out"), "out");
      window(false);
      l.groups = j.contains("groups") ? cnn_size_of(j.at("groups"), "groups") : 1;
      l.bias = j.value("bias", true);
      break;
    case CnnLayerType::MaxPool:
    case CnnLayerType::AvgPool: window(true); break;
    case CnnLayerType::GlobalAvgPool:
    case CnnLayerType::Flatten: break;
    case CnnLayerType::Linear:
      l.out = cnn_size_of(j.at("out"), "out");
      l.bias = j.value("bias", true);
      break;
    case CnnLayerType::Activation: l.activation = parse_activation(j.at("activation").get<std::string>()); break;
    case CnnLayerType::GroupNorm:
      l.groups = cnn_size_of(j.at("groups"), "groups");
      l.eps = j.value("eps", 1e-5);
      break;
    case CnnLayerType::FilterResponseNorm: l.eps = j.value("eps", 1e-6); break;
    case CnnLayerType::BatchNorm:
      l.eps = j.value("eps", 1e-5);
      l.running_mean = j.value("running_mean", std::vector<double>());
      l.running_var = j.value("running_var", std::vector<double>());
      break;
    case CnnLayerType::Residual:
      for (const auto& b : j.at("body")) l.body.push_back(from_json(b));
      for (const auto& s : j.value("shortcut", nlohmann::json::array())) l.shortcut.push_back(from_json(s));
      l.activation = parse_activation(j.value("activation", std::string("identity")));
      break;
  }
  return l;
}

}  // namespace uqnn
