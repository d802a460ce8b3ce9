#include "uqnn/nn/external_model.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

std::mutex& external_registry_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, std::shared_ptr<const ExternalNetwork>>& external_registry() {
  static auto* networks = new std::map<std::string, std::shared_ptr<const ExternalNetwork>>();  // never destroyed: its
  // entries hold the Python objects, which must not be released after the interpreter has gone
  return *networks;
}

void check_external_shape(const Mat& m, Index rows, Index cols, const ExternalNetwork& n, const char* what) {
  if (m.rows() != rows || m.cols() != cols)
    throw std::invalid_argument(fmt::format("{}: its {} is {} x {}, expected {} x {}", n.description, what, m.rows(), m.cols(), rows, cols));
}

}  // namespace

ExternalModel::ExternalModel(std::shared_ptr<const ExternalNetwork> network) : network_(std::move(network)) {
  if (!network_) throw std::invalid_argument("ExternalModel: no network");
  const ExternalNetwork& n = *network_;
  if (!n.forward || !n.pullback || !n.jvp || !n.weighted_hvp)
    throw std::invalid_argument("ExternalModel: forward, pullback, jvp and weighted_hvp are all needed");
  if (n.input_dim < 1 || n.output_dim < 1 || n.layout.size() < 1)
    throw std::invalid_argument(fmt::format("{}: input_dim {}, output_dim {} and {} parameters must all be >= 1", n.description,
                                            n.input_dim, n.output_dim, n.layout.size()));
  if (n.initial.size() != n.layout.size())
    throw std::invalid_argument(fmt::format("{}: {} initial parameters for a layout of {}", n.description, n.initial.size(), n.layout.size()));
  if (n.initialiser && n.initialiser->num_params() != n.layout.size())
    throw std::invalid_argument(fmt::format("{}: its initialiser has {} parameters, the network {}", n.description,
                                            n.initialiser->num_params(), n.layout.size()));
}

Vec ExternalModel::initial_params(Rng& rng) const {
  if (network_->initialiser) return network_->initialiser->initial_params(rng);
  if (!network_->reinitialise) return network_->initial;
  const Vec theta = network_->reinitialise(rng.uniform_index(std::uint64_t{1} << 62));
  if (theta.size() != num_params())
    throw std::invalid_argument(fmt::format("{}: reinitialised with {} parameters, expected {}", network_->description, theta.size(), num_params()));
  return theta;
}

Mat ExternalModel::forward(const Vec& theta, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  Mat Y = network_->forward(theta, X);
  check_external_shape(Y, output_dim(), X.cols(), *network_, "output");
  return Y;
}

double ExternalModel::value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const {
  check_model_shapes(*this, theta, X);
  check_model_gradient_size(*this, grad);
  double value = 0.0;
  const std::function<Mat(const Mat&)> cotangent = [&](const Mat& Y) {
    check_external_shape(Y, output_dim(), X.cols(), *network_, "output");
    Mat dY(Y.rows(), Y.cols());
    value = loss(Y, dY);
    return dY;
  };
  const Vec g = network_->pullback(Vec(theta), X, cotangent);
  if (g.size() != num_params())
    throw std::invalid_argument(fmt::format("{}: its gradient has {} entries, expected {}", network_->description, g.size(), num_params()));
  grad += g;
  return value;
}

Vec ExternalModel::hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X, const OutputLoss<Dual>& loss) const {
  check_model_shapes(*this, theta, X);
  if (v.size() != theta.size()) throw std::invalid_argument("hessian_vector_product: v and theta differ in size");
  // H v = J^T (d^2L/dY^2) J v + sum_o (dL/dY_o) (d^2 Y_o/dtheta^2) v: dual outputs Y + eps J v give,
  // through the loss's reverse pass, dL/dY in the values and (d^2L/dY^2) J v in the tangents.
  const Mat Y = forward(theta, X);
  const Mat Jv = jacobian_vector_product(theta, v, X);
  MatT<Dual> Y_dual(Y.rows(), Y.cols()), dY_dual(Y.rows(), Y.cols());
  for (Index j = 0; j < Y.cols(); ++j)
    for (Index i = 0; i < Y.rows(); ++i) Y_dual(i, j) = make_dual(Y(i, j), Jv(i, j));
  loss(Y_dual, dY_dual);
  const Mat G = dY_dual.unaryExpr([](const Dual& d) { return dual_value(d); });
  const Mat loss_curvature_Jv = dY_dual.unaryExpr([](const Dual& d) { return dual_tangent(d); });
  const Vec gauss_newton = network_->pullback(theta, X, [&](const Mat&) { return loss_curvature_Jv; });
  const Vec second_order = network_->weighted_hvp(theta, v, X, G);
  if (gauss_newton.size() != num_params() || second_order.size() != num_params())
    throw std::invalid_argument(fmt::format("{}: a Hessian-vector product has the wrong size", network_->description));
  return gauss_newton + second_order;
}

Mat ExternalModel::jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const {
  check_model_shapes(*this, theta, X);
  if (v.size() != theta.size()) throw std::invalid_argument("jacobian_vector_product: v and theta differ in size");
  Mat Jv = network_->jvp(theta, v, X);
  check_external_shape(Jv, output_dim(), X.cols(), *network_, "Jacobian-vector product");
  return Jv;
}

Mat ExternalModel::jacobian(const Vec& theta, const Mat& X) const {
  if (!network_->jacobian) return Model::jacobian(theta, X);
  check_model_shapes(*this, theta, X);
  Mat J = network_->jacobian(theta, X);
  check_external_shape(J, X.cols() * output_dim(), num_params(), *network_, "Jacobian");
  return J;
}

nlohmann::json ExternalModel::to_json() const {
  nlohmann::json blocks = nlohmann::json::array();
  for (const ParamBlock& b : layout().blocks()) blocks.push_back({{"name", b.name}, {"rows", b.rows}, {"cols", b.cols}});
  return {{"kind", "external"},      {"id", network_->id},           {"description", network_->description},
          {"input_dim", input_dim()}, {"output_dim", output_dim()}, {"blocks", blocks}};
}

void register_external_network(std::shared_ptr<const ExternalNetwork> network) {
  if (!network) throw std::invalid_argument("register_external_network: no network");
  std::lock_guard lock(external_registry_mutex());
  external_registry()[network->id] = std::move(network);
}

std::shared_ptr<const ExternalNetwork> find_external_network(const std::string& id) {
  std::lock_guard lock(external_registry_mutex());
  const auto& r = external_registry();
  const auto it = r.find(id);
  return it == r.end() ? nullptr : it->second;
}

std::unique_ptr<Model> external_model_from_json(const nlohmann::json& d) {
  const std::string id = d.at("id").get<std::string>();
  const auto network = find_external_network(id);
  if (!network)
    throw InputError(fmt::format("the network of this run is {} (model kind 'external', id {}), which uqnn evaluates through "
                                 "Python: read the run with uqnn.load(path) in Python (it loads the module saved beside it, "
                                 "torch_module.pt) rather than with the CLI",
                                 d.value("description", std::string("a PyTorch module")), id));
  auto model = std::make_unique<ExternalModel>(network);
  if (model->input_dim() != d.at("input_dim").get<Index>() || model->output_dim() != d.at("output_dim").get<Index>() ||
      (d.contains("blocks") && d.at("blocks").size() != model->layout().blocks().size()))
    throw InputError(fmt::format("the registered network {} ({} inputs, {} outputs, {} parameter blocks) is not the one this "
                                 "run recorded ({} inputs, {} outputs)",
                                 id, model->input_dim(), model->output_dim(), model->layout().blocks().size(),
                                 d.at("input_dim").get<Index>(), d.at("output_dim").get<Index>()));
  return model;
}

}  // namespace uqnn
