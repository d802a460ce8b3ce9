#pragma once
/// @file ExternalModel: a network evaluated outside uqnn (a PyTorch module through the Python
/// module), seen by every method through the one Model interface.
///
/// uqnn's own layers are templated passes (ModelBase); a network uqnn cannot translate instead
/// gives four functions over the flat parameter vector theta: its outputs, the pullback of a
/// cotangent (reverse mode, J^T u), the Jacobian-vector product (forward mode, J v) and the
/// Hessian-vector product of a weighted sum of its outputs. The model's exact Hessian-vector
/// product of a loss L(f(theta)) is then
///   H v = J^T (d^2L/df^2) J v + sum_o (dL/df_o) (d^2 f_o / d theta^2) v,
/// the Gauss-Newton part from jvp, the loss's dual numbers and the pullback, the second from the
/// weighted Hessian-vector product (Pearlmutter 1994; Martens 2020, section 8 for the split).
///
/// A fit's model.json records such a model as {"kind": "external", "id": ...}: make_model finds
/// it by that id among the networks registered in this process (register_external_network), so
/// a saved run is read back only where its network is registered again (the Python package
/// saves the module beside the run and registers it when it loads the run).
#include <functional>
#include <memory>
#include <string>

#include "uqnn/nn/model.hpp"

namespace uqnn {

/// The functions and shapes of a network evaluated elsewhere. Inputs X are [input_dim, n] (one
/// example per column), outputs [output_dim, n], as everywhere in uqnn. The functions may be called
/// from several threads at once (chains in parallel): they serialise themselves when they must.
struct ExternalNetwork {
  std::string id;           ///< the key model.json records ("torch:<digest>")
  std::string description;  ///< what it is, for messages ("PyTorch module TinyTransformer")
  Index input_dim = 0, output_dim = 0;
  ParamLayout layout;       ///< named blocks of theta (the module's parameters, in its order)
  Vec initial;              ///< the network's own parameters (where training starts)
  /// Fresh parameters from a seed (ensemble members' starts); null: `initial` for every seed.
  std::function<Vec(std::uint64_t seed)> reinitialise;
  /// When set, fresh parameters are this model's initial_params(rng) instead (a module uqnn can
  /// also translate starts where the translated network would: same seed, same starts).
  std::shared_ptr<const Model> initialiser;
  std::function<Mat(const Vec& theta, const Mat& X)> forward;
  /// Evaluates Y = f(theta, X), calls `cotangent(Y)` for dL/dY (same shape) and returns J^T dL/dY
  /// (num_params entries).
  std::function<Vec(const Vec& theta, const Mat& X, const std::function<Mat(const Mat& Y)>& cotangent)> pullback;
  /// J(theta, X) v, [output_dim, n].
  std::function<Mat(const Vec& theta, const Vec& v, const Mat& X)> jvp;
  /// The Hessian of theta -> sum(G .* f(theta, X)) times v (num_params entries).
  std::function<Vec(const Vec& theta, const Vec& v, const Mat& X, const Mat& G)> weighted_hvp;
  /// Per-example Jacobian [n * output_dim, num_params] in one call; null: Model::jacobian's pullbacks.
  std::function<Mat(const Vec& theta, const Mat& X)> jacobian;
};

class ExternalModel : public Model {
 public:
  /// Throws std::invalid_argument when a function is missing or the shapes disagree.
  explicit ExternalModel(std::shared_ptr<const ExternalNetwork> network);

  std::string kind() const override { return "external"; }
  Index input_dim() const override { return network_->input_dim; }
  Index output_dim() const override { return network_->output_dim; }
  const ParamLayout& layout() const override { return network_->layout; }
  const ExternalNetwork& network() const { return *network_; }

  /// The initialiser's parameters when there is one; else the network's own parameters when it
  /// cannot reinitialise itself, or fresh ones from a seed drawn from `rng` (so the same seed gives
  /// the same start).
  Vec initial_params(Rng& rng) const override;
  Mat forward(const Vec& theta, const Mat& X) const override;
  double value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const override;
  Vec hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X, const OutputLoss<Dual>& loss) const override;
  Mat jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const override;
  Mat jacobian(const Vec& theta, const Mat& X) const override;
  /// {"kind": "external", "id", "description", "input_dim", "output_dim", "blocks"}.
  nlohmann::json to_json() const override;

 private:
  std::shared_ptr<const ExternalNetwork> network_;
};

/// Makes `network` findable by make_model({"kind": "external", "id": network.id, ...}) in this
/// process (a later registration of the same id replaces it).
void register_external_network(std::shared_ptr<const ExternalNetwork> network);
/// The registered network of `id`, or null.
std::shared_ptr<const ExternalNetwork> find_external_network(const std::string& id);
/// make_model's reader: the registered network of description["id"] as a model; InputError when it
/// is not registered in this process (a saved run of a PyTorch module read by the CLI) or its
/// shapes differ from the description's.
std::unique_ptr<Model> external_model_from_json(const nlohmann::json& description);

}  // namespace uqnn
