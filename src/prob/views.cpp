#include "uqnn/prob/views.hpp"

#include "uqnn/core/error.hpp"

namespace uqnn {

SubspaceView::SubspaceView(std::shared_ptr<const LogDensity> base, IndexVec active, Vec base_point)
    : base_(std::move(base)), active_(std::move(active)), base_point_(std::move(base_point)) {
  require(base_point_.size() == base_->dim(), "subspace base point", "a vector of the base density's dimension");
  for (Index i : active_) require(i >= 0 && i < base_->dim(), "subspace coordinate", "in [0, dim)");
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
  Vec full_grad;
  const double value = base_->log_density_and_grad(expand(z), full_grad);
  grad = restrict(full_grad);
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
