#include "uqnn/prob/measurement_sampler.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

void MeasurementParams::validate() const {
  require(num_data_points >= 0, "measurement num_data_points", ">= 0");
  require(num_box_points >= 0, "measurement num_box_points", ">= 0");
  require(fixed_points.size() > 0 || num_data_points + num_box_points >= 1, "measurement points",
          "at least 1 per draw (num_data_points + num_box_points >= 1)");
  require(std::isfinite(box_margin) && box_margin >= 0, "measurement box_margin", "finite and >= 0");
  require(box_lower.size() == box_upper.size(), "measurement box_lower/box_upper", "both given with one entry per input, or both empty");
  require(box_lower.allFinite() && box_upper.allFinite() && (box_lower.array() <= box_upper.array()).all(),
          "measurement box_lower/box_upper", "finite with lower <= upper");
  require(fixed_points.allFinite(), "measurement fixed_points", "finite");
}

MeasurementSampler::MeasurementSampler(Mat inputs, MeasurementParams params)
    : inputs_(std::move(inputs)), params_(std::move(params)) {
  params_.validate();
  const Index d = inputs_.rows();
  if (params_.fixed_points.size() > 0) {
    if (params_.fixed_points.rows() != d)
      throw std::invalid_argument(fmt::format("measurement fixed_points must have {} rows (the input dimension), not {}", d,
                                              params_.fixed_points.rows()));
    return;
  }
  if (inputs_.cols() < 1) throw std::invalid_argument("measurement sampler: no training inputs");
  if (params_.box_lower.size() > 0) {
    if (params_.box_lower.size() != d)
      throw std::invalid_argument(fmt::format("measurement box_lower/box_upper need {} entries (one per input)", d));
    lower_ = params_.box_lower;
    upper_ = params_.box_upper;
  } else {
    const Vec lo = inputs_.rowwise().minCoeff(), hi = inputs_.rowwise().maxCoeff();
    lower_ = lo - params_.box_margin * (hi - lo);
    upper_ = hi + params_.box_margin * (hi - lo);
  }
}

bool MeasurementSampler::is_fixed() const {
  return params_.fixed_points.size() > 0 || (params_.num_box_points == 0 && params_.num_data_points >= inputs_.cols());
}

Index MeasurementSampler::size() const {
  if (params_.fixed_points.size() > 0) return params_.fixed_points.cols();
  return std::min(params_.num_data_points, inputs_.cols()) + params_.num_box_points;
}

Mat MeasurementSampler::draw(Rng& rng) const {
  if (params_.fixed_points.size() > 0) return params_.fixed_points;
  const Index N = inputs_.cols(), d = inputs_.rows();
  const Index from_data = std::min(params_.num_data_points, N);
  Mat X(d, from_data + params_.num_box_points);
  if (from_data == N) {
    X.leftCols(N) = inputs_;  // all of them: no randomness needed
  } else {
    // Partial Fisher-Yates: a uniform random subset of size from_data without replacement.
    IndexVec index(static_cast<std::size_t>(N));
    for (Index i = 0; i < N; ++i) index[static_cast<std::size_t>(i)] = i;
    for (Index i = 0; i < from_data; ++i) {
      const auto j = i + static_cast<Index>(rng.uniform_index(static_cast<std::uint64_t>(N - i)));
      std::swap(index[static_cast<std::size_t>(i)], index[static_cast<std::size_t>(j)]);
      X.col(i) = inputs_.col(index[static_cast<std::size_t>(i)]);
    }
  }
  for (Index j = 0; j < params_.num_box_points; ++j)
    for (Index r = 0; r < d; ++r) X(r, from_data + j) = rng.uniform(lower_[r], upper_[r]);
  return X;
}

}  // namespace uqnn
