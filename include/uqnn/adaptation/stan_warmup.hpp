#pragma once
/// @file Stan's warmup for the Hamiltonian samplers: dual averaging of the step size during all
/// of warmup, metric estimated over each slow window of the WindowSchedule: diagonal or dense by
/// Welford and regularised (Stan), or from the window's draw/gradient pairs (fisher_metric.hpp:
/// the Fisher diagonal or nutpie's low-rank-plus-diagonal). After each metric update the step size
/// is re-initialised by the heuristic and dual averaging restarts at mu = log(10 eps). At the end
/// eps = exp(x_bar).
///
/// References: Stan `adapt_diag_e_nuts::transition`, `var_adaptation`, `covar_adaptation`;
/// Stan Reference Manual, "Automatic parameter tuning".
#include <optional>

#include "uqnn/adaptation/dual_averaging.hpp"
#include "uqnn/adaptation/fisher_metric.hpp"
#include "uqnn/adaptation/welford.hpp"
#include "uqnn/adaptation/window_adaptation.hpp"
#include "uqnn/mcmc/metric.hpp"

namespace uqnn {

/// Which metric warmup estimates.
enum class MetricAdaptation { None, Diagonal, Dense, FisherDiagonal, LowRank };

struct StanWarmupParams {
  bool adapt_step_size = true;
  MetricAdaptation metric = MetricAdaptation::Diagonal;
  DualAveragingParams dual_averaging;  ///< target_accept 0.8, gamma 0.05, t0 10, kappa 0.75
  WindowAdaptationParams windows;      ///< 75 / 25 doubling / 50
  /// Regularise a window's metric estimate toward 1e-3 times its mean variance instead of Stan's
  /// absolute 1e-3. Stan's target is made for parameters of unit scale; on a posterior whose
  /// variances are 1e-6 (regression weights on inputs of size 100) it inflates them tenfold. NUTS
  /// absorbs that in longer trajectories; MALA's one step cannot (MalaConfig sets this).
  bool relative_regularization = false;
  LowRankMetricParams low_rank;  ///< for MetricAdaptation::LowRank
  void validate() const;
};

class StanWarmup {
 public:
  explicit StanWarmup(StanWarmupParams params = {});
  /// Starts warmup of `num_warmup` iterations with the current step size and metric dimension.
  void begin(long num_warmup, double step_size, Index dim);
  /// Learns from warmup iteration `iteration` (0-based) with its draw and the gradient of log p
  /// there: updates `step_size` by dual averaging and, at the end of a slow window, replaces
  /// `metric`. Returns true when the metric changed (the caller then re-initialises the step size
  /// and calls restart_step_size).
  bool learn(long iteration, double accept_prob, const Vec& position, const Vec& gradient, double& step_size,
             Metric& metric);
  /// Restarts dual averaging around mu = log(10 step_size).
  void restart_step_size(double step_size);
  /// The step size to use after warmup (exp(x_bar)), or `current` when step-size adaptation is off
  /// or no iteration was learnt.
  double final_step_size(double current) const;
  const WindowSchedule& schedule() const { return *schedule_; }
  const StanWarmupParams& params() const { return params_; }
  /// The adaptation state; the schedule is not in it (begin() makes it from the warmup length).
  void archive(StateArchive& a) {
    a.io(averaging_), a.io(variance_), a.io(covariance_), a.io(window_draws_), a.io(window_grads_), a.io(window_count_);
  }

 private:
  StanWarmupParams params_;
  DualAveraging averaging_;
  std::optional<WindowSchedule> schedule_;
  WelfordVariance variance_;
  WelfordCovariance covariance_;
  /// The window's draws and gradients, one column each (the Fisher metrics need the pairs).
  Mat window_draws_, window_grads_;
  long window_count_ = 0;
};

}  // namespace uqnn
