#pragma once
/// @file Helpers shared by the diagnostics sources (not installed, not public API).
#include <cmath>
#include <limits>

#include "uqnn/core/types.hpp"

namespace uqnn::diagnostics::detail {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// True when a draw is NaN or infinite: rstan's diagnostics return NA / NaN then.
inline bool has_non_finite(const Mat& draws) { return !draws.allFinite(); }

/// rstan's `is_constant`: max - min below machine epsilon (R-hat and ESS are undefined then).
inline bool is_constant(const Mat& draws) {
  return std::abs(draws.maxCoeff() - draws.minCoeff()) < std::numeric_limits<double>::epsilon();
}

/// Sample variance of a column, divisor n - 1 (R's `var`), two-pass.
inline double variance(const Eigen::Ref<const Vec>& x) {
  const double m = x.mean();
  return (x.array() - m).square().sum() / static_cast<double>(x.size() - 1);
}

}  // namespace uqnn::diagnostics::detail
