#include "uqnn/hybrid/lppd_monitor.hpp"

#include <fmt/format.h>

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {

void LppdMonitorParams::validate() const {
  require(window >= 1, "lppd window", "an integer >= 1");
  require(epsilon > 0.0, "lppd epsilon", "> 0");
  require(min_draws >= 0, "lppd min_draws", ">= 0");
}

LppdMonitor::LppdMonitor(std::shared_ptr<const Posterior> posterior, Mat inputs, Mat targets, LppdMonitorParams params)
    : posterior_(std::move(posterior)), inputs_(std::move(inputs)), targets_(std::move(targets)), params_(params) {
  params_.validate();
  require(posterior_ != nullptr, "posterior", "non-null");
  require(inputs_.cols() > 0 && inputs_.cols() == targets_.cols(), "held-out set",
          fmt::format("as many targets as inputs and at least one point ({} inputs, {} targets)", inputs_.cols(),
                      targets_.cols()));
  require(inputs_.rows() == posterior_->model().input_dim(), "held-out inputs",
          fmt::format("{} rows (the model's input dimension)", posterior_->model().input_dim()));
}

void LppdMonitor::on_begin(const RunConfig& config) {
  chains_.assign(static_cast<std::size_t>(config.num_chains), Chain{});
  for (auto& c : chains_) {
    c.running = diagnostics::ExpandingWindowLppd(inputs_.cols());
    c.prediction_sum = Mat::Zero(targets_.rows(), targets_.cols());
  }
}

const LppdMonitor::Chain& LppdMonitor::slot(int chain) const {
  require(chain >= 0 && chain < num_chains(), "chain", fmt::format("in [0, {})", num_chains()));
  return chains_[static_cast<std::size_t>(chain)];
}

ObserverAction LppdMonitor::on_iteration(const IterationEvent& event) {
  if (!event.kept) return ObserverAction::Continue;
  Chain& c = chains_.at(static_cast<std::size_t>(event.chain));
  const Vec& theta = *event.position;
  const Mat outputs = posterior_->model().forward(posterior_->network_params(theta), inputs_);
  const Vec extra = posterior_->extra_params(theta);
  const Vec log_lik = posterior_->likelihood().pointwise_log_likelihood(outputs, targets_, extra);
  const Mat mean = posterior_->likelihood().mean(outputs);
  c.prediction_sum += mean;
  c.rmse.push_back(std::sqrt((mean - targets_).squaredNorm() / static_cast<double>(targets_.size())));
  // LPL^(k,s) = log mean_i p(y_i | theta_s) with a log-sum-exp (seed 003 App. B.2).
  const double max = log_lik.maxCoeff();
  c.lpl.push_back(std::isfinite(max) ? max + std::log((log_lik.array() - max).exp().mean()) : max);
  c.trace.push_back(c.running.add(log_lik));  // seed 003 eq. 8
  const auto l = static_cast<Index>(c.trace.size());
  if (!c.converged_at) {
    const Eigen::Map<const Vec> trace(c.trace.data(), l);
    if (diagnostics::lppd_settled(trace, l, params_.window, params_.epsilon)) c.converged_at = l;  // eq. 9
  }
  if (params_.stop_converged && c.converged_at && l >= params_.min_draws) {
    c.stopped = true;
    return ObserverAction::StopChain;
  }
  return ObserverAction::Continue;
}

Mat LppdMonitor::chain_mean_prediction(int chain) const {
  const Chain& c = slot(chain);
  require(!c.trace.empty(), "chain_mean_prediction", fmt::format("chain {} with at least one kept draw", chain));
  return c.prediction_sum / static_cast<double>(c.trace.size());
}

double LppdMonitor::chain_rmse(int chain) const {
  return std::sqrt((chain_mean_prediction(chain) - targets_).squaredNorm() / static_cast<double>(targets_.size()));
}

}  // namespace uqnn
