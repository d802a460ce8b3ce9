#pragma once
/// @file The training loop every point estimate comes from (MAP, ensemble members, pre-training).
#include <functional>
#include <vector>

#include "uqnn/core/rng.hpp"
#include "uqnn/optim/objective.hpp"
#include "uqnn/optim/optimizer.hpp"

namespace uqnn {

struct TrainParams {
  OptimizerParams optimizer;
  ScheduleParams schedule;
  Index epochs = 2000;
  Index batch_size = 0;          ///< 0 = full batch
  Index early_stopping_patience = 0;  ///< stop after this many epochs without validation improvement; 0 = never
  Index validate_every = 1;      ///< epochs between validation evaluations
  void validate() const;
};

struct TrainHistory {
  std::vector<Index> epoch;
  std::vector<double> train_loss;       ///< mean minibatch loss over the epoch
  std::vector<double> validation_loss;  ///< NaN where not evaluated
  std::vector<double> learning_rate;
};

struct TrainResult {
  Vec best_theta;   ///< the best-validation snapshot (the last iterate if no validation)
  Vec last_theta;
  Index best_epoch = -1;
  double best_validation_loss = 0.0;
  bool stopped_early = false;
  bool interrupted = false;  ///< a stop signal ended the epochs early (core/stop_signal.hpp)
  TrainHistory history;
};

/// Called after each epoch with (epoch, train loss, validation loss); return false to stop.
using EpochCallback = std::function<bool(Index, double, double)>;

/// Minimises `objective` from `theta0` with minibatches drawn without replacement each epoch from
/// `rng`. `validation_loss` (optional) selects the best snapshot and drives early stopping and
/// the plateau schedule; without it the training loss does.
TrainResult train(const Objective& objective, Vec theta0, const TrainParams& params, Rng& rng,
                  const std::function<double(const Vec&)>& validation_loss = {}, const EpochCallback& on_epoch = {});

}  // namespace uqnn
