#pragma once
/// @file The linear-model (LM) baseline of seed 003: ordinary least squares with an intercept and a
/// Gaussian noise sd per target (its maximum-likelihood value on the training data). Seed 003 sec. 4
/// calls a chain "dying" when its RMSE is worse than this model's; Table 3 reports its RMSE and LPPD.
#include "uqnn/core/types.hpp"

namespace uqnn {

class LinearBaseline {
 public:
  /// Least squares on inputs [input_dim, n], targets [target_dim, n] (n > input_dim).
  static LinearBaseline fit(const Mat& inputs, const Mat& targets);
  Mat predict(const Mat& inputs) const;
  double rmse(const Mat& inputs, const Mat& targets) const;
  /// Mean over points of log N(y_i | prediction, sigma^2) (the LM's LPPD: one "draw").
  double lppd(const Mat& inputs, const Mat& targets) const;
  const Vec& sigma() const { return sigma_; }

 private:
  Mat weights_;  ///< [target_dim, input_dim]
  Vec bias_;     ///< [target_dim]
  Vec sigma_;    ///< [target_dim]
};

}  // namespace uqnn
