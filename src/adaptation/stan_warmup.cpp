#include "uqnn/adaptation/stan_warmup.hpp"

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

void StanWarmupParams::validate() const {
  dual_averaging.validate();
  windows.validate();
  low_rank.validate();
}

namespace {

bool uses_gradients(MetricAdaptation metric) {
  return metric == MetricAdaptation::FisherDiagonal || metric == MetricAdaptation::LowRank;
}

}  // namespace

StanWarmup::StanWarmup(StanWarmupParams params) : params_(params), averaging_(params.dual_averaging) {
  params_.validate();
}

void StanWarmup::begin(long num_warmup, double step_size, Index dim) {
  schedule_.emplace(num_warmup, params_.windows);
  averaging_.restart(step_size);
  variance_.reset(params_.metric == MetricAdaptation::Diagonal ? dim : 0);
  covariance_.reset(params_.metric == MetricAdaptation::Dense ? dim : 0);
  window_draws_.resize(uses_gradients(params_.metric) ? dim : 0, 0);
  window_grads_.resize(window_draws_.rows(), 0);
  window_count_ = 0;
}

void StanWarmup::restart_step_size(double step_size) { averaging_.restart(step_size); }

bool StanWarmup::learn(long iteration, double accept_prob, const Vec& position, const Vec& gradient,
                       double& step_size, Metric& metric) {
  if (params_.adapt_step_size) step_size = averaging_.update(accept_prob);
  if (params_.metric == MetricAdaptation::None || !schedule_) return false;
  if (schedule_->in_window(iteration)) {
    if (params_.metric == MetricAdaptation::Diagonal) {
      variance_.add(position);
    } else if (params_.metric == MetricAdaptation::Dense) {
      covariance_.add(position);
    } else {
      if (window_count_ == window_draws_.cols()) {  // grow by doubling: windows double too
        const Index columns = std::max<Index>(16, 2 * window_draws_.cols());
        window_draws_.conservativeResize(Eigen::NoChange, columns);
        window_grads_.conservativeResize(Eigen::NoChange, columns);
      }
      window_draws_.col(window_count_) = position;
      window_grads_.col(window_count_) = gradient;
      ++window_count_;
    }
  }
  if (!schedule_->ends_window(iteration)) return false;
  if (uses_gradients(params_.metric)) {
    const long n = window_count_;
    window_count_ = 0;
    if (n < 2) return false;
    const auto draws = window_draws_.leftCols(n), grads = window_grads_.leftCols(n);
    metric = params_.metric == MetricAdaptation::LowRank ? estimate_low_rank_metric(draws, grads, params_.low_rank)
                                                          : estimate_fisher_diagonal(draws, grads);
    return true;
  }
  // Stan's regularisation target, or 1e-3 of the window's mean variance (Stan's when the chain did
  // not move, so that it can).
  const auto target = [&](double mean_variance) {
    return params_.relative_regularization && mean_variance > 0 && std::isfinite(mean_variance) ? 1e-3 * mean_variance : 1e-3;
  };
  if (params_.metric == MetricAdaptation::Diagonal) {
    const Vec variance = variance_.variance();
    metric = make_diagonal_metric(regularize_variance(variance, variance_.count(), target(variance.mean())));
    variance_.restart();
  } else {
    const Mat covariance = covariance_.covariance();
    Mat cov = regularize_covariance(covariance, covariance_.count(), target(covariance.diagonal().mean()));
    cov = 0.5 * (cov + cov.transpose()).eval();
    metric = make_dense_metric(std::move(cov));
    covariance_.restart();
  }
  return true;
}

double StanWarmup::final_step_size(double current) const {
  if (!params_.adapt_step_size || averaging_.iterations() == 0) return current;
  return averaging_.final_step_size();
}

}  // namespace uqnn
