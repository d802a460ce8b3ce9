#include "uqnn/nn/model.hpp"

#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/deeponet.hpp"
#include "uqnn/nn/external_model.hpp"
#include "uqnn/nn/linear.hpp"
#include "uqnn/nn/linearized_model.hpp"
#include "uqnn/nn/nngp_posterior_model.hpp"
#include "uqnn/nn/non_centred_model.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/nn/rnet.hpp"

namespace uqnn {

Precision parse_precision(const std::string& name) {
  if (name == "float64" || name == "double") return Precision::Float64;
  if (name == "float32" || name == "float") return Precision::Float32;
  throw InputError("precision '" + name + "' is not known: valid are float64, float32");
}

std::string to_string(Precision precision) { return precision == Precision::Float32 ? "float32" : "float64"; }

void Model::set_precision(Precision precision) {
  if (precision != Precision::Float64)
    throw InputError(fmt::format("{} model: precision {} is not supported (float64 only)", kind(), to_string(precision)));
}

nlohmann::json Model::with_precision(nlohmann::json description) const {
  if (precision_ != Precision::Float64) description["precision"] = to_string(precision_);
  return description;
}

void check_model_gradient_size(const Model& model, ConstVecRef grad) {
  if (grad.size() != model.num_params())
    throw std::invalid_argument(fmt::format("{} model: the gradient has {} entries, the model has {} parameters", model.kind(),
                                            grad.size(), model.num_params()));
}

void check_model_shapes(const Model& model, ConstVecRef theta, const Mat& X) {
  if (theta.size() != model.num_params())
    throw std::invalid_argument(fmt::format("{} model: theta has {} entries, the model has {} parameters",
                                            model.kind(), theta.size(), model.num_params()));
  if (X.rows() != model.input_dim())
    throw std::invalid_argument(fmt::format("{} model: inputs have {} rows, the model takes {} inputs",
                                            model.kind(), X.rows(), model.input_dim()));
}

void check_lane_batch(std::size_t thetas, std::size_t losses, std::size_t values, std::size_t grads) {
  if (losses != thetas || values != thetas || grads != thetas)
    throw std::invalid_argument(fmt::format("value_and_gradient_lanes: {} parameter vectors but {} losses, {} values and {} "
                                            "gradients", thetas, losses, values, grads));
}

void Model::value_and_gradient_lanes(std::span<const double* const> thetas, const Mat& X, const MatT<float>* X_float,
                                     std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                     std::span<double* const> grads) const {
  check_lane_batch(thetas.size(), losses.size(), values.size(), grads.size());
  const Index P = num_params();
  for (std::size_t c = 0; c < thetas.size(); ++c) {
    const Eigen::Map<const Vec> theta(thetas[c], P);
    Eigen::Map<Vec> grad(grads[c], P);
    values[c] = X_float ? value_and_gradient(theta, X, *X_float, *losses[c], grad) : value_and_gradient(theta, X, *losses[c], grad);
  }
}

void Model::value_and_gradient_lanes_on_own_inputs(std::span<const double* const> thetas, std::span<const Mat* const> inputs,
                                                   std::span<const OutputLoss<double>* const> losses, std::span<double> values,
                                                   std::span<double* const> grads) const {
  check_lane_batch(thetas.size(), losses.size(), values.size(), grads.size());
  if (inputs.size() != thetas.size())
    throw std::invalid_argument(fmt::format("value_and_gradient_lanes: {} parameter vectors but {} inputs", thetas.size(), inputs.size()));
  const Index P = num_params();
  for (std::size_t c = 0; c < thetas.size(); ++c) {
    Eigen::Map<Vec> grad(grads[c], P);
    values[c] = value_and_gradient(Eigen::Map<const Vec>(thetas[c], P), *inputs[c], *losses[c], grad);
  }
}

Mat Model::jacobian(const Vec& theta, const Mat& X) const {
  // One reverse pass per example and output with a unit cotangent: exact, and generic over models.
  const Index n = X.cols(), out = output_dim();
  Mat J(n * out, num_params());
  Vec grad(num_params());
  for (Index i = 0; i < n; ++i) {
    const Mat xi = X.col(i);
    for (Index o = 0; o < out; ++o) {
      grad.setZero();
      const OutputLoss<double> pick = [o](const Mat& Y, Mat& dY) {
        dY.setZero();
        dY(o, 0) = 1.0;
        return Y(o, 0);
      };
      value_and_gradient(theta, xi, pick, grad);
      J.row(i * out + o) = grad.transpose();
    }
  }
  return J;
}

namespace {

/// The default subspace gradient: the model's full gradient (inactive entries included).
class FullSubspaceGradient : public SubspaceGradient {
 public:
  FullSubspaceGradient(const Model& model, Mat X) : model_(model), X_(std::move(X)) {}
  double value_and_gradient(ConstVecRef theta, const OutputLoss<double>& loss, VecRef grad) const override {
    return model_.value_and_gradient(theta, X_, loss, grad);
  }

 private:
  const Model& model_;
  Mat X_;
};

}  // namespace

std::unique_ptr<SubspaceGradient> Model::make_subspace_gradient(const Vec& base_theta, const IndexVec& active,
                                                                const Mat& X) const {
  check_model_shapes(*this, base_theta, X);
  for (Index i : active)
    if (i < 0 || i >= num_params()) throw std::invalid_argument(fmt::format("{} model: active index {} outside [0, {})", kind(), i, num_params()));
  return std::make_unique<FullSubspaceGradient>(*this, X);
}

namespace {

std::vector<Index> index_list(const nlohmann::json& j) { return j.get<std::vector<Index>>(); }

std::unique_ptr<Model> make_model_of_kind(const nlohmann::json& d) {
  try {
    const std::string kind = d.at("kind").get<std::string>();
    if (kind == "mlp") {
      MlpSpec s;
      s.input_dim = d.at("input_dim").get<Index>();
      s.hidden = index_list(d.at("hidden"));
      s.output_dim = d.at("output_dim").get<Index>();
      s.activation = parse_activation(d.at("activation").get<std::string>());
      s.init = parse_init_scheme(d.value("init", std::string("glorot")));
      return std::make_unique<Mlp>(s);
    }
    if (kind == "cnn") return std::make_unique<Cnn>(Cnn::from_json(d));
    if (kind == "external") return external_model_from_json(d);
    if (kind == "linear_no_bias")
      return std::make_unique<LinearNoBias>(d.at("input_dim").get<Index>(), d.at("output_dim").get<Index>());
    if (kind == "rnet") {
      RNetSpec s;
      s.input_dim = d.at("input_dim").get<Index>();
      s.output_dim = d.at("output_dim").get<Index>();
      s.width = d.at("width").get<Index>();
      s.num_layers = d.at("num_layers").get<Index>();
      s.weight_order = d.at("weight_order").get<int>();
      s.residual = d.value("residual", true);
      s.pre_layer = d.value("pre_layer", false);
      s.post_layer = d.value("post_layer", false);
      s.activation = parse_activation(d.at("activation").get<std::string>());
      s.init = parse_init_scheme(d.value("init", std::string("torch")));
      return std::make_unique<RNet>(s);
    }
    if (kind == "deeponet") {
      DeepOnetSpec s;
      s.branch_input = d.at("branch_input").get<Index>();
      s.trunk_input = d.at("trunk_input").get<Index>();
      s.branch_hidden = index_list(d.at("branch_hidden"));
      s.trunk_hidden = index_list(d.at("trunk_hidden"));
      s.latent = d.at("latent").get<Index>();
      s.activation = parse_activation(d.at("activation").get<std::string>());
      s.trunk_last_activation = d.value("trunk_last_activation", true);
      s.init = parse_init_scheme(d.value("init", std::string("glorot")));
      DeepOnet net(s);
      if (d.contains("query_grid")) {
        const auto rows = d.at("query_grid").get<std::vector<std::vector<double>>>();
        Mat grid(s.trunk_input, static_cast<Index>(rows.size()));
        for (std::size_t j = 0; j < rows.size(); ++j)
          for (Index r = 0; r < s.trunk_input; ++r) grid(r, static_cast<Index>(j)) = rows[j].at(static_cast<std::size_t>(r));
        return std::make_unique<DeepOnet>(net.with_query_grid(grid));
      }
      return std::make_unique<DeepOnet>(net);
    }
    if (kind == "linearized") {
      std::shared_ptr<const Model> base = make_model(d.at("base"));
      const auto center = d.at("center").get<std::vector<double>>();
      if (static_cast<Index>(center.size()) != base->num_params())
        throw InputError(fmt::format("linearized model: 'center' has {} entries, the {} base model has {} parameters",
                                     center.size(), base->kind(), base->num_params()));
      return std::make_unique<LinearizedModel>(std::move(base), Eigen::Map<const Vec>(center.data(), static_cast<Index>(center.size())));
    }
    if (kind == "non_centred")
      return std::make_unique<NonCentredModel>(std::shared_ptr<Model>(make_model(d.at("network"))),
                                               ShrinkageSpec::from_json(d.at("shrinkage")));
    if (kind == "nngp_posterior") {
      const auto& a = d.at("architecture");
      NngpArchitecture architecture;
      architecture.depth = a.at("depth").get<Index>();
      architecture.activation = parse_activation(a.at("activation").get<std::string>());
      architecture.weight_variance = a.at("weight_variance").get<double>();
      architecture.bias_variance = a.at("bias_variance").get<double>();
      const auto rows = d.at("inputs").get<std::vector<std::vector<double>>>();
      const auto targets = d.at("targets").get<std::vector<double>>();
      if (rows.empty() || rows.size() != targets.size())
        throw InputError(fmt::format("nngp_posterior model: {} inputs and {} targets", rows.size(), targets.size()));
      Mat X(static_cast<Index>(rows.front().size()), static_cast<Index>(rows.size()));
      for (std::size_t j = 0; j < rows.size(); ++j) {
        if (static_cast<Index>(rows[j].size()) != X.rows())
          throw InputError(fmt::format("nngp_posterior model: input {} has {} entries, the first {}", j, rows[j].size(), X.rows()));
        X.col(static_cast<Index>(j)) = Eigen::Map<const Vec>(rows[j].data(), X.rows());
      }
      return std::make_unique<NngpPosteriorModel>(architecture, d.at("signal_variance").get<double>(), d.at("noise_variance").get<double>(),
                                                  std::move(X), Eigen::Map<const Mat>(targets.data(), 1, static_cast<Index>(targets.size())));
    }
    throw InputError("unknown model kind '" + kind + "': valid are mlp, linear_no_bias, rnet, cnn, deeponet, linearized, nngp_posterior, non_centred, external");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("invalid model description: ") + e.what());
  } catch (const std::invalid_argument& e) {  // a constructor's range check (e.g. input_dim 0)
    throw InputError(std::string("invalid model description: ") + e.what());
  }
}

}  // namespace

std::unique_ptr<Model> make_model(const nlohmann::json& d) {
  std::unique_ptr<Model> model = make_model_of_kind(d);
  if (d.contains("precision")) {
    if (!d.at("precision").is_string()) throw InputError("invalid model description: 'precision' must be a string");
    model->set_precision(parse_precision(d.at("precision").get<std::string>()));
  }
  return model;
}

}  // namespace uqnn
