#pragma once
/// @file Standardizer: per-column affine rescaling x_std = (x - mean) / scale of inputs and targets.
///
/// Fitted on the training rows only (never on validation or test rows, which would leak them into
/// training). `scale` is the population standard deviation (divide by n, numpy's default `np.std`),
/// as in the UCI benchmark code of Hernández-Lobato & Adams (2015) and Gal & Ghahramani (2016), so
/// metrics are comparable with the published tables. Predictions are mapped back with
/// `inverse_transform_targets`; a predictive standard deviation only scales:
/// sd_original = sd_standardised * scale.
/// `identity()` is the no-op used for --no-standardize (mean 0, scale 1).
/// References: Hernández-Lobato & Adams (2015), "Probabilistic Backpropagation", ICML, experiments code.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/types.hpp"
#include "uqnn/data/dataset.hpp"

namespace uqnn {

class Standardizer {
 public:
  /// Identity over no columns; use fit() or identity().
  Standardizer() = default;

  /// Fits per-column mean and population sd on `train` (inputs and targets). An input column that
  /// is constant in `train` is kept with scale 1 (it standardises to 0) and named in
  /// constant_inputs(). Throws uqnn::InputError naming the column when a target is constant or a
  /// column's values overflow; std::invalid_argument when `train` is empty.
  static Standardizer fit(const Dataset& train);
  /// The no-op standardiser (mean 0, scale 1) for the given column names.
  static Standardizer identity(std::vector<std::string> input_names, std::vector<std::string> target_names);
  /// The no-op standardiser with the dimensions and names of `data`.
  static Standardizer identity(const Dataset& data) { return identity(data.input_names, data.target_names); }

  /// [input_dim, n] -> standardised; throws std::invalid_argument on a dimension mismatch.
  Mat transform_inputs(const Mat& inputs) const;
  Mat inverse_transform_inputs(const Mat& inputs) const;
  /// [target_dim, n] -> standardised.
  Mat transform_targets(const Mat& targets) const;
  Mat inverse_transform_targets(const Mat& targets) const;
  /// Maps a standard deviation (or any scale quantity) of standardised targets to original units.
  Mat inverse_transform_target_sd(const Mat& sd) const;
  /// Maps a variance of standardised targets to original units (multiplies by scale^2).
  Mat inverse_transform_target_variance(const Mat& variance) const;
  /// Standardises both matrices of a dataset (names and source are kept).
  Dataset transform(const Dataset& data) const;

  bool is_identity() const { return is_identity_; }
  const Vec& input_mean() const { return input_mean_; }
  const Vec& input_scale() const { return input_scale_; }
  const Vec& target_mean() const { return target_mean_; }
  const Vec& target_scale() const { return target_scale_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& target_names() const { return target_names_; }
  /// Input columns that fit() found constant in the training rows (kept with scale 1).
  const std::vector<std::string>& constant_inputs() const { return constant_inputs_; }

  /// {"format": "uqnn.standardizer", "version": 1, "standardize": bool, "inputs": {"names", "mean",
  /// "scale"}, "targets": {...}}. Doubles round-trip exactly.
  nlohmann::json to_json() const;
  /// Inverse of to_json; `source` (e.g. the file name) prefixes error messages. Throws
  /// uqnn::InputError naming the field for a missing key, wrong type, length mismatch or a scale
  /// that is not finite and positive.
  static Standardizer from_json(const nlohmann::json& json, const std::string& source = "standardizer");

  /// Exact equality of every mean, scale, name and the identity flag.
  bool operator==(const Standardizer& other) const;

 private:
  Vec input_mean_, input_scale_, target_mean_, target_scale_;
  std::vector<std::string> input_names_, target_names_;
  std::vector<std::string> constant_inputs_;  // not serialised: a note of the fit, not a parameter
  bool is_identity_ = true;
};

}  // namespace uqnn
