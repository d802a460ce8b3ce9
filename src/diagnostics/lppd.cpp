#include "uqnn/diagnostics/lppd.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "uqnn/core/error.hpp"

namespace uqnn::diagnostics {
namespace {

/// log(exp(a) + exp(b)) without overflow or underflow; handles -inf arguments.
double log_add_exp(double a, double b) {
  if (a == -std::numeric_limits<double>::infinity()) return b;
  if (b == -std::numeric_limits<double>::infinity()) return a;
  const double hi = std::max(a, b), lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}

void require_shape(const Mat& log_lik) {
  require(log_lik.rows() > 0 && log_lik.cols() > 0, "log_lik",
          "a non-empty [draws, points] matrix");
}

}  // namespace

Vec pointwise_lppd(const Mat& log_lik) {
  require_shape(log_lik);
  const double log_s = std::log(static_cast<double>(log_lik.rows()));
  Vec out(log_lik.cols());
  for (Index i = 0; i < log_lik.cols(); ++i) {
    const auto column = log_lik.col(i);
    const double max = column.maxCoeff();
    if (!std::isfinite(max)) {  // all -inf (zero density) or a +inf / NaN entry: no shift
      out(i) = std::log(column.array().exp().sum()) - log_s;
      continue;
    }
    // log-sum-exp: max + log sum exp(l - max), then divide by S (seed 003 eq. 7, inner term).
    out(i) = max + std::log((column.array() - max).exp().sum()) - log_s;
  }
  return out;
}

double lppd(const Mat& log_lik) { return pointwise_lppd(log_lik).mean(); }

ExpandingWindowLppd::ExpandingWindowLppd(Index num_points)
    : running_(Vec::Constant(num_points, -std::numeric_limits<double>::infinity())) {}

double ExpandingWindowLppd::add(const Vec& pointwise_log_lik) {
  require(pointwise_log_lik.size() == running_.size(), "pointwise_log_lik",
          "one entry per test point (" + std::to_string(running_.size()) + ")");
  // running(i) = log sum_{l' <= l} p(y_i | theta_l'), updated one draw at a time.
  for (Index i = 0; i < running_.size(); ++i) running_(i) = log_add_exp(running_(i), pointwise_log_lik(i));
  ++count_;
  return value();
}

double ExpandingWindowLppd::value() const {
  require(count_ > 0 && running_.size() > 0, "ExpandingWindowLppd", "at least one draw and one test point");
  // seed 003 eq. 8: LPPD_l = (1/n) sum_i log((1/l) sum_{l' <= l} p(y_i | theta_l')).
  return running_.mean() - std::log(static_cast<double>(count_));
}

Vec expanding_window_lppd(const Mat& log_lik) {
  require_shape(log_lik);
  ExpandingWindowLppd running(log_lik.cols());
  Vec out(log_lik.rows());
  for (Index l = 0; l < log_lik.rows(); ++l) out(l) = running.add(log_lik.row(l).transpose());
  return out;
}

bool lppd_settled(const Vec& lppd_by_draw, Index l, Index window, double epsilon) {
  require(window >= 1, "window", "an integer >= 1");
  require(epsilon > 0.0, "epsilon", "> 0");
  require(l >= 1 && l <= lppd_by_draw.size(), "l", "in [1, number of draws]");
  // 1-based l needs LPPD_{l-window} .. LPPD_{l-1}, so l >= window + 1.
  if (l <= window) return false;
  const double window_mean = lppd_by_draw.segment(l - 1 - window, window).mean();
  return std::abs(window_mean - lppd_by_draw(l - 1)) < epsilon;  // seed 003 eq. 9
}

std::optional<Index> lppd_converged_at(const Vec& lppd_by_draw, Index window, double epsilon) {
  require(window >= 1, "window", "an integer >= 1");
  require(epsilon > 0.0, "epsilon", "> 0");
  for (Index l = window + 1; l <= lppd_by_draw.size(); ++l)
    if (lppd_settled(lppd_by_draw, l, window, epsilon)) return l;
  return std::nullopt;
}

}  // namespace uqnn::diagnostics
