#pragma once
/// @file The training loop every point estimate comes from (MAP, ensemble members, pre-training).
#include <functional>
#include <vector>

#include "uqnn/core/rng.hpp"
#include "uqnn/optim/epoch_checkpoint.hpp"
#include "uqnn/optim/objective.hpp"
#include "uqnn/optim/optimizer.hpp"

namespace uqnn {

struct TrainParams {
  /// "auto" (the default) is full-batch L-BFGS where the objective asks for its exact minimiser
  /// (Objective::wants_exact_minimum: a posterior mode) and the batches are full with no early
  /// stopping; Adam otherwise.
  OptimizerParams optimizer{"auto"};
  ScheduleParams schedule;
  Index epochs = 2000;
  Index batch_size = 0;          ///< 0 = full batch
  Index early_stopping_patience = 0;  ///< stop after this many epochs without validation improvement; 0 = never
  Index validate_every = 1;      ///< epochs between validation evaluations
  /// lbfgs: converged when the full objective's gradient norm is at most this (the objective is a
  /// mean per data point, so the bound does not grow with N).
  double gradient_tolerance = 1e-8;
  /// First-order optimisers: converged when the mean training loss of the last `convergence_window`
  /// epochs differs from that of the window before by at most convergence_tolerance * |loss|
  /// (0 = not judged). With stop_when_converged training stops there; by default every epoch runs
  /// and the rule is applied at the end, because a network's loss can be flat for hundreds of epochs
  /// before it falls again (a tanh net on the sine data stopped there under-trained).
  Index convergence_window = 100;
  double convergence_tolerance = 1e-4;
  bool stop_when_converged = false;
  /// The loop's state after an epoch (Adam, SGD) or at an iteration's start (L-BFGS), every so many
  /// epochs or evaluations (optim/epoch_checkpoint.hpp).
  EpochCheckpoint checkpoint;
  void validate() const;
};

struct TrainHistory {
  std::vector<Index> epoch;
  std::vector<double> train_loss;       ///< mean minibatch loss over the epoch
  std::vector<double> validation_loss;  ///< NaN where not evaluated
  std::vector<double> learning_rate;
  void archive(StateArchive& a) { a.io(epoch), a.io(train_loss), a.io(validation_loss), a.io(learning_rate); }
};

/// Whether an optimiser reached its stopping rule, for metrics.json and the not_converged warning.
struct ConvergenceReport {
  std::string optimizer;       ///< the one that ran ("auto" resolved)
  bool converged = false;      ///< lbfgs: gradient norm <= gradient_tolerance; adam/sgd: the window monitor
  Index iterations = 0;        ///< lbfgs: objective evaluations (which `epochs` caps); adam/sgd: epochs
  double gradient_norm = 0.0;  ///< norm of the full objective's gradient at best_theta
  std::string stop_reason;     ///< why the optimiser stopped, in words
  std::string advice;          ///< what to change when it did not converge; empty: the optimiser's usual advice
  void archive(StateArchive& a) { a.io(optimizer), a.io(converged), a.io(iterations), a.io(gradient_norm), a.io(stop_reason), a.io(advice); }
};

struct TrainResult {
  Vec best_theta;   ///< the best-validation snapshot (the last iterate if no validation)
  Vec last_theta;
  Index best_epoch = -1;
  double best_validation_loss = 0.0;
  bool stopped_early = false;
  bool interrupted = false;  ///< a stop signal ended the epochs early (core/stop_signal.hpp)
  Index resumed_at_epoch = 0;  ///< the epoch a checkpoint restored (0: started afresh)
  ConvergenceReport convergence;
  TrainHistory history;
};

/// Called after each epoch with (epoch, train loss, validation loss); return false to stop.
using EpochCallback = std::function<bool(Index, double, double)>;

/// The optimiser train() runs for `params` on `objective` ("auto" resolved).
std::string chosen_optimizer(const Objective& objective, const TrainParams& params);

/// Minimises `objective` from `theta0` with minibatches drawn without replacement each epoch from
/// `rng`. `validation_loss` (optional) selects the best snapshot and drives early stopping and
/// the plateau schedule; without it the training loss does.
TrainResult train(const Objective& objective, Vec theta0, const TrainParams& params, Rng& rng,
                  const std::function<double(const Vec&)>& validation_loss = {}, const EpochCallback& on_epoch = {});

}  // namespace uqnn
