#include "uqnn/nn/non_centred_model.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

/// Each enum value with its name, in the order the messages list them.
const std::pair<ShrinkageKind, const char*> kKindNames[] = {
    {ShrinkageKind::Horseshoe, "horseshoe"}, {ShrinkageKind::RegularizedHorseshoe, "regularized-horseshoe"}, {ShrinkageKind::Ard, "ard"}};
const std::pair<ShrinkageGroups, const char*> kGroupNames[] = {
    {ShrinkageGroups::Weight, "weight"}, {ShrinkageGroups::Unit, "unit"}, {ShrinkageGroups::Layer, "layer"}};

template <typename E, std::size_t N>
E parse_name(const std::pair<E, const char*> (&names)[N], const std::string& name, const std::string& what) {
  std::string valid;
  for (const auto& [value, text] : names) {
    if (name == text) return value;
    valid += (valid.empty() ? "" : ", ") + std::string(text);
  }
  throw InputError(what + " '" + name + "' is not known: valid are " + valid);
}

template <typename E, std::size_t N>
std::string name_of(const std::pair<E, const char*> (&names)[N], E value) {
  for (const auto& [v, text] : names)
    if (v == value) return text;
  return "?";
}

}  // namespace

ShrinkageKind parse_shrinkage_kind(const std::string& name) { return parse_name(kKindNames, name, "shrinkage prior"); }
std::string to_string(ShrinkageKind kind) { return name_of(kKindNames, kind); }
ShrinkageGroups parse_shrinkage_groups(const std::string& name) { return parse_name(kGroupNames, name, "shrinkage groups"); }
std::string to_string(ShrinkageGroups groups) { return name_of(kGroupNames, groups); }

void ShrinkageSpec::validate() const {
  const auto positive = [](double x, const char* flag) {
    if (!(x > 0) || !std::isfinite(x)) throw InputError(fmt::format("{} {} is invalid: it must be a finite number > 0", flag, x));
  };
  positive(global_scale, "--horseshoe-global-scale");
  positive(slab_scale, "--slab-scale");
  positive(slab_df, "--slab-df");
  positive(ard_shape, "--ard-shape");
  positive(ard_rate, "--ard-rate");
  positive(bias_sd, "--prior-sigma");
}

nlohmann::json ShrinkageSpec::to_json() const {
  return {{"kind", to_string(kind)},     {"groups", to_string(groups)},
          {"global_scale", global_scale}, {"slab_scale", slab_scale},
          {"slab_df", slab_df},           {"ard_shape", ard_shape},
          {"ard_rate", ard_rate},         {"bias_sd", bias_sd}};
}

ShrinkageSpec ShrinkageSpec::from_json(const nlohmann::json& j) {
  ShrinkageSpec s;
  s.kind = parse_shrinkage_kind(j.at("kind").get<std::string>());
  s.groups = parse_shrinkage_groups(j.at("groups").get<std::string>());
  s.global_scale = j.at("global_scale").get<double>();
  s.slab_scale = j.at("slab_scale").get<double>();
  s.slab_df = j.at("slab_df").get<double>();
  s.ard_shape = j.at("ard_shape").get<double>();
  s.ard_rate = j.at("ard_rate").get<double>();
  s.bias_sd = j.at("bias_sd").get<double>();
  s.validate();
  return s;
}

ScaleHierarchy make_scale_hierarchy(const ParamLayout& network, const ShrinkageSpec& spec) {
  spec.validate();
  ScaleHierarchy H;
  H.spec = spec;
  H.num_network = network.size();
  H.network = network;
  H.group_of.assign(static_cast<std::size_t>(network.size()), -1);
  ParamLayout hyper;
  const auto add_hyper = [&](const std::string& name, Index size, ScaleHierarchy::Role role) {
    const Index first = hyper.size();
    hyper.add_vector(name, size, 1);
    H.roles.insert(H.roles.end(), static_cast<std::size_t>(size), role);
    return first;
  };
  const bool horseshoe = spec.kind != ShrinkageKind::Ard;
  const bool per_layer = spec.groups == ShrinkageGroups::Layer;
  const Index network_tau = horseshoe && per_layer ? add_hyper("log_tau", 1, ScaleHierarchy::Role::GlobalScale) : -1;
  bool first_layer = true;
  for (const auto& block : network.blocks()) {
    if (!block.matrix) {
      H.layout.add_vector(block.name, block.rows, block.fan_in);
      continue;
    }
    H.layout.add_matrix(block.name + "_raw", block.rows, block.cols, block.fan_in);
    const double log_base = -0.5 * std::log(static_cast<double>(std::max<Index>(block.fan_in, 1)));
    const auto assign = [&](Index row, Index col, Index group) {
      H.group_of[static_cast<std::size_t>(block.offset + row * block.cols + col)] = group;
    };
    if (horseshoe) {
      // The local scale of weight (r, c) is lambda number local_of(r, c) of this block.
      const auto local_of = [&](Index r, Index c) {
        switch (spec.groups) {
          case ShrinkageGroups::Weight: return r * block.cols + c;
          case ShrinkageGroups::Unit: return r;
          case ShrinkageGroups::Layer: return Index{0};
        }
        return Index{0};
      };
      const Index num_local = local_of(block.rows - 1, block.cols - 1) + 1;
      const Index tau = per_layer ? network_tau : add_hyper(block.name + ".log_tau", 1, ScaleHierarchy::Role::GlobalScale);
      const Index lambdas = add_hyper(block.name + ".log_lambda", num_local, ScaleHierarchy::Role::LocalScale);
      const Index first_group = static_cast<Index>(H.groups.size());
      for (Index g = 0; g < num_local; ++g) H.groups.push_back({lambdas + g, tau, log_base});
      for (Index r = 0; r < block.rows; ++r)
        for (Index c = 0; c < block.cols; ++c) assign(r, c, first_group + local_of(r, c));
    } else {  // ARD: the first layer's scales are per input column, the others' per layer
      const Index scales = add_hyper(block.name + ".log_scale", first_layer ? block.cols : 1, ScaleHierarchy::Role::ArdScale);
      const Index first_group = static_cast<Index>(H.groups.size());
      for (Index c = 0; c < (first_layer ? block.cols : 1); ++c) H.groups.push_back({scales + c, -1, log_base});
      for (Index r = 0; r < block.rows; ++r)
        for (Index c = 0; c < block.cols; ++c) assign(r, c, first_group + (first_layer ? c : 0));
    }
    first_layer = false;
  }
  if (H.groups.empty())
    throw InputError("a shrinkage prior (--prior " + to_string(spec.kind) + ") scales weight matrices, and this model has none");
  if (spec.kind == ShrinkageKind::RegularizedHorseshoe) H.slab = add_hyper("log_c", 1, ScaleHierarchy::Role::Slab);
  H.layout.append(hyper, "");
  return H;
}

namespace {

using std::exp;
using std::log;

/// log(1 + e^x) without overflow, for double and Dual.
template <typename T>
T softplus(const T& x) {
  return value_of(x) > 0 ? T(x + log(T(1.0) + exp(-x))) : T(log(T(1.0) + exp(x)));
}

/// Per group: log s_g and d log s_g / d a_g (a_g = log tau + log lambda_g; 1 without a slab).
/// With a slab, log s = log b + a - softplus(2 (a - log c)) / 2 (eq. 2.8 of Piironen & Vehtari), whose
/// derivative in a is r = 1 / (1 + e^{2 (a - log c)}) and in log c is 1 - r.
template <typename T>
void group_scales(const ScaleHierarchy& H, const T* h, std::vector<T>& log_scale, std::vector<T>& slope) {
  const std::size_t G = H.groups.size();
  log_scale.resize(G);
  slope.resize(G);
  for (std::size_t g = 0; g < G; ++g) {
    const auto& group = H.groups[g];
    T a = h[group.local];
    if (group.global >= 0) a = a + h[group.global];
    if (H.slab >= 0) {
      const T t = T(2.0) * (a - h[H.slab]);
      log_scale[g] = group.log_base + a - T(0.5) * softplus(t);
      slope[g] = T(1.0) / (T(1.0) + exp(t));
    } else {
      log_scale[g] = group.log_base + a;
      slope[g] = T(1.0);
    }
  }
}

/// w(u): the network part of u with each scaled z multiplied by its group's scale.
template <typename T>
VecT<T> transform(const ScaleHierarchy& H, const VecT<T>& u) {
  std::vector<T> log_scale, slope;
  group_scales(H, u.data() + H.num_network, log_scale, slope);
  std::vector<T> scale(log_scale.size());
  for (std::size_t g = 0; g < scale.size(); ++g) scale[g] = exp(log_scale[g]);
  VecT<T> w = u.head(H.num_network);
  for (Index k = 0; k < H.num_network; ++k) {
    const Index g = H.group_of[static_cast<std::size_t>(k)];
    if (g >= 0) w[k] = w[k] * scale[static_cast<std::size_t>(g)];
  }
  return w;
}

/// J_w(u)^T g_w: dloss/du from dloss/dw. Scaled z_k: g_w_k s_g; log-scales: sum over the group's
/// weights of g_w_k w_k (= dloss / d log s_g), times d log s_g / d h.
template <typename T>
VecT<T> pull_back(const ScaleHierarchy& H, const VecT<T>& u, const VecT<T>& g_w) {
  std::vector<T> log_scale, slope;
  group_scales(H, u.data() + H.num_network, log_scale, slope);
  const std::size_t G = log_scale.size();
  std::vector<T> scale(G), d_log_scale(G, T(0.0));
  for (std::size_t g = 0; g < G; ++g) scale[g] = exp(log_scale[g]);
  VecT<T> g_u(u.size());
  for (Index k = 0; k < H.num_network; ++k) {
    const Index g = H.group_of[static_cast<std::size_t>(k)];
    if (g < 0) {
      g_u[k] = g_w[k];
      continue;
    }
    const auto gi = static_cast<std::size_t>(g);
    g_u[k] = g_w[k] * scale[gi];
    d_log_scale[gi] = d_log_scale[gi] + g_w[k] * u[k] * scale[gi];
  }
  T* g_h = g_u.data() + H.num_network;
  for (Index j = 0; j < H.num_hyper(); ++j) g_h[j] = T(0.0);
  for (std::size_t g = 0; g < G; ++g) {
    const auto& group = H.groups[g];
    const T d_a = d_log_scale[g] * slope[g];
    g_h[group.local] = g_h[group.local] + d_a;
    if (group.global >= 0) g_h[group.global] = g_h[group.global] + d_a;
    if (H.slab >= 0) g_h[H.slab] = g_h[H.slab] + d_log_scale[g] * (T(1.0) - slope[g]);
  }
  return g_u;
}

}  // namespace

NonCentredModel::NonCentredModel(std::shared_ptr<Model> network, const ShrinkageSpec& spec) : network_(std::move(network)) {
  if (!network_) throw std::invalid_argument("NonCentredModel: no network");
  hierarchy_ = make_scale_hierarchy(network_->layout(), spec);
  precision_ = network_->precision();
}

Vec NonCentredModel::initial_params(Rng& rng) const {
  const ScaleHierarchy& H = hierarchy_;
  Vec u(num_params());
  u.head(H.num_network) = network_->initial_params(rng);
  for (Index j = 0; j < H.num_hyper(); ++j) {
    switch (H.roles[static_cast<std::size_t>(j)]) {
      case ScaleHierarchy::Role::GlobalScale: u[H.num_network + j] = std::log(H.spec.global_scale); break;
      case ScaleHierarchy::Role::Slab: u[H.num_network + j] = std::log(H.spec.slab_scale); break;
      default: u[H.num_network + j] = 0.0;
    }
  }
  // z = w0 / s(h0): the network starts from its own initialisation.
  std::vector<double> log_scale, slope;
  group_scales(H, u.data() + H.num_network, log_scale, slope);
  for (Index k = 0; k < H.num_network; ++k) {
    const Index g = H.group_of[static_cast<std::size_t>(k)];
    if (g >= 0) u[k] *= std::exp(-log_scale[static_cast<std::size_t>(g)]);
  }
  return u;
}

Vec NonCentredModel::network_params(const Vec& u) const {
  if (u.size() != num_params())
    throw std::invalid_argument(fmt::format("non_centred model: u has {} entries, the model has {} parameters", u.size(), num_params()));
  return transform(hierarchy_, u);
}

Mat NonCentredModel::forward(const Vec& u, const Mat& X) const {
  check_model_shapes(*this, u, X);
  return network_->forward(transform(hierarchy_, u), X);
}

double NonCentredModel::value_and_gradient(ConstVecRef u, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const {
  return value_and_gradient_at(u, X, nullptr, loss, grad);
}

double NonCentredModel::value_and_gradient(ConstVecRef u, const Mat& X, const MatT<float>& X_float,
                                           const OutputLoss<double>& loss, VecRef grad) const {
  return value_and_gradient_at(u, X, &X_float, loss, grad);
}

double NonCentredModel::value_and_gradient_at(ConstVecRef u_in, const Mat& X, const MatT<float>* X_float,
                                              const OutputLoss<double>& loss, VecRef grad) const {
  check_model_shapes(*this, u_in, X);
  check_model_gradient_size(*this, grad);
  thread_local Vec g_w, u;  // a sampler calls this ~10^3 times per draw on the same shapes
  u = u_in;                 // the transform's templates take whole vectors
  g_w.setZero(hierarchy_.num_network);
  const Vec w = transform(hierarchy_, u);
  const double value = X_float ? network_->value_and_gradient(w, X, *X_float, loss, g_w) : network_->value_and_gradient(w, X, loss, g_w);
  grad += pull_back<double>(hierarchy_, u, g_w);
  return value;
}

Vec NonCentredModel::hessian_vector_product(const Vec& u, const Vec& v, const Mat& X, const OutputLoss<Dual>& loss) const {
  check_model_shapes(*this, u, X);
  if (v.size() != u.size()) throw std::invalid_argument("hessian_vector_product: v and u differ in size");
  const ScaleHierarchy& H = hierarchy_;
  // w and its tangent J_w v in one dual pass of the transform.
  const VecT<Dual> w_dual = transform<Dual>(H, make_dual_vector(u, v));
  Vec w(H.num_network), w_direction(H.num_network);
  for (Index k = 0; k < H.num_network; ++k) w[k] = dual_value(w_dual[k]), w_direction[k] = dual_tangent(w_dual[k]);
  // H_w (J_w v) from the network, calling the loss once (it may accumulate into its captures, e.g.
  // the likelihood extras' derivatives); the real part of its output cotangent is recorded and
  // pulled back by the network's reverse pass to give dloss/dw.
  Mat output_cotangent;
  const OutputLoss<Dual> recording = [&](const MatT<Dual>& Y, MatT<Dual>& dY) {
    const Dual value = loss(Y, dY);
    output_cotangent = dY.unaryExpr([](const Dual& d) { return dual_value(d); });
    return value;
  };
  const Vec hw = network_->hessian_vector_product(w, w_direction, X, recording);
  Vec g_w = Vec::Zero(H.num_network);
  const OutputLoss<double> replay = [&](const Mat& /*Y*/, Mat& dY) {
    dY = output_cotangent;
    return 0.0;
  };
  network_->value_and_gradient(w, X, replay, g_w);
  // d/dv of J_w(u)^T g_w(w(u)) = J_w^T H_w J_w v + (d J_w^T / dv) g_w: the tangent of the pull-back
  // evaluated in duals with g_w carrying H_w J_w v as its tangent.
  VecT<Dual> g_w_dual(H.num_network);
  for (Index k = 0; k < H.num_network; ++k) g_w_dual[k] = make_dual(g_w[k], hw[k]);
  const VecT<Dual> g_u = pull_back<Dual>(H, make_dual_vector(u, v), g_w_dual);
  Vec hv(u.size());
  for (Index i = 0; i < hv.size(); ++i) hv[i] = dual_tangent(g_u[i]);
  return hv;
}

Mat NonCentredModel::jacobian_vector_product(const Vec& u, const Vec& v, const Mat& X) const {
  check_model_shapes(*this, u, X);
  if (v.size() != u.size()) throw std::invalid_argument("jacobian_vector_product: v and u differ in size");
  const VecT<Dual> w_dual = transform<Dual>(hierarchy_, make_dual_vector(u, v));
  Vec w(hierarchy_.num_network), direction(hierarchy_.num_network);
  for (Index k = 0; k < w.size(); ++k) w[k] = dual_value(w_dual[k]), direction[k] = dual_tangent(w_dual[k]);
  return network_->jacobian_vector_product(w, direction, X);
}

Mat NonCentredModel::jacobian(const Vec& u, const Mat& X) const {
  check_model_shapes(*this, u, X);
  const Mat J_w = network_->jacobian(transform(hierarchy_, u), X);
  // Each row is a gradient of one output: pull it back through the transform.
  Mat J(J_w.rows(), num_params());
  for (Index r = 0; r < J_w.rows(); ++r) J.row(r) = pull_back<double>(hierarchy_, u, J_w.row(r).transpose()).transpose();
  return J;
}

nlohmann::json NonCentredModel::to_json() const {
  return {{"kind", "non_centred"}, {"network", network_->to_json()}, {"shrinkage", hierarchy_.spec.to_json()}};
}

void NonCentredModel::set_precision(Precision precision) {
  network_->set_precision(precision);
  precision_ = precision;
}

}  // namespace uqnn
