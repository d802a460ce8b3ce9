#include "uqnn/prob/posterior.hpp"

#include <fmt/format.h>

#include "uqnn/core/error.hpp"

namespace uqnn {

Mat gather_columns(const Mat& m, const IndexVec& indices) {
  Mat out(m.rows(), static_cast<Index>(indices.size()));
  for (std::size_t j = 0; j < indices.size(); ++j) out.col(static_cast<Index>(j)) = m.col(indices[j]);
  return out;
}

Posterior::Posterior(std::shared_ptr<const Model> model, std::shared_ptr<const Likelihood> likelihood,
                     std::shared_ptr<const Prior> prior, Mat inputs, Mat targets)
    : model_(std::move(model)), likelihood_(std::move(likelihood)), prior_(std::move(prior)),
      inputs_(std::move(inputs)), targets_(std::move(targets)) {
  if (inputs_.cols() != targets_.cols())
    throw std::invalid_argument(fmt::format("posterior: {} input columns but {} target columns", inputs_.cols(), targets_.cols()));
  if (inputs_.rows() != model_->input_dim())
    throw std::invalid_argument(fmt::format("posterior: inputs have {} rows, the model takes {}", inputs_.rows(), model_->input_dim()));
  if (likelihood_->model_outputs(targets_.rows()) != model_->output_dim())
    throw std::invalid_argument(fmt::format("posterior: the {} likelihood needs {} network outputs for {} target(s), the model has {}",
                                            likelihood_->kind(), likelihood_->model_outputs(targets_.rows()), targets_.rows(),
                                            model_->output_dim()));
  if (prior_->dim() != model_->num_params())
    throw std::invalid_argument(fmt::format("posterior: the prior has dimension {}, the model {} parameters", prior_->dim(), model_->num_params()));
  likelihood_->validate_targets(targets_);
  layout_ = model_->layout();
  layout_.append(likelihood_->extra_layout(), "");
  if (model_->precision() == Precision::Float32) inputs_float_ = inputs_.cast<float>();
}

namespace {

/// The likelihood as the network's OutputLoss: log p(targets | Y, extra) times `scale` in its
/// gradient, with d log p / d extra written to d_extra (overwritten on every call, so that a loss
/// evaluated again, as a float32 network's pass redone in double, counts it once).
struct LikelihoodLoss {
  const Likelihood* likelihood;
  const Mat* targets;
  Vec extra;
  Vec d_extra;
  double scale;
  /// The loss; it captures only `this`, which std::function keeps in its small buffer (no allocation).
  OutputLoss<double> loss() {
    return [c = this](const Mat& Y, Mat& dY) {
      c->d_extra.setZero();
      const double value = c->likelihood->log_likelihood(Y, *c->targets, c->extra, &dY, &c->d_extra);
      if (c->scale != 1.0) dY *= c->scale;
      return value;
    };
  }
};

}  // namespace

const MatT<float>* Posterior::float_copy_of(const Mat& inputs) const {
  const MatT<float>* copy = &inputs == &inputs_ ? &inputs_float_ : &inputs == &shard_inputs_ ? &shard_inputs_float_ : nullptr;
  return copy && copy->cols() == inputs.cols() && copy->size() > 0 ? copy : nullptr;
}

void Posterior::finish(const Vec& theta, const Vec& d_extra, double scale, bool include_prior, double& value, Vec& grad) const {
  const Index P = model_->num_params(), E = likelihood_->num_extra();
  if (include_prior) value += prior_->log_density(theta.head(P), grad.head(P));  // adds its gradient
  if (E > 0) {
    grad.tail(E) = scale * d_extra;
    if (include_prior) {
      Vec d_extra_prior = Vec::Zero(E);
      value += likelihood_->extra_log_prior(theta.tail(E), &d_extra_prior);
      grad.tail(E) += d_extra_prior;
    }
  }
}

double Posterior::evaluate(const Vec& theta, const Mat& inputs, const Mat& targets, double scale, Vec& grad,
                           bool include_prior, const SubspaceGradient* model_gradient) const {
  if (theta.size() != dim())
    throw std::invalid_argument(fmt::format("posterior: theta has {} entries, expected {}", theta.size(), dim()));
  const Index P = model_->num_params(), E = likelihood_->num_extra();
  grad.setZero(dim());  // no allocation when grad already has the right size
  // The network's parameters and gradient are theta's and grad's first P entries, passed in place.
  const ConstVecRef theta_net = theta.head(P);
  const VecRef grad_net = grad.head(P);
  LikelihoodLoss context{likelihood_.get(), &targets, theta.tail(E), Vec::Zero(E), scale};
  const OutputLoss<double> loss = context.loss();
  // The whole data set of a float32 network: its float copy, made once.
  const MatT<float>* float_inputs = float_copy_of(inputs);
  double value = scale * (model_gradient ? model_gradient->value_and_gradient(theta_net, loss, grad_net)
                          : float_inputs ? model_->value_and_gradient(theta_net, inputs, *float_inputs, loss, grad_net)
                                         : model_->value_and_gradient(theta_net, inputs, loss, grad_net));
  finish(theta, context.d_extra, scale, include_prior, value, grad);
  return value;
}

void Posterior::evaluate_lanes(std::span<const Vec* const> thetas, std::span<Vec* const> grads, std::span<double> values,
                               const std::function<const Mat&(std::size_t)>& targets, const std::function<double(std::size_t)>& scale,
                               const std::function<void(std::span<const double* const>, std::span<const OutputLoss<double>* const>,
                                                        std::span<double* const>)>& network) const {
  check_lane_batch(thetas.size(), thetas.size(), values.size(), grads.size());
  const Index E = likelihood_->num_extra();
  const std::size_t C = thetas.size();
  // Per-thread, reused: B1's batched gradient is under a microsecond per chain.
  thread_local std::vector<LikelihoodLoss> contexts;
  thread_local std::vector<OutputLoss<double>> losses;
  thread_local std::vector<const OutputLoss<double>*> loss_ptrs;
  thread_local std::vector<const double*> theta_ptrs;
  thread_local std::vector<double*> grad_ptrs;
  contexts.clear(), losses.clear(), loss_ptrs.clear(), theta_ptrs.clear(), grad_ptrs.clear();
  contexts.reserve(C);  // the losses point into it
  for (std::size_t c = 0; c < C; ++c) {
    const Vec& theta = *thetas[c];
    if (theta.size() != dim())
      throw std::invalid_argument(fmt::format("posterior: theta has {} entries, expected {}", theta.size(), dim()));
    grads[c]->setZero(dim());
    contexts.push_back(LikelihoodLoss{likelihood_.get(), &targets(c), theta.tail(E), Vec::Zero(E), scale(c)});
  }
  for (std::size_t c = 0; c < C; ++c) {
    losses.push_back(contexts[c].loss());
    theta_ptrs.push_back(thetas[c]->data());
    grad_ptrs.push_back(grads[c]->data());
  }
  for (const auto& loss : losses) loss_ptrs.push_back(&loss);
  network(theta_ptrs, loss_ptrs, grad_ptrs);
  for (std::size_t c = 0; c < C; ++c) {
    values[c] *= contexts[c].scale;  // the likelihood's dY carries the scale already (LikelihoodLoss)
    finish(*thetas[c], contexts[c].d_extra, contexts[c].scale, true, values[c], *grads[c]);
  }
}

void Posterior::log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<Vec* const> grads,
                                           std::span<double> values) const {
  if (!model_->has_chain_lanes() || shards_) {
    LogDensity::log_density_and_grad_batch(thetas, grads, values);
    return;
  }
  evaluate_lanes(
      thetas, grads, values, [&](std::size_t) -> const Mat& { return targets_; }, [](std::size_t) { return 1.0; },
      [&](std::span<const double* const> theta_ptrs, std::span<const OutputLoss<double>* const> losses, std::span<double* const> grad_ptrs) {
        model_->value_and_gradient_lanes(theta_ptrs, inputs_, float_copy_of(inputs_), losses, values, grad_ptrs);
      });
}

void Posterior::minibatch_log_density_and_grad_batch(std::span<const Vec* const> thetas, std::span<const IndexVec* const> batches,
                                                     std::span<Vec* const> grads, std::span<double> values) const {
  // With distribute_rows, one by one: each minibatch is sharded (the ranks of a group run the
  // same chains in the same order, so they make the same collective calls).
  if (!model_->has_chain_lanes() || batches.size() != thetas.size() || shards_) {  // the default checks the sizes
    StochasticLogDensity::minibatch_log_density_and_grad_batch(thetas, batches, grads, values);
    return;
  }
  // Each chain's rows, gathered as minibatch_log_density_and_grad gathers them, into buffers that
  // keep their storage from call to call (an SG-MCMC step is a few microseconds on a small network).
  thread_local std::vector<Mat> inputs, targets;
  thread_local std::vector<const Mat*> input_ptrs;
  const std::size_t C = thetas.size();
  inputs.resize(C), targets.resize(C), input_ptrs.clear();
  for (std::size_t c = 0; c < C; ++c) {
    if (batches[c]->empty()) throw std::invalid_argument("posterior: empty minibatch");
    inputs[c] = inputs_(Eigen::all, *batches[c]);  // no allocation when the size is the last call's
    targets[c] = targets_(Eigen::all, *batches[c]);
    input_ptrs.push_back(&inputs[c]);
  }
  evaluate_lanes(
      thetas, grads, values, [&](std::size_t c) -> const Mat& { return targets[c]; },
      [&](std::size_t c) { return static_cast<double>(num_data()) / static_cast<double>(batches[c]->size()); },
      [&](std::span<const double* const> theta_ptrs, std::span<const OutputLoss<double>* const> losses, std::span<double* const> grad_ptrs) {
        model_->value_and_gradient_lanes_on_own_inputs(theta_ptrs, input_ptrs, losses, values, grad_ptrs);
      });
}

double Posterior::log_density_and_grad(const Vec& theta, Vec& grad) const {
  if (!shards_) return evaluate(theta, inputs_, targets_, 1.0, grad, true);
  // This rank's rows' log likelihood and gradient, summed over the shards in rank order, then the
  // prior once (the same on every rank): sum_i log p(y_i | theta) + log p(theta).
  const double local = evaluate(theta, shard_inputs_, shard_targets_, 1.0, grad, false);
  return sum_over_shards(local, grad) + log_prior(theta, &grad);
}

double Posterior::sum_over_shards(double value, Vec& grad) const {
  if (!shards_) return value;
  thread_local Vec buffer;
  buffer.resize(grad.size() + 1);
  buffer.head(grad.size()) = grad;
  buffer[grad.size()] = value;
  shards_->all_reduce_sum(std::span<double>(buffer.data(), static_cast<std::size_t>(buffer.size())));
  grad = buffer.head(grad.size());
  return buffer[grad.size()];
}

IndexVec Posterior::shard_block(const IndexVec& rows) const {
  if (!shards_) return rows;
  // The same split as distribute_rows' split of the training rows: [r n / S, (r + 1) n / S).
  const std::size_t n = rows.size(), S = static_cast<std::size_t>(shards_->size()), r = static_cast<std::size_t>(shards_->rank());
  return IndexVec(rows.begin() + static_cast<std::ptrdiff_t>(r * n / S), rows.begin() + static_cast<std::ptrdiff_t>((r + 1) * n / S));
}

void Posterior::distribute_rows(std::shared_ptr<const Communicator> shards) {
  if (!shards || shards->size() == 1) {
    shards_.reset();
    shard_inputs_ = Mat(), shard_targets_ = Mat(), shard_inputs_float_ = MatT<float>();
    return;
  }
  const Index n = inputs_.cols(), S = shards->size(), r = shards->rank();
  if (n < S)
    throw InputError(fmt::format("--shards {} is invalid: the training data have only {} rows (at most one shard per row)", S, n));
  const Index begin = r * n / S, end = (r + 1) * n / S;
  shard_inputs_ = inputs_.middleCols(begin, end - begin);
  shard_targets_ = targets_.middleCols(begin, end - begin);
  if (model_->precision() == Precision::Float32) shard_inputs_float_ = shard_inputs_.cast<float>();
  shards_ = std::move(shards);
}

double Posterior::subspace_log_density_and_grad(const SubspaceGradient& model_gradient, const Vec& theta, Vec& grad) const {
  return evaluate(theta, inputs_, targets_, 1.0, grad, true, &model_gradient);
}

double Posterior::minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  if (batch.empty()) throw std::invalid_argument("posterior: empty minibatch");
  const double scale = static_cast<double>(num_data()) / static_cast<double>(batch.size());
  if (!shards_) return evaluate(theta, gather_columns(inputs_, batch), gather_columns(targets_, batch), scale, grad, true);
  // Sharded as the full-data evaluation is: this rank's contiguous block of the minibatch (the
  // batch is the same on every rank of the group: they share the chain's Rng stream), scaled by
  // N / |B| like the whole batch, summed over the shards in rank order, then the prior once.
  // A rank whose block is empty (|B| < S) contributes zeros but still joins the sum.
  const IndexVec block = shard_block(batch);
  double local = 0.0;
  if (block.empty()) {
    if (theta.size() != dim())
      throw std::invalid_argument(fmt::format("posterior: theta has {} entries, expected {}", theta.size(), dim()));
    grad.setZero(dim());
  } else {
    local = evaluate(theta, gather_columns(inputs_, block), gather_columns(targets_, block), scale, grad, false);
  }
  return sum_over_shards(local, grad) + log_prior(theta, &grad);
}

Vec Posterior::hessian_vector_product(const Vec& theta, const Vec& v) const {
  if (theta.size() != dim() || v.size() != dim())
    throw std::invalid_argument(fmt::format("posterior: theta and v must have {} entries", dim()));
  const Index P = model_->num_params(), E = likelihood_->num_extra();
  // Extras travel as dual numbers with their own tangent, so the cross terms between network
  // parameters and extras come out of the same forward-over-reverse pass.
  const VecT<Dual> extra = make_dual_vector(theta.tail(E), v.tail(E));
  VecT<Dual> d_extra(E);
  for (Index e = 0; e < E; ++e) d_extra[e] = make_dual(0.0, 0.0);
  const OutputLoss<Dual> loss = [&](const MatT<Dual>& Y, MatT<Dual>& dY) {
    return likelihood_->log_likelihood(Y, targets_, extra, &dY, &d_extra);
  };
  Vec hv(dim());
  hv.head(P) = model_->hessian_vector_product(theta.head(P), v.head(P), inputs_, loss);
  for (Index e = 0; e < E; ++e) hv[P + e] = dual_tangent(d_extra[e]);

  hv.head(P) += prior_->hessian_diagonal(theta.head(P)).cwiseProduct(v.head(P));
  hv.tail(E) += likelihood_->extra_prior_hessian_diagonal(theta.tail(E)).cwiseProduct(v.tail(E));
  return hv;
}

double Posterior::log_density(const Vec& theta) const {
  if (theta.size() != dim())
    throw std::invalid_argument(fmt::format("posterior: theta has {} entries, expected {}", theta.size(), dim()));
  // With distribute_rows, this rank's rows, summed over the shards in rank order as
  // log_density_and_grad sums them (a gradient of no entries: the value alone is reduced).
  const double local = shards_ ? likelihood_value(theta, shard_inputs_, shard_targets_) : likelihood_value(theta, inputs_, targets_);
  Vec no_gradient(0);
  return sum_over_shards(local, no_gradient) + log_prior(theta);
}

double Posterior::likelihood_value(const Vec& theta, const Mat& inputs, const Mat& targets) const {
  if (inputs.cols() == 0) return 0.0;  // a shard of no rows
  const Mat Y = model_->forward(theta.head(model_->num_params()), inputs);
  return likelihood_->log_likelihood(Y, targets, extra_params(theta), nullptr, nullptr);
}

double Posterior::log_likelihood(const Vec& theta, const Mat& inputs, const Mat& targets, Vec* grad) const {
  if (!grad) return likelihood_value(theta, inputs, targets);
  Vec g;
  const double value = evaluate(theta, inputs, targets, 1.0, g, false);
  *grad += g;
  return value;
}

Vec Posterior::pointwise_log_likelihood(const Vec& theta, const Mat& inputs, const Mat& targets) const {
  const Mat Y = model_->forward(theta.head(model_->num_params()), inputs);
  return likelihood_->pointwise_log_likelihood(Y, targets, extra_params(theta));
}

double Posterior::log_prior(const Vec& theta, Vec* grad) const {
  const Index P = model_->num_params();
  Vec g = Vec::Zero(dim());
  Vec gp = Vec::Zero(P);
  double value = prior_->log_density(theta.head(P), &gp);
  g.head(P) = gp;
  Vec d_extra = Vec::Zero(likelihood_->num_extra());
  value += likelihood_->extra_log_prior(extra_params(theta), &d_extra);
  g.tail(d_extra.size()) = d_extra;
  if (grad) *grad += g;
  return value;
}

Vec Posterior::sample_prior(Rng& rng) const {
  Vec theta(dim());
  theta.head(model_->num_params()) = prior_->sample(rng);
  theta.tail(likelihood_->num_extra()) = likelihood_->initial_extra();
  return theta;
}

Vec Posterior::initial_point(Rng& rng) const {
  Vec theta(dim());
  theta.head(model_->num_params()) = model_->initial_params(rng);
  theta.tail(likelihood_->num_extra()) = likelihood_->initial_extra();
  return theta;
}

}  // namespace uqnn
