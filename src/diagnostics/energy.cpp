#include "uqnn/diagnostics/energy.hpp"

#include <limits>

#include "uqnn/core/error.hpp"

namespace uqnn::diagnostics {

Vec e_bfmi(const Mat& energy) {
  const Index n = energy.rows();
  require(n >= 2, "energy", "at least 2 draws per chain");
  Vec out(energy.cols());
  for (Index j = 0; j < energy.cols(); ++j) {
    const auto e = energy.col(j);
    // Betancourt (2016) eq. 5: squared successive differences over squared deviations.
    const double numerator = (e.tail(n - 1) - e.head(n - 1)).squaredNorm();
    const double denominator = (e.array() - e.mean()).square().sum();
    out(j) = denominator > 0.0 ? numerator / denominator : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

}  // namespace uqnn::diagnostics
