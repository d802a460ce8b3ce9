#pragma once
/// @file Online function-space convergence monitor of seed 003 App. B.2: while the chains run, the
/// chain-wise expanding-window LPPD (eq. 8) on a held-out set, the stopping rule of eq. 9 with the
/// option to end a converged chain early, and per-draw function-space statistics (the log
/// pointwise likelihood LPL^(k,s) of App. B.2 and the RMSE of each draw) for R-hat_LPL / R-hat_RMSE.
///
/// Threading: on_iteration touches only the slot of its chain (allocated in on_begin), so chains
/// never share state and the traces do not depend on the thread count.
#include <memory>
#include <optional>
#include <vector>

#include "uqnn/diagnostics/lppd.hpp"
#include "uqnn/prob/posterior.hpp"
#include "uqnn/run/observer.hpp"

namespace uqnn {

struct LppdMonitorParams {
  Index window = 100;           ///< varpi of seed 003 eq. 9, >= 1
  double epsilon = 1e-3;        ///< epsilon of seed 003 eq. 9, > 0
  bool stop_converged = false;  ///< end a chain once eq. 9 holds (and it has min_draws draws)
  Index min_draws = 0;          ///< never stop a chain before this many kept draws, >= 0
  void validate() const;
};

class LppdMonitor : public Observer {
 public:
  /// `inputs` [input_dim, n], `targets` [target_dim, n]: the held-out set (same units as the posterior).
  LppdMonitor(std::shared_ptr<const Posterior> posterior, Mat inputs, Mat targets, LppdMonitorParams params = {});

  void on_begin(const RunConfig& config) override;
  ObserverAction on_iteration(const IterationEvent& event) override;
  bool replays_gathered_chains() const override { return true; }

  int num_chains() const { return static_cast<int>(chains_.size()); }
  /// Chain c's LPPD_l for l = 1..(its kept draws) (seed 003 eq. 8).
  const std::vector<double>& lppd_trace(int chain) const { return slot(chain).trace; }
  /// First l where eq. 9 held for chain c (1-based), or nullopt.
  std::optional<Index> converged_at(int chain) const { return slot(chain).converged_at; }
  /// Whether the monitor ended chain c early (stop_converged).
  bool stopped(int chain) const { return slot(chain).stopped; }
  /// LPL^(k,s) = log((1/n) sum_i p(y_i | theta_s)) per kept draw of chain c (seed 003 App. B.2).
  const std::vector<double>& log_pointwise_likelihood(int chain) const { return slot(chain).lpl; }
  /// RMSE of each kept draw's predictive mean on the held-out set.
  const std::vector<double>& draw_rmse(int chain) const { return slot(chain).rmse; }
  /// The chain's posterior predictive mean on the held-out set, [target_dim, n] (mean over its draws).
  Mat chain_mean_prediction(int chain) const;
  /// RMSE of chain_mean_prediction(chain) (the "dying sampler" check of seed 003 sec. 4 uses it).
  double chain_rmse(int chain) const;
  const Mat& targets() const { return targets_; }

 private:
  struct Chain {
    diagnostics::ExpandingWindowLppd running{0};
    std::vector<double> trace, lpl, rmse;
    Mat prediction_sum;
    std::optional<Index> converged_at;
    bool stopped = false;
  };
  const Chain& slot(int chain) const;

  std::shared_ptr<const Posterior> posterior_;
  Mat inputs_, targets_;
  LppdMonitorParams params_;
  std::vector<Chain> chains_;
};

}  // namespace uqnn
