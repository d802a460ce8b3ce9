#pragma once
/// @file MeasurementSampler: the finite measurement set X_M at which functional SG-MCMC evaluates
/// its GP prior, drawn afresh at every iteration.
///
/// Seed 002 sec. 5.1 / App. H.2: "measurement points ... randomly sampled from training data and
/// an additional 40 inducing points from Uniform(-1, 1)"; sec. H.2 (UCI): the training data
/// themselves when N < 1000, otherwise 1000 random training points. So X_M = (a random subset of
/// `num_data_points` training inputs, without replacement) + (`num_box_points` points uniform in
/// a box around the data). Deviation: the paper draws 40 points from 20 training inputs, i.e. with
/// repeats; a repeated point makes the GP covariance singular (only jitter keeps it invertible), so
/// we take min(num_data_points, N) distinct points.
/// When the set cannot change (all training points and no box points, or `fixed_points`), it is
/// fixed and the GP factorisation can be cached.
#include "uqnn/core/rng.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

/// How X_M is drawn. Defaults: seed 002 sec. 5.1 (40 data + 40 box points).
struct MeasurementParams {
  Index num_data_points = 40;  ///< training inputs per draw (min with N), without replacement; >= 0
  Index num_box_points = 40;   ///< points uniform in the box per draw; >= 0
  /// Box: per input [min - margin * range, max + margin * range] of the training inputs, unless
  /// box_lower / box_upper are given (one entry per input). margin >= 0.
  double box_margin = 0.1;
  Vec box_lower, box_upper;
  /// When non-empty ([input_dim, M]): X_M is always these points (tests, linear-model identity).
  Mat fixed_points;
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
};

class MeasurementSampler {
 public:
  /// `inputs` [input_dim, N]: the training inputs (standardised when the model sees them so).
  MeasurementSampler(Mat inputs, MeasurementParams params);

  /// True when every draw returns the same set (see the file comment).
  bool is_fixed() const;
  /// Number of measurement points per draw.
  Index size() const;
  /// A fresh X_M [input_dim, size()] (no random numbers are used when is_fixed()).
  Mat draw(Rng& rng) const;
  const Vec& box_lower() const { return lower_; }
  const Vec& box_upper() const { return upper_; }
  const MeasurementParams& params() const { return params_; }

 private:
  Mat inputs_;
  MeasurementParams params_;
  Vec lower_, upper_;
};

}  // namespace uqnn
