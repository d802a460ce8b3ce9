#pragma once
/// @file Cnn: convolutional and residual networks on images as a Model (issue 55 items 1-2).
///
/// f(theta, X) maps a batch X [C*H*W, n] (one channel-major image per column) through a list of
/// CnnLayer (nn/cnn_layer.hpp) to outputs [output_dim, n]. It writes one templated pass, like Mlp,
/// and inherits from ModelBase the gradient, float32, exact Hessian-vector products (dual numbers),
/// Jacobian-vector products and per-example Jacobians.
///
/// Convolutions are im2col + Eigen GEMM over chunks of examples (the weight gradient sums the chunk
/// in one product); float32 runs the same code in float. No layer couples the examples of a batch
/// (GroupNorm, FRN and BatchNorm's eval-mode affine map only), so the likelihood factorises over
/// examples as inference over weights needs.
///
/// References: LeCun et al. 1998 (LeNet-5); He et al. 2016 (ResNet, BasicBlock); Wu & He 2018
/// (GroupNorm); Singh & Krishnan 2020 (FRN); Izmailov et al. 2021 (HMC on ResNet-20 with FRN).
#include <string>
#include <vector>

#include "uqnn/nn/cnn_layer.hpp"
#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/nn/model.hpp"

namespace uqnn {

class Cnn : public ModelBase<Cnn> {
 public:
  /// `layers` as described (names, shapes and offsets are filled in here); the last layer's output
  /// is the model's output (output_dim = its C*H*W). `description` is the layer-list string the
  /// network came from, if any (recorded in model.json for the reader; `layers` is what counts).
  /// Throws InputError on a layer that does not fit its input (kernel larger than the padded input,
  /// channels not divisible by groups, ...), naming the layer.
  Cnn(ImageShape input, std::vector<CnnLayer> layers, InitScheme init = InitScheme::He, std::string description = "");

  std::string kind() const override { return "cnn"; }
  Index input_dim() const override { return input_.size(); }
  Index output_dim() const override { return output_dim_; }
  const ParamLayout& layout() const override { return layout_; }
  const ImageShape& input_shape() const { return input_; }
  const std::vector<CnnLayer>& layers() const { return layers_; }
  const std::string& description() const { return description_; }
  InitScheme init_scheme() const { return init_; }
  /// The sum over layers of their outputs' sizes (per example): the activations a pass keeps.
  Index activation_size() const { return activation_size_; }
  /// Examples evaluated together: larger batches go through in chunks of this many (the
  /// activations of about 2^25 values kept at a time; the results differ only by rounding).
  Index examples_per_pass() const;
  Vec initial_params(Rng& rng) const override;
  nlohmann::json to_json() const override;
  /// From to_json()'s description (make_model calls it).
  static Cnn from_json(const nlohmann::json& description);

  /// What K-FAC needs of each top-level Conv and Linear layer (Grosse and Martens 2016): its input
  /// and the cotangent of its output (before the activation that follows it) for the output
  /// cotangent G [output_dim, n], in float64, one forward and one backward pass. Layers inside
  /// residual blocks are not listed.
  struct LayerStatistics {
    std::vector<std::size_t> layer;  ///< index into layers()
    std::vector<Mat> inputs;         ///< [in_shape.size(), n] each
    std::vector<Mat> output_cotangents;  ///< [out_shape.size(), n] each
  };
  LayerStatistics layer_statistics(const Vec& theta, const Mat& X, const Mat& G) const;

  /// Outputs, and with `loss` its value and gradient (added to grad); T is double, float or Dual.
  /// Defined in src/nn/cnn.cpp for those three.
  template <typename T>
  MatT<T> evaluate(const T* theta, const MatT<T>& X, const OutputLoss<T>* loss, T* loss_value, T* grad) const;

 private:
  ImageShape input_;
  std::vector<CnnLayer> layers_;
  InitScheme init_;
  std::string description_;
  Index output_dim_ = 0, activation_size_ = 0;
  ParamLayout layout_;
};

extern template MatT<double> Cnn::evaluate<double>(const double*, const MatT<double>&, const OutputLoss<double>*, double*,
                                                   double*) const;
extern template MatT<float> Cnn::evaluate<float>(const float*, const MatT<float>&, const OutputLoss<float>*, float*,
                                                 float*) const;
extern template MatT<Dual> Cnn::evaluate<Dual>(const Dual*, const MatT<Dual>&, const OutputLoss<Dual>*, Dual*, Dual*) const;

}  // namespace uqnn
