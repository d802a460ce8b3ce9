#include "uqnn/approx/flow.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "uqnn/core/error.hpp"
#include "uqnn/optim/epoch_loop.hpp"

namespace uqnn {


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

Vec RealNvpFlow::forward(const Vec& phi, const Mat& Z, Mat& X, FlowTape* tape) const {
  if (Z.rows() != dim_ || phi.size() != num_params_)
    throw std::invalid_argument(fmt::format("flow: z has {} rows and phi {} entries, expected {} and {}", Z.rows(), phi.size(), dim_, num_params_));
  Mat Y = Z;
  Vec log_det = Vec::Zero(Z.cols());
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
    Mat Ya = Y(l.a, Eigen::all), Yb = Y(l.b, Eigen::all);
    Mat H = ((W1 * Ya).colwise() + phi.segment(l.b1, hidden_)).array().tanh().matrix();
    const Mat out = (W2 * H).colwise() + phi.segment(l.b2, 2 * nb);
    Mat S = out.topRows(nb).array().tanh().matrix();
    Y(l.b, Eigen::all) = (Yb.array() * S.array().exp() + out.bottomRows(nb).array()).matrix();
    log_det += S.colwise().sum().transpose();
    if (tape) {
      tape->conditioning[li] = std::move(Ya);
      tape->transformed[li] = std::move(Yb);
      tape->hidden[li] = std::move(H);
      tape->log_scale[li] = std::move(S);
    }
  }
  const auto omega = phi.segment(dim_, dim_);
  X = (Y.array().colwise() * omega.array().exp()).matrix().colwise() + phi.head(dim_);
  if (tape) tape->y = std::move(Y);
  return log_det.array() + omega.sum();
}

void RealNvpFlow::backward(const Vec& phi, const FlowTape& tape, const Mat& G_x, const Vec& w, Vec& grad_phi) const {
  const auto omega = phi.segment(dim_, dim_);
  const double total_w = w.sum();
  // x = mu + exp(omega) y; log det includes sum omega.
  grad_phi.head(dim_) += G_x.rowwise().sum();
  grad_phi.segment(dim_, dim_) +=
      ((G_x.array() * tape.y.array()).rowwise().sum() * omega.array().exp()).matrix() + Vec::Constant(dim_, total_w);
  Mat G_y = (G_x.array().colwise() * omega.array().exp()).matrix();
  for (std::size_t li = layers_.size(); li-- > 0;) {
    const Layer& l = layers_[li];
    const auto na = static_cast<Index>(l.a.size()), nb = static_cast<Index>(l.b.size());
    const Eigen::Map<const Mat> W1(phi.data() + l.w1, hidden_, na), W2(phi.data() + l.w2, 2 * nb, hidden_);
    const Mat& Ya = tape.conditioning[li];
    const Mat& Yb = tape.transformed[li];
    const Mat& H = tape.hidden[li];
    const Mat& S = tape.log_scale[li];
    const Mat G_out_b = G_y(l.b, Eigen::all), G_out_a = G_y(l.a, Eigen::all);
    const Mat scale = S.array().exp().matrix();
    // y_b' = y_b e^s + t, s = tanh(r), log det += sum s (weighted by w per column).
    const Mat G_s = ((G_out_b.array() * Yb.array() * scale.array()).rowwise() + w.transpose().array()).matrix();
    Mat G_out(2 * nb, G_x.cols());
    G_out.topRows(nb) = (G_s.array() * (1.0 - S.array().square())).matrix();
    G_out.bottomRows(nb) = G_out_b;
    Eigen::Map<Mat>(grad_phi.data() + l.w2, 2 * nb, hidden_).noalias() += G_out * H.transpose();
    grad_phi.segment(l.b2, 2 * nb) += G_out.rowwise().sum();
    const Mat G_pre = ((W2.transpose() * G_out).array() * (1.0 - H.array().square())).matrix();
    Eigen::Map<Mat>(grad_phi.data() + l.w1, hidden_, na).noalias() += G_pre * Ya.transpose();
    grad_phi.segment(l.b1, hidden_) += G_pre.rowwise().sum();
    G_y(l.a, Eigen::all) = G_out_a + W1.transpose() * G_pre;
    G_y(l.b, Eigen::all) = (G_out_b.array() * scale.array()).matrix();
  }
}

Vec RealNvpFlow::inverse(const Vec& phi, const Mat& X, Mat& Z) const {
  if (X.rows() != dim_ || phi.size() != num_params_)
    throw std::invalid_argument(fmt::format("flow: x has {} rows and phi {} entries, expected {} and {}", X.rows(), phi.size(), dim_, num_params_));
  const auto omega = phi.segment(dim_, dim_);
  Mat Y = ((X.colwise() - phi.head(dim_)).array().colwise() * (-omega.array()).exp()).matrix();
  Vec log_det = Vec::Constant(X.cols(), omega.sum());
  for (std::size_t li = layers_.size(); li-- > 0;) {
    const Layer& l = layers_[li];
    const auto na = static_cast<Index>(l.a.size()), nb = static_cast<Index>(l.b.size());
    const Eigen::Map<const Mat> W1(phi.data() + l.w1, hidden_, na), W2(phi.data() + l.w2, 2 * nb, hidden_);
    const Mat Ya = Y(l.a, Eigen::all);  // unchanged by the layer
    const Mat H = ((W1 * Ya).colwise() + phi.segment(l.b1, hidden_)).array().tanh().matrix();
    const Mat out = (W2 * H).colwise() + phi.segment(l.b2, 2 * nb);
    const Mat S = out.topRows(nb).array().tanh().matrix();
    const Mat Yb = Y(l.b, Eigen::all);
    Y(l.b, Eigen::all) = ((Yb - out.bottomRows(nb)).array() * (-S.array()).exp()).matrix();
    log_det += S.colwise().sum().transpose();
  }
  Z = std::move(Y);
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
  // In batches of 256 columns: one matrix pass per batch, without a K x n matrix for large K.
  std::vector<Vec> out;
  out.reserve(static_cast<std::size_t>(n));
  Mat Z, X;
  for (Index first = 0; first < n; first += 256) {
    const Index m = std::min<Index>(256, n - first);
    Z.resize(dim(), m);
    for (Index j = 0; j < m; ++j) Z.col(j) = rng.normal_vector(dim());
    flow_->forward(phi_, Z, X);
    for (Index j = 0; j < m; ++j) out.emplace_back(X.col(j));
  }
  return out;
}

double FlowPosterior::log_prob(const Vec& x) const {
  Mat z;
  const double log_det = flow_->inverse(phi_, x, z)[0];
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
  const bool full_batch = params.batch_size == 0 || params.batch_size >= N;
  OptimizerParams adam;
  adam.name = "adam";
  adam.learning_rate = params.learning_rate;
  auto optimizer = make_optimizer(adam, flow->num_params());
  const double decay = std::pow(params.final_rate_fraction, 1.0 / static_cast<double>(params.epochs));
  const double base_entropy = 0.5 * static_cast<double>(K) * (1.0 + std::log(2.0 * std::numbers::pi));  // H[N(0, I_K)]
  FlowViResult result;
  FlowTape tape;
  const Index S = params.num_samples;
  Mat Z(K, S), X, G_x(K, S);
  Vec grad_x(K), grad_phi(flow->num_params()), used(S);
  double lr = params.learning_rate;
  double elbo_sum = 0.0;
  Index elbo_terms = 0;
  // The flow's partitions and phi's start came from `rng` above; a checkpoint then restores the loop's state.
  EpochLoopCallbacks callbacks;
  callbacks.state = [&](StateArchive& a) {
    a.io(phi), a.io(lr), a.io(rng), a.io(result.elbo), a.io(result.rejected_draws);
    optimizer->archive(a);
  };
  callbacks.on_epoch_begin = [&](Index) {
    elbo_sum = 0.0;
    elbo_terms = 0;
  };
  // One Adam step on the reparameterised ELBO of S draws (the full target in full batch).
  callbacks.on_step = [&](Index, const IndexVec& rows) {
    for (Index s = 0; s < S; ++s) Z.col(s) = rng.normal_vector(K);
    const Vec log_det = flow->forward(phi, Z, X, &tape);
    for (Index s = 0; s < S; ++s) {
      const Vec x = X.col(s);
      const double log_p = full_batch ? target.log_density_and_grad(x, grad_x)
                                      : stochastic->minibatch_log_density_and_grad(x, rows, grad_x);
      if (!std::isfinite(log_p) || !grad_x.allFinite()) {  // e.g. an overflowing network: no step from it
        ++result.rejected_draws;
        G_x.col(s).setZero();
        used[s] = 0.0;
        continue;
      }
      G_x.col(s) = grad_x;
      used[s] = 1.0;
      elbo_sum += log_p + log_det[s] + base_entropy;
      ++elbo_terms;
    }
    const double num_used = used.sum();
    if (num_used == 0) return;
    grad_phi.setZero();
    flow->backward(phi, tape, G_x, used, grad_phi);  // d/dphi sum_s [log p(T(z_s)) + log |det T'(z_s)|]
    optimizer->step(phi, -grad_phi / num_used, lr);
  };
  callbacks.on_epoch_end = [&](Index epoch) {
    const double elbo = elbo_terms ? elbo_sum / static_cast<double>(elbo_terms) : -std::numeric_limits<double>::infinity();
    result.elbo.push_back(elbo);
    if (on_epoch && !on_epoch(epoch, elbo)) return EpochAction::Stop;
    lr *= decay;
    return EpochAction::Continue;
  };
  const EpochLoopResult ran = run_epochs({.epochs = params.epochs, .num_data = N, .batch_size = params.batch_size,
                                          .checkpoint = params.checkpoint,
                                          .checkpoint_section = "uqnn flow vi checkpoint 1"}, rng, callbacks);
  result.resumed_at_epoch = ran.resumed_at_epoch;
  result.interrupted = ran.interrupted;
  result.approximation = std::make_shared<const FlowPosterior>(flow, phi);
  return result;
}

}  // namespace uqnn
