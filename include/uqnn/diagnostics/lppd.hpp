#pragma once
/// @file Log pointwise predictive density (LPPD) and its chain-wise expanding-window version.
///
/// Input: pointwise log-likelihoods `log_lik` of shape `[draws, points]`, entry (s, i) =
/// log p(y_i | theta_s, x_i) for posterior draw s and test point i. All sums over draws are done
/// with log-sum-exp, so very negative log-likelihoods do not underflow.
#include <optional>

#include "uqnn/core/types.hpp"

namespace uqnn::diagnostics {

/// LPPD per test point (seed 003 eq. 7 averages these):
/// element i = log((1/S) sum_s exp(log_lik(s, i))) = logsumexp_s log_lik(s, i) - log S.
/// Throws std::invalid_argument when log_lik has no rows or no columns.
/// References: seed 003 App. B.2 eq. 7; Gelman, Hwang & Vehtari (2014), Stat. Comput. 24, eq. 3.
Vec pointwise_lppd(const Mat& log_lik);

/// LPPD averaged over test points (seed 003 eq. 7): mean_i pointwise_lppd(log_lik)(i). Pass the
/// draws of all chains stacked as rows for the multi-chain value, or one chain's rows for K = 1.
/// References: seed 003 App. B.2 eq. 7.
double lppd(const Mat& log_lik);

/// Expanding-window LPPD of one chain (seed 003 eq. 8): element l-1 is LPPD_l, the LPPD of the
/// first l draws (rows) of the chain, for l = 1..S. Costs O(S n) with a running log-sum-exp.
/// References: seed 003 App. B.2 eq. 8.
Vec expanding_window_lppd(const Mat& log_lik);

/// The running form of expanding_window_lppd for one chain (used online by run/LppdMonitor): add()
/// one draw's pointwise log-likelihoods at a time; value() is then LPPD_l of seed 003 eq. 8.
class ExpandingWindowLppd {
 public:
  explicit ExpandingWindowLppd(Index num_points = 0);
  /// Adds draw l+1; `pointwise_log_lik` has one entry per test point. Returns LPPD_{l+1}.
  double add(const Vec& pointwise_log_lik);
  double value() const;
  Index count() const { return count_; }
  /// log sum_{l' <= l} p(y_i | theta_l') per test point.
  const Vec& running_log_sum() const { return running_; }

 private:
  Vec running_;
  Index count_ = 0;
};

/// Whether the stopping rule of seed 003 eq. 9 holds at 1-based time l of `lppd_by_draw`:
/// |(1/window) sum_{l-window <= l' < l} LPPD_l' - LPPD_l| < epsilon (false while l <= window).
bool lppd_settled(const Vec& lppd_by_draw, Index l, Index window, double epsilon);

/// First time point l (1-based, as in seed 003) where the expanding-window LPPD has settled:
/// |(1/window) sum_{l-window <= l' < l} LPPD_l' - LPPD_l| < epsilon (seed 003 eq. 9), or nullopt
/// if it never does. `lppd_by_draw` is expanding_window_lppd's output (element l-1 = LPPD_l).
/// Throws std::invalid_argument unless window >= 1 and epsilon > 0.
/// References: seed 003 App. B.2 eq. 9.
std::optional<Index> lppd_converged_at(const Vec& lppd_by_draw, Index window, double epsilon);

}  // namespace uqnn::diagnostics
