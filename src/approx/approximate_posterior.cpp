#include "uqnn/approx/approximate_posterior.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {
}

GaussianPosterior::GaussianPosterior(Vec mean, const Mat& precision) : mean_(std::move(mean)) {
  if (precision.rows() != mean_.size() || precision.cols() != mean_.size())
    throw std::invalid_argument(fmt::format("gaussian posterior: precision is {}x{}, mean has {} entries", precision.rows(),
                                            precision.cols(), mean_.size()));
  Eigen::LLT<Mat> llt(precision);
  if (llt.info() != Eigen::Success)
    throw std::runtime_error("gaussian posterior: the precision matrix is not positive definite (Cholesky failed)");
  lower_ = llt.matrixL();
  log_det_precision_ = 2.0 * lower_.diagonal().array().log().sum();
  // Var_k = || L^-1 e_k ||^2 (column k of L^-1).
  const Mat inverse_lower = lower_.triangularView<Eigen::Lower>().solve(Mat::Identity(dim(), dim()));
  variance_ = inverse_lower.colwise().squaredNorm().transpose();
}

std::vector<Vec> GaussianPosterior::sample(Rng& rng, Index n) const {
  std::vector<Vec> out;
  out.reserve(static_cast<std::size_t>(n));
  for (Index s = 0; s < n; ++s) {
    const Vec z = rng.normal_vector(dim());
    // x = L^-T z has covariance L^-T L^-1 = (L L^T)^-1 = P^-1.
    out.push_back(mean_ + lower_.transpose().triangularView<Eigen::Upper>().solve(z));
  }
  return out;
}

double GaussianPosterior::log_prob(const Vec& theta) const {
  const Vec u = lower_.transpose() * (theta - mean_);  // (theta-m)^T P (theta-m) = ||L^T (theta-m)||^2
  return -0.5 * u.squaredNorm() + 0.5 * log_det_precision_ - 0.5 * static_cast<double>(dim()) * kLog2Pi;
}

Mat GaussianPosterior::covariance() const {
  const Mat inverse_lower = lower_.triangularView<Eigen::Lower>().solve(Mat::Identity(dim(), dim()));
  return inverse_lower.transpose() * inverse_lower;
}

DiagonalGaussianPosterior::DiagonalGaussianPosterior(Vec mean, Vec sd) : mean_(std::move(mean)), sd_(std::move(sd)) {
  if (mean_.size() != sd_.size())
    throw std::invalid_argument(fmt::format("diagonal gaussian: {} means but {} sds", mean_.size(), sd_.size()));
  if (!(sd_.array() > 0).all() || !sd_.allFinite())
    throw std::invalid_argument("diagonal gaussian: every sd must be finite and > 0");
}

std::vector<Vec> DiagonalGaussianPosterior::sample(Rng& rng, Index n) const {
  std::vector<Vec> out;
  out.reserve(static_cast<std::size_t>(n));
  for (Index s = 0; s < n; ++s) out.push_back(mean_ + sd_.cwiseProduct(rng.normal_vector(dim())));
  return out;
}

double DiagonalGaussianPosterior::log_prob(const Vec& theta) const {
  const Vec z = (theta - mean_).cwiseQuotient(sd_);
  return -0.5 * z.squaredNorm() - sd_.array().log().sum() - 0.5 * static_cast<double>(dim()) * kLog2Pi;
}

EnsemblePosterior::EnsemblePosterior(std::vector<Vec> members) : members_(std::move(members)) {
  require(!members_.empty(), "number of ensemble members", ">= 1");
  for (const Vec& m : members_)
    if (m.size() != members_.front().size()) throw std::invalid_argument("ensemble: members differ in dimension");
}

std::vector<Vec> EnsemblePosterior::sample(Rng& rng, Index n) const {
  if (n == static_cast<Index>(members_.size())) return members_;
  std::vector<Vec> out;
  for (Index s = 0; s < n; ++s) out.push_back(members_[rng.uniform_index(members_.size())]);
  return out;
}

Vec EnsemblePosterior::mean() const {
  Vec m = Vec::Zero(dim());
  for (const Vec& x : members_) m += x;
  return m / static_cast<double>(members_.size());
}

Vec EnsemblePosterior::marginal_variance() const {
  const Index J = static_cast<Index>(members_.size());
  if (J < 2) return Vec::Zero(dim());
  const Vec m = mean();
  Vec v = Vec::Zero(dim());
  for (const Vec& x : members_) v += (x - m).array().square().matrix();
  return v / static_cast<double>(J - 1);
}

MixturePosterior::MixturePosterior(std::vector<std::shared_ptr<const ApproximatePosterior>> components)
    : components_(std::move(components)) {
  require(!components_.empty(), "number of mixture components", ">= 1");
  for (const auto& c : components_)
    if (!c || c->dim() != components_.front()->dim()) throw std::invalid_argument("mixture: components missing or differ in dimension");
}

std::vector<Vec> MixturePosterior::sample(Rng& rng, Index n) const {
  const Index J = static_cast<Index>(components_.size());
  std::vector<Vec> out;
  out.reserve(static_cast<std::size_t>(n));
  for (Index s = 0; s < n; ++s) out.push_back(components_[static_cast<std::size_t>(s % J)]->sample(rng, 1).front());
  return out;
}

Vec MixturePosterior::mean() const {
  Vec m = Vec::Zero(dim());
  for (const auto& c : components_) m += c->mean();
  return m / static_cast<double>(components_.size());
}

Vec MixturePosterior::marginal_variance() const {
  const Vec m = mean();
  Vec v = Vec::Zero(dim());
  for (const auto& c : components_) v += c->marginal_variance() + (c->mean() - m).array().square().matrix();
  return v / static_cast<double>(components_.size());
}

}  // namespace uqnn
