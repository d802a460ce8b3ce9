#pragma once
/// @file Nesterov dual averaging of log(step size) toward a target mean acceptance statistic
/// (Hoffman & Gelman 2014, Algorithm 6; Stan's stepsize_adaptation):
///   s_bar <- (1 - 1/(t + t0)) s_bar + (delta - a_t) / (t + t0)
///   x_t = mu - sqrt(t) / gamma s_bar,  x_bar <- t^-kappa x_t + (1 - t^-kappa) x_bar,
/// the step size is exp(x_t) during adaptation and exp(x_bar) when it completes.
/// References: Hoffman & Gelman (2014), JMLR 15, sec. 3.2; Nesterov (2009); seed 004; Stan
/// `stepsize_adaptation.hpp`.
#include "uqnn/core/state_archive.hpp"

namespace uqnn {

struct DualAveragingParams {
  double target_accept = 0.8;  ///< delta in (0, 1)
  double gamma = 0.05;         ///< > 0: regularisation toward mu
  double t0 = 10.0;            ///< >= 0: damps early iterations
  double kappa = 0.75;         ///< in (0.5, 1]: decay of the x_bar weights
  void validate() const;
};

class DualAveraging {
 public:
  explicit DualAveraging(DualAveragingParams params = {});
  /// Restarts the averages around mu = log(10 initial_step_size) (Stan's set_mu + restart).
  void restart(double initial_step_size);
  /// Learns from one acceptance statistic (values above 1 count as 1); returns the next step size exp(x_t).
  double update(double accept_prob);
  /// The averaged step size exp(x_bar) to use after adaptation.
  double final_step_size() const;
  long iterations() const { return counter_; }
  const DualAveragingParams& params() const { return params_; }
  void archive(StateArchive& a) { a.io(counter_), a.io(s_bar_), a.io(x_bar_), a.io(mu_); }

 private:
  DualAveragingParams params_;
  long counter_ = 0;
  double s_bar_ = 0.0, x_bar_ = 0.0, mu_ = 0.0;
};

}  // namespace uqnn
