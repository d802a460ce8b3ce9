#pragma once
/// @file CnnLayer: one layer of a convolutional or residual network (nn/cnn.hpp), as an explicit
/// description that model.json records and PyTorch modules translate to.
///
/// Images are [C, H, W] per example, stored channel-major (PyTorch's flattening of a [C, H, W]
/// tensor: entry c*H*W + h*W + w) as one column of a batch [C*H*W, n], like every other batch, so
/// samplers, writers and predictive code need no change (../DESIGN.md, "Networks beyond dense layers").
/// Parameters keep PyTorch's order and shapes: a convolution's weight [out, in/groups, kh, kw]
/// row-major then its bias [out]; a normalisation's weight then bias. A PyTorch state_dict is a copy.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/types.hpp"
#include "uqnn/nn/activation.hpp"

namespace uqnn {

/// The shape of one example's activations: channels x height x width (a feature vector is [F, 1, 1]).
struct ImageShape {
  Index channels = 1, height = 1, width = 1;
  Index size() const { return channels * height * width; }
  Index plane() const { return height * width; }
  bool operator==(const ImageShape&) const = default;
  /// "1x28x28".
  std::string to_string() const;
};

enum class CnnLayerType {
  Conv,           ///< Conv2d: out channels, kernel, stride, padding, groups, optional bias
  MaxPool,        ///< MaxPool2d (padding counts as -inf; the first maximum of a window takes the gradient, as in PyTorch)
  AvgPool,        ///< AvgPool2d (count_include_pad: padding counts as zeros, the divisor is always kh * kw)
  GlobalAvgPool,  ///< AdaptiveAvgPool2d(1): the mean of each channel, [C, 1, 1]
  Flatten,        ///< [C, H, W] -> [C*H*W, 1, 1]; the storage is unchanged (a no-op on the data)
  Linear,         ///< nn.Linear on the flattened input (a Linear after a spatial layer flattens it)
  Activation,     ///< element-wise activation (nn/activation.hpp)
  GroupNorm,      ///< nn.GroupNorm(groups, C, eps) with a per-channel affine map (weight, bias)
  FilterResponseNorm,  ///< FRN with TLU (Singh & Krishnan 2020): per-channel weight, bias, tau
  BatchNorm,      ///< nn.BatchNorm2d in eval mode: fixed running statistics, learnable weight and bias
  Residual,       ///< act(body(x) + shortcut(x)); an empty shortcut is the identity (ResNet's BasicBlock)
};

/// "conv", "maxpool", "avgpool", "gap", "flatten", "linear", "activation", "groupnorm", "frn",
/// "batchnorm", "residual" (the "type" of a layer in model.json).
std::string to_string(CnnLayerType type);

struct CnnLayer {
  CnnLayerType type = CnnLayerType::Activation;
  /// Prefix of the layer's parameter blocks ("conv1" gives "conv1.weight", "conv1.bias"); from_torch
  /// sets the PyTorch module path ("0", "layer1.0.conv1") so that the names are the state_dict's keys.
  std::string name;
  Index out = 0;  ///< Conv: output channels; Linear: output features
  Index kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;  ///< Conv and pools
  Index groups = 1;  ///< Conv: groups; GroupNorm: number of groups
  bool bias = true;  ///< Conv, Linear
  Activation activation = Activation::Identity;  ///< Activation; Residual: applied after the sum
  double eps = 1e-5;                             ///< GroupNorm, BatchNorm (1e-5), FRN (1e-6)
  std::vector<double> running_mean, running_var;  ///< BatchNorm: fixed statistics per channel
  std::vector<CnnLayer> body, shortcut;           ///< Residual

  // Set by Cnn when it compiles the network (not part of the description):
  ImageShape in_shape, out_shape;
  Index offset = 0;      ///< first parameter in theta
  Index num_params = 0;  ///< this layer's own parameters (a Residual: its body's and shortcut's)

  /// The description in model.json (type-specific fields only).
  nlohmann::json to_json() const;
  /// Throws InputError naming the field on a bad description.
  static CnnLayer from_json(const nlohmann::json& j);
};

}  // namespace uqnn
