#include "uqnn/prob/views.hpp"

#include "uqnn/core/error.hpp"

namespace uqnn {

SubspaceView::SubspaceView(std::shared_ptr<const LogDensity> base, IndexVec active, Vec base_point)
    : base_(std::move(base)), active_(std::move(active)), base_point_(std::move(base_point)) {
  require(base_point_.size() == base_->dim(), "subspace base point", "a vector of the base density's dimension");
  for (Index i : active_) require(i >= 0 && i < base_->dim(), "subspace coordinate", "in [0, dim)");
  posterior_ = dynamic_cast<const Posterior*>(base_.get());
  if (posterior_) {
    const Index P = posterior_->model().num_params();
    IndexVec network;
    for (Index i : active_)
      if (i < P) network.push_back(i);
    model_gradient_ = posterior_->model().make_subspace_gradient(base_point_.head(P), network, posterior_->inputs());
  }
}

Vec SubspaceView::expand(const Vec& z) const {
  Vec theta = base_point_;
  for (std::size_t j = 0; j < active_.size(); ++j) theta[active_[j]] = z[static_cast<Index>(j)];
  return theta;
}

Vec SubspaceView::restrict(const Vec& theta) const {
  Vec z(dim());
  for (std::size_t j = 0; j < active_.size(); ++j) z[static_cast<Index>(j)] = theta[active_[j]];
  return z;
}

double SubspaceView::log_density_and_grad(const Vec& z, Vec& grad) const {
  // Per-thread buffers: chains share the view, and a sampler's gradients then allocate nothing.
  thread_local Vec theta, full_grad;
  theta = base_point_;
  for (std::size_t j = 0; j < active_.size(); ++j) theta[active_[j]] = z[static_cast<Index>(j)];
  const double value = model_gradient_ ? posterior_->subspace_log_density_and_grad(*model_gradient_, theta, full_grad)
                                       : base_->log_density_and_grad(theta, full_grad);
  grad.resize(dim());
  for (std::size_t j = 0; j < active_.size(); ++j) grad[static_cast<Index>(j)] = full_grad[active_[j]];
  return value;
}

Vec SubspaceView::hessian_vector_product(const Vec& z, const Vec& v) const {
  Vec v_full = Vec::Zero(base_->dim());
  for (std::size_t j = 0; j < active_.size(); ++j) v_full[active_[j]] = v[static_cast<Index>(j)];
  return restrict(base_->hessian_vector_product(expand(z), v_full));
}

TemperedView::TemperedView(std::shared_ptr<const LogDensity> base, double beta) : base_(std::move(base)), beta_(beta) {
  require(beta > 0, "tempering beta (inverse temperature)", "> 0");
}

double TemperedView::log_density_and_grad(const Vec& theta, Vec& grad) const {
  const double value = base_->log_density_and_grad(theta, grad);
  grad *= beta_;
  return beta_ * value;
}

Vec TemperedView::hessian_vector_product(const Vec& theta, const Vec& v) const {
  return beta_ * base_->hessian_vector_product(theta, v);
}

}  // namespace uqnn
