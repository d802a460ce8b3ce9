#include "uqnn/approx/flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"

namespace uqnn {

namespace {

Vec gather(const Vec& v, const IndexVec& idx) {
  Vec out(static_cast<Index>(idx.size()));
  for (std::size_t i = 0; i < idx.size(); ++i) out[static_cast<Index>(i)] = v[idx[i]];
  return out;
}

void scatter(Vec& v, const IndexVec& idx, const Vec& values) {
  for (std::size_t i = 0; i < idx.size(); ++i) v[idx[i]] = values[static_cast<Index>(i)];
}

}  // namespace

RealNvpFlow::RealNvpFlow(Index dim, Index num_couplings, Index hidden, std::uint64_t partition_seed)
    : dim_(dim), hidden_(hidden) {
  require(dim >= 1, "flow dimension", ">= 1");
  require(num_couplings >= 0, "flow coupling layers", ">= 0");
  require(hidden >= 1, "flow hidden units", ">= 1");
  num_params_ = 2 * dim;  // mu, omega
  if (dim < 2) return;    // nothing to condition on
  Rng rng(partition_seed, 0xf10);
  IndexVec order;
  for (Index l = 0; l < num_couplings; ++l) {
    if (l % 2 == 0) order = rng.permutation(dim);  // a new partition for each pair of layers
    const auto half = static_cast<std::ptrdiff_t>(dim / 2);
    Layer layer;
    IndexVec first(order.begin(), order.begin() + half), second(order.begin() + half, order.end());
    std::sort(first.begin(), first.end());
    std::sort(second.begin(), second.end());
    layer.a = l % 2 == 0 ? first : second;
    layer.b = l % 2 == 0 ? second : first;
    const auto na = static_cast<Index>(layer.a.size()), nb = static_cast<Index>(layer.b.size());
    layer.w1 = num_params_;
    layer.b1 = layer.w1 + hidden * na;
    layer.w2 = layer.b1 + hidden;
    layer.b2 = layer.w2 + 2 * nb * hidden;
    num_params_ = layer.b2 + 2 * nb;
    layers_.push_back(std::move(layer));
  }
}

Vec RealNvpFlow::initial_params(const Vec& mean, double sd, Rng& rng) const {
  require(mean.size() == dim_, "flow initial mean", fmt::format("{} entries", dim_));
  require(sd > 0 && std::isfinite(sd), "flow initial sd", "a finite number > 0");
  Vec phi = Vec::Zero(num_params_);
  phi.head(dim_) = mean;
  phi.segment(dim_, dim_).setConstant(std::log(sd));
  for (const Layer& l : layers_) {
    const auto na = static_cast<Index>(l.a.size());
    const double bound = std::sqrt(6.0 / static_cast<double>(na + hidden_));
    for (Index i = 0; i < hidden_ * na; ++i) phi[l.w1 + i] = rng.uniform(-bound, bound);
  }
  return phi;
}

double RealNvpFlow::forward(const Vec& phi, const Vec& z, Vec& x, FlowTape* tape) const {
  if (z.size() != dim_ || phi.size() != num_params_)
    throw std::invalid_argument(fmt::format("flow: z has {} entries and phi {}, expected {} and {}", z.size(), phi.size(), dim_, num_params_));
  Vec y = z;
  double log_det = 0.0;
  if (tape) {
    tape->conditioning.resize(layers_.size());
    tape->transformed.resize(layers_.size());
    tape->hidden.resize(layers_.size());
    tape->log_scale.resize(layers_.size());
  }
  for (std::size_t li = 0; li < layers_.size(); ++li) {
    const Layer& l = layers_[li];
    const auto na = static_cast<Index>(l.a.size()), nb = static_cast<Index>(l.b.size());
    const Eigen::Map<const Mat> W1(phi.data() + l.w1, hidden_, na), W2(phi.data() + l.w2, 2 * nb, hidden_);
    const Vec ya = gather(y, l.a), yb = gather(y, l.b);
    const Vec h = (W1 * ya + phi.segment(l.b1, hidden_)).array().tanh().matrix();
    const Vec out = W2 * h + phi.segment(l.b2, 2 * nb);
    const Vec s = out.head(nb).array().tanh().matrix();
    scatter(y, l.b, (yb.array() * s.array().exp() + out.tail(nb).array()).matrix());
    log_det += s.sum();
    if (tape) {
      tape->conditioning[li] = ya;
      tape->transformed[li] = yb;
      tape->hidden[li] = h;
      tape->log_scale[li] = s;
    }
  }
  const auto omega = phi.segment(dim_, dim_);
  x = phi.head(dim_) + (omega.array().exp() * y.array()).matrix();
  if (tape) tape->y = y;
  return log_det + omega.sum();
}

void RealNvpFlow::backward(const Vec& phi, const FlowTape& tape, const Vec& g_x, double g_log_det, Vec& grad_phi) const {
  const auto omega = phi.segment(dim_, dim_);
  // x = mu + exp(omega) y; log det includes sum omega.
  grad_phi.head(dim_) += g_x;
  grad_phi.segment(dim_, dim_) += (g_x.array() * omega.array().exp() * tape.y.array()).matrix() + Vec::Constant(dim_, g_log_det);
  Vec g_y = (g_x.array() * omega.array().exp()).matrix();
  for (std::size_t li = layers_.size(); li-- > 0;) {
    const Layer& l = layers_[li];
    const auto na = static_cast<Index>(l.a.size()), nb = static_cast<Index>(l.b.size());
    const Eigen::Map<const Mat> W1(phi.data() + l.w1, hidden_, na), W2(phi.data() + l.w2, 2 * nb, hidden_);
    const Vec& ya = tape.conditioning[li];
    const Vec& yb = tape.transformed[li];
    const Vec& h = tape.hidden[li];
    const Vec& s = tape.log_scale[li];
    const Vec g_out_b = gather(g_y, l.b), g_out_a = gather(g_y, l.a);
    const Vec scale = s.array().exp().matrix();
    // y_b' = y_b e^s + t, s = tanh(r), log det += sum s.
    const Vec g_s = (g_out_b.array() * yb.array() * scale.array() + g_log_det).matrix();
    Vec g_out(2 * nb);
    g_out.head(nb) = (g_s.array() * (1.0 - s.array().square())).matrix();
    g_out.tail(nb) = g_out_b;
    Eigen::Map<Mat>(grad_phi.data() + l.w2, 2 * nb, hidden_) += g_out * h.transpose();
    grad_phi.segment(l.b2, 2 * nb) += g_out;
    const Vec g_pre = ((W2.transpose() * g_out).array() * (1.0 - h.array().square())).matrix();
    Eigen::Map<Mat>(grad_phi.data() + l.w1, hidden_, na) += g_pre * ya.transpose();
    grad_phi.segment(l.b1, hidden_) += g_pre;
    scatter(g_y, l.a, g_out_a + W1.transpose() * g_pre);
    scatter(g_y, l.b, (g_out_b.array() * scale.array()).matrix());
  }
}

double RealNvpFlow::inverse(const Vec& phi, const Vec& x, Vec& z) const {
  if (x.size() != dim_ || phi.size() != num_params_)
    throw std::invalid_argument(fmt::format("flow: x has {} entries and phi {}, expected {} and {}", x.size(), phi.size(), dim_, num_params_));
  const auto omega = phi.segment(dim_, dim_);
  Vec y = ((x - phi.head(dim_)).array() * (-omega.array()).exp()).matrix();
  double log_det = omega.sum();
  for (std::size_t li = layers_.size(); li-- > 0;) {
    const Layer& l = layers_[li];
    const auto na = static_cast<Index>(l.a.size()), nb = static_cast<Index>(l.b.size());
    const Eigen::Map<const Mat> W1(phi.data() + l.w1, hidden_, na), W2(phi.data() + l.w2, 2 * nb, hidden_);
    const Vec ya = gather(y, l.a);  // unchanged by the layer
    const Vec h = (W1 * ya + phi.segment(l.b1, hidden_)).array().tanh().matrix();
    const Vec out = W2 * h + phi.segment(l.b2, 2 * nb);
    const Vec s = out.head(nb).array().tanh().matrix();
    scatter(y, l.b, ((gather(y, l.b) - out.tail(nb)).array() * (-s.array()).exp()).matrix());
    log_det += s.sum();
  }
  z = y;
  return log_det;
}

FlowPosterior::FlowPosterior(std::shared_ptr<const RealNvpFlow> flow, Vec phi) : flow_(std::move(flow)), phi_(std::move(phi)) {
  if (phi_.size() != flow_->num_params())
    throw std::invalid_argument(fmt::format("flow posterior: phi has {} entries, the flow {}", phi_.size(), flow_->num_params()));
  Rng rng(0x5eed, 0xf10);
  const std::vector<Vec> draws = sample(rng, 4000);
  mean_ = Vec::Zero(dim());
  Vec square = Vec::Zero(dim());
  for (const Vec& x : draws) mean_ += x, square += x.cwiseProduct(x);
  mean_ /= static_cast<double>(draws.size());
  variance_ = (square / static_cast<double>(draws.size()) - mean_.cwiseProduct(mean_)).cwiseMax(0.0);
}

std::vector<Vec> FlowPosterior::sample(Rng& rng, Index n) const {
  std::vector<Vec> out(static_cast<std::size_t>(n));
  for (auto& x : out) flow_->forward(phi_, rng.normal_vector(dim()), x);
  return out;
}

double FlowPosterior::log_prob(const Vec& x) const {
  Vec z;
  const double log_det = flow_->inverse(phi_, x, z);
  return -0.5 * z.squaredNorm() - kHalfLog2Pi * static_cast<double>(dim()) - log_det;
}

void FlowViParams::validate() const {
  require(epochs >= 1, "flow VI epochs", ">= 1");
  require(learning_rate > 0 && std::isfinite(learning_rate), "flow VI learning rate", "a finite number > 0");
  require(batch_size >= 0, "flow VI batch size", ">= 0");
  require(num_samples >= 1, "flow VI samples per step", ">= 1");
  require(num_couplings >= 0, "flow coupling layers (--vi-flow-layers)", ">= 0");
  require(hidden >= 1, "flow hidden units (--vi-flow-hidden)", ">= 1");
  require(initial_sd > 0 && std::isfinite(initial_sd), "flow initial sd", "a finite number > 0");
  require(final_rate_fraction > 0 && final_rate_fraction <= 1, "flow VI final learning-rate fraction (--vi-flow-lr-decay)", "in (0, 1]");
}

FlowViResult fit_flow_vi(const LogDensity& target, const Vec& initial_mean, const FlowViParams& params, Rng& rng,
                         const std::function<bool(Index, double)>& on_epoch) {
  params.validate();
  const Index K = target.dim();
  const auto* stochastic = dynamic_cast<const StochasticLogDensity*>(&target);
  if (params.batch_size > 0 && !stochastic) throw std::invalid_argument("flow VI: minibatches need a StochasticLogDensity");
  auto flow = std::make_shared<const RealNvpFlow>(K, params.num_couplings, params.hidden, static_cast<std::uint64_t>(rng.uniform() * 0x1.0p53));
  Vec phi = flow->initial_params(initial_mean, params.initial_sd, rng);
  const Index N = stochastic ? stochastic->num_data() : 0;
  const Index batch = params.batch_size == 0 || params.batch_size >= N ? 0 : params.batch_size;
  const Index steps = batch == 0 ? 1 : (N + batch - 1) / batch;
  OptimizerParams adam;
  adam.name = "adam";
  adam.learning_rate = params.learning_rate;
  auto optimizer = make_optimizer(adam, flow->num_params());
  const double decay = std::pow(params.final_rate_fraction, 1.0 / static_cast<double>(params.epochs));
  const double base_entropy = 0.5 * static_cast<double>(K) * (1.0 + std::log(2.0 * std::numbers::pi));  // H[N(0, I_K)]
  FlowViResult result;
  FlowTape tape;
  Vec z, x, grad_x(K), grad_phi(flow->num_params());
  double lr = params.learning_rate;
  for (Index epoch = 0; epoch < params.epochs; ++epoch, lr *= decay) {
    const IndexVec order = batch == 0 ? IndexVec() : rng.permutation(N);
    double elbo_sum = 0.0;
    Index elbo_terms = 0;
    for (Index step = 0; step < steps; ++step) {
      IndexVec rows;
      if (batch > 0)
        for (Index i = step * batch; i < std::min(N, (step + 1) * batch); ++i) rows.push_back(order[static_cast<std::size_t>(i)]);
      grad_phi.setZero();
      Index used = 0;
      for (Index s = 0; s < params.num_samples; ++s) {
        z = rng.normal_vector(K);
        const double log_det = flow->forward(phi, z, x, &tape);
        const double log_p = batch == 0 ? target.log_density_and_grad(x, grad_x)
                                        : stochastic->minibatch_log_density_and_grad(x, rows, grad_x);
        if (!std::isfinite(log_p) || !grad_x.allFinite()) {  // e.g. an overflowing network: no step from it
          ++result.rejected_draws;
          continue;
        }
        flow->backward(phi, tape, grad_x, 1.0, grad_phi);  // d/dphi [log p(T(z)) + log |det T'(z)|]
        elbo_sum += log_p + log_det + base_entropy;
        ++elbo_terms;
        ++used;
      }
      if (used == 0) continue;
      const Vec descent = -grad_phi / static_cast<double>(used);
      optimizer->step(phi, descent, lr);
    }
    const double elbo = elbo_terms ? elbo_sum / static_cast<double>(elbo_terms) : -std::numeric_limits<double>::infinity();
    result.elbo.push_back(elbo);
    if (on_epoch && !on_epoch(epoch, elbo)) break;
    if (stop_requested()) {
      result.interrupted = true;
      break;
    }
  }
  result.approximation = std::make_shared<const FlowPosterior>(flow, phi);
  return result;
}

}  // namespace uqnn
