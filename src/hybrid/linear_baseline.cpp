#include "uqnn/hybrid/linear_baseline.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "uqnn/core/error.hpp"

namespace uqnn {

LinearBaseline LinearBaseline::fit(const Mat& inputs, const Mat& targets) {
  const Index n = inputs.cols(), p = inputs.rows();
  require(targets.cols() == n && n > p, "linear baseline data",
          fmt::format("as many targets as inputs and more points than features ({} points, {} features)", n, p));
  Mat design(n, p + 1);
  design.leftCols(p) = inputs.transpose();
  design.col(p).setOnes();
  // Column-pivoting QR: rank-deficient designs (constant features) still get a least-squares fit.
  const Mat beta = design.colPivHouseholderQr().solve(targets.transpose());  // [p + 1, target_dim]
  LinearBaseline lm;
  lm.weights_ = beta.topRows(p).transpose();
  lm.bias_ = beta.row(p).transpose();
  const Mat residual = lm.predict(inputs) - targets;
  lm.sigma_ = (residual.array().square().rowwise().mean()).sqrt().matrix();
  lm.sigma_ = lm.sigma_.cwiseMax(1e-12);
  return lm;
}

Mat LinearBaseline::predict(const Mat& inputs) const { return (weights_ * inputs).colwise() + bias_; }

double LinearBaseline::rmse(const Mat& inputs, const Mat& targets) const {
  return std::sqrt((predict(inputs) - targets).squaredNorm() / static_cast<double>(targets.size()));
}

double LinearBaseline::lppd(const Mat& inputs, const Mat& targets) const {
  const Mat z = (predict(inputs) - targets).array().colwise() / sigma_.array();
  double sum = -0.5 * z.squaredNorm();
  sum -= static_cast<double>(targets.cols()) * (sigma_.array().log().sum() + 0.5 * static_cast<double>(targets.rows()) *
                                                                                std::log(2.0 * std::numbers::pi));
  return sum / static_cast<double>(targets.cols());
}

}  // namespace uqnn
