#include "uqnn/adaptation/welford.hpp"

namespace uqnn {

void WelfordVariance::add(const Vec& x) {
  ++n_;
  const Vec delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_.array() += delta.array() * (x - mean_).array();
}

Vec WelfordVariance::variance() const {
  if (n_ < 2) return Vec::Zero(mean_.size());
  return m2_ / static_cast<double>(n_ - 1);
}

void WelfordCovariance::add(const Vec& x) {
  ++n_;
  const Vec delta = x - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_.noalias() += (x - mean_) * delta.transpose();
}

Mat WelfordCovariance::covariance() const {
  if (n_ < 2) return Mat::Zero(mean_.size(), mean_.size());
  return m2_ / static_cast<double>(n_ - 1);
}

Vec regularize_variance(const Vec& variance, long n, double target) {
  const double nd = static_cast<double>(n);
  return (nd / (nd + 5.0)) * variance.array() + target * (5.0 / (nd + 5.0));
}

Mat regularize_covariance(const Mat& covariance, long n, double target) {
  const double nd = static_cast<double>(n);
  Mat out = (nd / (nd + 5.0)) * covariance;
  out.diagonal().array() += target * (5.0 / (nd + 5.0));
  return out;
}

}  // namespace uqnn
