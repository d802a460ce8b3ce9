#include "uqnn/services/network.hpp"

#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/cnn_layer_list.hpp"

namespace uqnn {

Network::Network(const nlohmann::json& description) : model_(make_model(description)) {}

std::string Network::kind() const { return model_->kind(); }
Index Network::num_params() const { return model_->num_params(); }
Index Network::input_dim() const { return model_->input_dim(); }
Index Network::output_dim() const { return model_->output_dim(); }
const ParamLayout& Network::layout() const { return model_->layout(); }
nlohmann::json Network::description() const { return model_->to_json(); }
void Network::set_precision(const std::string& precision) { model_->set_precision(parse_precision(precision)); }

Vec Network::initial_params(std::uint64_t seed) const {
  Rng rng(seed, 0);
  return model_->initial_params(rng);
}

void Network::check(const Vec& theta, const Mat& X) const {
  if (theta.size() != num_params())
    throw InputError(fmt::format("theta has {} entries, the {} model has {} parameters", theta.size(), kind(), num_params()));
  if (X.rows() != input_dim())
    throw InputError(fmt::format("X has {} columns, the {} model takes {} inputs", X.rows(), kind(), input_dim()));
}

Mat Network::forward(const Vec& theta, const Mat& X) const {
  check(theta, X);
  return model_->forward(theta, X);
}

double Network::value_and_gradient(const Vec& theta, const Mat& X, const Mat& G, Vec& grad) const {
  check(theta, X);
  if (G.rows() != output_dim() || G.cols() != X.cols())
    throw InputError(fmt::format("G is {} x {}: it needs the outputs' shape, {} x {}", G.cols(), G.rows(), X.cols(), output_dim()));
  grad = Vec::Zero(num_params());
  const OutputLoss<double> loss = [&G](const Mat& Y, Mat& dY) {
    dY = G;
    return G.cwiseProduct(Y).sum();
  };
  return model_->value_and_gradient(theta, X, loss, grad);
}

Vec Network::hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X, const Mat& G) const {
  check(theta, X);
  if (v.size() != theta.size()) throw InputError(fmt::format("v has {} entries, theta {}", v.size(), theta.size()));
  if (G.rows() != output_dim() || G.cols() != X.cols())
    throw InputError(fmt::format("G is {} x {}: it needs the outputs' shape, {} x {}", G.cols(), G.rows(), X.cols(), output_dim()));
  const OutputLoss<Dual> loss = [&G](const MatT<Dual>& Y, MatT<Dual>& dY) -> Dual {
    const MatT<Dual> Gd = G.cast<Dual>();
    dY = Gd + Y;
    return Gd.cwiseProduct(Y).sum() + Dual(0.5) * Y.cwiseProduct(Y).sum();
  };
  return model_->hessian_vector_product(theta, v, X, loss);
}

nlohmann::json cnn_description(const std::string& layers, const std::vector<Index>& input_shape, Index output_dim,
                               const std::string& activation, const std::string& init) {
  const ImageShape shape = parse_image_shape(input_shape, 0, "input_shape");
  const Activation a = parse_activation(activation);
  const InitScheme scheme = init == "auto" ? default_init_scheme(a) : parse_init_scheme(init);
  return Cnn(shape, parse_cnn_layers(layers, shape, output_dim, a, "layers"), scheme, layers).to_json();
}

}  // namespace uqnn
