#include "uqnn/diagnostics/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "uqnn/core/error.hpp"

namespace uqnn::diagnostics {
namespace {

std::vector<double> sorted_values(const Mat& draws) {
  std::vector<double> values(draws.data(), draws.data() + draws.size());
  std::sort(values.begin(), values.end());
  return values;
}

}  // namespace

double mean(const Mat& draws) {
  require(draws.size() > 0, "draws", "non-empty");
  return draws.mean();
}

double sd(const Mat& draws) {
  require(draws.size() > 0, "draws", "non-empty");
  if (draws.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  const double m = draws.mean();
  // Two-pass formula: sum of squared deviations from the mean, divisor N - 1.
  return std::sqrt((draws.array() - m).square().sum() / static_cast<double>(draws.size() - 1));
}

double quantile(const Mat& draws, double prob) {
  require(draws.size() > 0, "draws", "non-empty");
  require(prob >= 0.0 && prob <= 1.0, "prob", "in [0, 1]");
  const std::vector<double> x = sorted_values(draws);
  // R type 7 with 1-based index h = 1 + (N - 1) p, written exactly as R's quantile.default.
  const double index = 1.0 + static_cast<double>(x.size() - 1) * prob;
  const auto lo = static_cast<std::size_t>(std::floor(index));
  const auto hi = static_cast<std::size_t>(std::ceil(index));
  const double h = index - static_cast<double>(lo);
  const double x_lo = x[lo - 1], x_hi = x[hi - 1];
  if (h == 0.0 || x_hi == x_lo) return x_lo;
  return (1.0 - h) * x_lo + h * x_hi;
}

double median(const Mat& draws) {
  require(draws.size() > 0, "draws", "non-empty");
  const std::vector<double> x = sorted_values(draws);
  const std::size_t n = x.size();
  return n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2.0;
}

Interval hdi(const Mat& draws, double prob) {
  require(prob > 0.0 && prob < 1.0, "prob", "in (0, 1)");
  // NaN has no place in the sort (std::sort needs a strict weak order), and widths with an
  // infinite end are not comparable: no interval.
  if (!draws.allFinite()) return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  const std::vector<double> x = sorted_values(draws);
  const std::size_t n = x.size();
  // Each candidate interval holds floor(prob N) + 1 sorted draws: [x_i, x_{i + width}].
  const auto width = static_cast<std::size_t>(std::floor(prob * static_cast<double>(n)));
  require(n > 0 && width < n, "draws", "long enough that floor(prob * N) < N");
  std::size_t best = 0;
  for (std::size_t i = 1; i + width < n; ++i) {
    if (x[i + width] - x[i] < x[best + width] - x[best]) best = i;  // strict: first minimum wins
  }
  return {x[best], x[best + width]};
}

}  // namespace uqnn::diagnostics
