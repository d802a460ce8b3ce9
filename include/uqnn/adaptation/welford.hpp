#pragma once
/// @file Welford's online sample variance and covariance (divisor n - 1), numerically stable.
/// References: Welford (1962), Technometrics 4(3); Stan `welford_var_estimator`,
/// `welford_covar_estimator`.
#include "uqnn/core/state_archive.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

class WelfordVariance {
 public:
  explicit WelfordVariance(Index dim = 0) { reset(dim); }
  void reset(Index dim) { n_ = 0; mean_ = Vec::Zero(dim); m2_ = Vec::Zero(dim); }
  void restart() { reset(mean_.size()); }
  void add(const Vec& x);
  long count() const { return n_; }
  const Vec& mean() const { return mean_; }
  /// Sample variance (divisor n - 1); zero when fewer than 2 samples.
  Vec variance() const;
  void archive(StateArchive& a) { a.io(n_), a.io(mean_), a.io(m2_); }

 private:
  long n_ = 0;
  Vec mean_, m2_;
};

class WelfordCovariance {
 public:
  explicit WelfordCovariance(Index dim = 0) { reset(dim); }
  void reset(Index dim) { n_ = 0; mean_ = Vec::Zero(dim); m2_ = Mat::Zero(dim, dim); }
  void restart() { reset(mean_.size()); }
  void add(const Vec& x);
  long count() const { return n_; }
  const Vec& mean() const { return mean_; }
  /// Sample covariance (divisor n - 1); zero when fewer than 2 samples.
  Mat covariance() const;
  void archive(StateArchive& a) { a.io(n_), a.io(mean_), a.io(m2_); }

 private:
  long n_ = 0;
  Vec mean_;
  Mat m2_;
};

/// Stan's regularised metric estimate from n draws: (n / (n + 5)) var + target (5 / (n + 5)), with
/// Stan's target 1e-3.
Vec regularize_variance(const Vec& variance, long n, double target = 1e-3);
/// Dense version: (n / (n + 5)) cov + target (5 / (n + 5)) I.
Mat regularize_covariance(const Mat& covariance, long n, double target = 1e-3);

}  // namespace uqnn
