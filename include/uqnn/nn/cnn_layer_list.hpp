#pragma once
/// @file The layer-list language of `uqnn fit --model cnn --layers ...` (docs/networks.md).
///
/// A list is comma-separated tokens, each a layer (or a preset) whose output feeds the next:
///   conv<out>k<k>[s<stride>][p<pad>][g<groups>][nb]   Conv2d; stride 1, padding 0, groups 1, with bias
///                                                     (nb: no bias); followed by the activation
///   pool<k>[s<stride>][p<pad>]  (or maxpool<k>...)     max pooling; stride k by default
///   avgpool<k>[s<stride>][p<pad>]                      average pooling (padding counted as zeros)
///   gap                                                global average pooling ([C, 1, 1])
///   flatten                                            [C, H, W] -> [C*H*W] (fc flattens anyway)
///   fc<n>                                              Linear to n features, followed by the activation
///   gn<groups>                                         GroupNorm (eps 1e-5) with a per-channel affine map
///   frn                                                filter response normalisation with TLU (eps 1e-6)
///   bn                                                 BatchNorm as a fixed affine map (running mean 0,
///                                                      variance 1: weight and bias are the parameters)
///   res<out>[s<stride>][gn<groups>|frn|bn|nn]          ResNet BasicBlock: conv3x3(stride) norm act conv3x3
///                                                      norm, plus the identity or a 1x1 conv(stride) and
///                                                      norm when the shape changes; then act. Norm GroupNorm
///                                                      with min(out, 8) groups by default (nn: none)
///   resnet<depth>[w<width>][gn<groups>|frn|bn|nn]      CIFAR-style ResNet (He et al. 2016, section 4.2):
///                                                      depth = 6 m + 2 (8, 14, 20, 32, ...), a 3x3 stem
///                                                      conv of `width` (16) channels and its norm, three
///                                                      stages of m blocks of width, 2 width, 4 width
///                                                      (strides 1, 2, 2), then gap
/// The activation (--activation) follows every conv and fc token; a normalisation token right after a
/// conv goes between the conv and its activation (conv -> norm -> act, as in ResNets). The output
/// layer, a Linear to the model's outputs with no activation, is appended.
#include <string>
#include <vector>

#include "uqnn/nn/cnn_layer.hpp"

namespace uqnn {

/// The explicit layers of `text` on inputs of shape `input`, the output layer of `output_dim`
/// appended; parameter blocks named conv1, conv2, fc1, gn1, res1.conv1, ... in order. Throws
/// InputError naming `what` (e.g. "--layers"), the token, its position (1-based) and what is valid,
/// or the layer whose shape does not fit.
std::vector<CnnLayer> parse_cnn_layers(const std::string& text, const ImageShape& input, Index output_dim,
                                       Activation activation, const std::string& what = "--layers");

/// (C, H, W) from a list of three positive sizes, or two (H, W: one channel); InputError otherwise
/// naming `what`. With `input_dim` > 0, C*H*W must equal it.
ImageShape parse_image_shape(const std::vector<Index>& dims, Index input_dim, const std::string& what = "--input-shape");

}  // namespace uqnn
