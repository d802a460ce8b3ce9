#pragma once
/// @file A network on its own, from its model.json description: what the Python module's
/// uqnn._core.Model evaluates (outputs, the gradient of sum(G .* f), Hessian-vector products) to
/// check uqnn's layers against PyTorch's and to translate PyTorch modules (uqnn.from_torch); and the
/// description of a cnn built from a layer list. The Python module reaches the library through
/// services only (scripts/check-layers), as the CLI does.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

class Model;

class Network {
 public:
  /// Any description make_model reads; InputError when it is invalid.
  explicit Network(const nlohmann::json& description);
  std::string kind() const;
  Index num_params() const;
  Index input_dim() const;
  Index output_dim() const;
  const ParamLayout& layout() const;
  nlohmann::json description() const;
  /// "float64" or "float32" (InputError otherwise, or for a model without a float32 path).
  void set_precision(const std::string& precision);
  /// The model's initialisation from Rng(seed, 0).
  Vec initial_params(std::uint64_t seed) const;
  /// f(theta, X), [output_dim, n]; X [input_dim, n]. InputError on wrong sizes.
  Mat forward(const Vec& theta, const Mat& X) const;
  /// sum(G .* f(theta, X)) and its gradient in theta (G [output_dim, n]).
  double value_and_gradient(const Vec& theta, const Mat& X, const Mat& G, Vec& grad) const;
  /// H v for theta -> sum(G .* f) + 0.5 sum(f .* f), exact (dual numbers).
  Vec hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X, const Mat& G) const;

 private:
  void check(const Vec& theta, const Mat& X) const;
  std::shared_ptr<Model> model_;
};

/// The model.json description of the cnn of layer list `layers` (nn/cnn_layer_list.hpp) on inputs
/// of `input_shape` (C, H, W) with `output_dim` outputs; init "auto" is He for relu-like activations
/// and Glorot otherwise. InputErrors name `layers` as "layers".
nlohmann::json cnn_description(const std::string& layers, const std::vector<Index>& input_shape, Index output_dim,
                               const std::string& activation, const std::string& init);

}  // namespace uqnn
