#include "uqnn/approx/approximate_posterior.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "uqnn/core/error.hpp"

namespace uqnn {

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

SubsetPosterior::SubsetPosterior(Vec base, IndexVec active, std::shared_ptr<const ApproximatePosterior> inner)
    : base_(std::move(base)), active_(std::move(active)), inner_(std::move(inner)) {
  if (!inner_ || inner_->dim() != static_cast<Index>(active_.size()))
    throw std::invalid_argument(fmt::format("subset posterior: {} active coordinates for an approximation of dimension {}",
                                            active_.size(), inner_ ? inner_->dim() : 0));
  std::vector<char> seen(static_cast<std::size_t>(base_.size()), 0);
  for (const Index k : active_) {
    if (k < 0 || k >= base_.size() || seen[static_cast<std::size_t>(k)])
      throw std::invalid_argument(fmt::format("subset posterior: active index {} is out of range or repeated", k));
    seen[static_cast<std::size_t>(k)] = 1;
  }
}

std::vector<Vec> SubsetPosterior::sample(Rng& rng, Index n) const {
  std::vector<Vec> out;
  out.reserve(static_cast<std::size_t>(n));
  for (const Vec& inner : inner_->sample(rng, n)) {
    Vec theta = base_;
    theta(active_) = inner;
    out.push_back(std::move(theta));
  }
  return out;
}

Vec SubsetPosterior::mean() const {
  Vec m = base_;
  m(active_) = inner_->mean();
  return m;
}

Vec SubsetPosterior::marginal_variance() const {
  Vec v = Vec::Zero(base_.size());
  v(active_) = inner_->marginal_variance();
  return v;
}

KroneckerGaussianPosterior::KroneckerGaussianPosterior(Vec mean, std::vector<Block> blocks, IndexVec diagonal_index,
                                                       Vec diagonal_precision)
    : mean_(std::move(mean)),
      blocks_(std::move(blocks)),
      diagonal_index_(std::move(diagonal_index)),
      diagonal_precision_(std::move(diagonal_precision)) {
  std::vector<char> seen(static_cast<std::size_t>(mean_.size()), 0);
  const auto claim = [&](Index k) {
    if (k < 0 || k >= mean_.size() || seen[static_cast<std::size_t>(k)])
      throw std::invalid_argument(fmt::format("kronecker gaussian: index {} is out of range or in two blocks", k));
    seen[static_cast<std::size_t>(k)] = 1;
  };
  for (const Block& b : blocks_) {
    const Index rows = b.output_vectors.rows(), cols = b.input_vectors.rows();
    if (b.output_vectors.cols() != rows || b.input_vectors.cols() != cols || b.precision.rows() != rows ||
        b.precision.cols() != cols || static_cast<Index>(b.index.size()) != rows * cols)
      throw std::invalid_argument("kronecker gaussian: a block's factors, precision and index disagree in shape");
    if (!(b.precision.array() > 0).all() || !b.precision.allFinite())
      throw std::invalid_argument("kronecker gaussian: every eigen-precision must be finite and > 0");
    for (const Index k : b.index) claim(k);
  }
  if (static_cast<Index>(diagonal_index_.size()) != diagonal_precision_.size())
    throw std::invalid_argument("kronecker gaussian: the diagonal part's indices and precisions differ in number");
  if (!(diagonal_precision_.array() > 0).all() || !diagonal_precision_.allFinite())
    throw std::invalid_argument("kronecker gaussian: every diagonal precision must be finite and > 0");
  for (const Index k : diagonal_index_) claim(k);
  covers_all_ = std::all_of(seen.begin(), seen.end(), [](char c) { return c != 0; });
}

namespace {

/// The block's parameters as a [rows, cols] matrix (row-major order of `index`).
Mat kronecker_block_matrix(const Vec& theta, const KroneckerGaussianPosterior::Block& b) {
  const Index rows = b.output_vectors.rows(), cols = b.input_vectors.rows();
  Mat X(rows, cols);
  for (Index o = 0; o < rows; ++o)
    for (Index j = 0; j < cols; ++j) X(o, j) = theta[b.index[static_cast<std::size_t>(o * cols + j)]];
  return X;
}

}  // namespace

std::vector<Vec> KroneckerGaussianPosterior::sample(Rng& rng, Index n) const {
  std::vector<Vec> out;
  out.reserve(static_cast<std::size_t>(n));
  for (Index s = 0; s < n; ++s) {
    Vec theta = mean_;
    for (const Block& b : blocks_) {
      const Index rows = b.precision.rows(), cols = b.precision.cols();
      const Vec z = rng.normal_vector(rows * cols);
      const Mat Z = Eigen::Map<const Mat>(z.data(), rows, cols).cwiseQuotient(b.precision.cwiseSqrt());
      const Mat X = b.output_vectors * Z * b.input_vectors.transpose();
      for (Index o = 0; o < rows; ++o)
        for (Index j = 0; j < cols; ++j) theta[b.index[static_cast<std::size_t>(o * cols + j)]] += X(o, j);
    }
    const Vec z = rng.normal_vector(diagonal_precision_.size());
    for (std::size_t d = 0; d < diagonal_index_.size(); ++d)
      theta[diagonal_index_[d]] += z[static_cast<Index>(d)] / std::sqrt(diagonal_precision_[static_cast<Index>(d)]);
    out.push_back(std::move(theta));
  }
  return out;
}

Vec KroneckerGaussianPosterior::marginal_variance() const {
  Vec v = Vec::Zero(mean_.size());
  for (const Block& b : blocks_) {
    const Mat V = b.output_vectors.cwiseAbs2() * b.precision.cwiseInverse() * b.input_vectors.cwiseAbs2().transpose();
    const Index cols = b.precision.cols();
    for (Index o = 0; o < V.rows(); ++o)
      for (Index j = 0; j < cols; ++j) v[b.index[static_cast<std::size_t>(o * cols + j)]] = V(o, j);
  }
  for (std::size_t d = 0; d < diagonal_index_.size(); ++d)
    v[diagonal_index_[d]] = 1.0 / diagonal_precision_[static_cast<Index>(d)];
  return v;
}

double KroneckerGaussianPosterior::log_prob(const Vec& theta) const {
  if (!covers_all_) return ApproximatePosterior::log_prob(theta);
  const Vec dev = theta - mean_;
  double quadratic = 0.0, log_det = 0.0;
  for (const Block& b : blocks_) {
    // Coordinates in the eigenbasis: U_G^T X U_A (the transpose of the draw's map).
    const Mat C = b.output_vectors.transpose() * kronecker_block_matrix(dev, b) * b.input_vectors;
    quadratic += C.cwiseAbs2().cwiseProduct(b.precision).sum();
    log_det += b.precision.array().log().sum();
  }
  for (std::size_t d = 0; d < diagonal_index_.size(); ++d) {
    const double p = diagonal_precision_[static_cast<Index>(d)];
    quadratic += p * dev[diagonal_index_[d]] * dev[diagonal_index_[d]];
    log_det += std::log(p);
  }
  return -0.5 * quadratic + 0.5 * log_det - 0.5 * static_cast<double>(dim()) * kLog2Pi;
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
