#include "uqnn/optim/trainer.hpp"

#include <cmath>
#include <limits>

#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"

namespace uqnn {

void TrainParams::validate() const {
  optimizer.validate();
  schedule.validate();
  require(epochs >= 1, "epochs", ">= 1");
  require(batch_size >= 0, "batch_size", ">= 0 (0 = full batch)");
  require(early_stopping_patience >= 0, "early_stopping_patience", ">= 0 (0 = off)");
  require(validate_every >= 1, "validate_every", ">= 1");
}

TrainResult train(const Objective& objective, Vec theta, const TrainParams& params, Rng& rng,
                  const std::function<double(const Vec&)>& validation_loss, const EpochCallback& on_epoch) {
  params.validate();
  const Index n = objective.num_data();
  const Index batch = (params.batch_size == 0 || params.batch_size > n) ? n : params.batch_size;
  auto optimizer = make_optimizer(params.optimizer, theta.size());
  LearningRateSchedule schedule(params.schedule, params.optimizer.learning_rate);
  const double nan = std::numeric_limits<double>::quiet_NaN();

  TrainResult result;
  result.best_theta = theta;
  result.best_validation_loss = std::numeric_limits<double>::infinity();
  Index since_best = 0;
  double monitored = nan;
  Vec grad(theta.size());
  for (Index epoch = 0; epoch < params.epochs; ++epoch) {
    const double lr = schedule.next(epoch, monitored);
    // Batches without replacement from one permutation per epoch; a short last batch is kept.
    const IndexVec order = batch == n ? IndexVec() : rng.permutation(n);
    double loss_sum = 0;
    Index seen = 0;
    for (Index start = 0; start < n; start += batch) {
      IndexVec indices;
      const Index stop = std::min(n, start + batch);
      indices.reserve(static_cast<std::size_t>(stop - start));
      for (Index i = start; i < stop; ++i) indices.push_back(order.empty() ? i : order[static_cast<std::size_t>(i)]);
      const double loss = objective.loss_and_grad(theta, indices, grad);
      if (!std::isfinite(loss) || !grad.allFinite())
        throw std::runtime_error("training diverged (non-finite loss or gradient) at epoch " + std::to_string(epoch) +
                                 ": lower the learning rate");
      optimizer->step(theta, grad, lr);
      loss_sum += loss * static_cast<double>(stop - start);
      seen += stop - start;
    }
    const double train_loss = loss_sum / static_cast<double>(seen);
    double val = nan;
    const bool evaluate = (epoch + 1) % params.validate_every == 0 || epoch + 1 == params.epochs;
    if (evaluate) {
      val = validation_loss ? validation_loss(theta) : train_loss;
      monitored = val;
      if (val < result.best_validation_loss) {
        result.best_validation_loss = val;
        result.best_theta = theta;
        result.best_epoch = epoch;
        since_best = 0;
      } else {
        since_best += params.validate_every;
      }
    }
    result.history.epoch.push_back(epoch);
    result.history.train_loss.push_back(train_loss);
    result.history.validation_loss.push_back(val);
    result.history.learning_rate.push_back(lr);
    if (on_epoch && !on_epoch(epoch, train_loss, val)) break;
    if (stop_requested()) {  // SIGINT / SIGTERM / SIGHUP: keep what this epoch reached
      result.interrupted = true;
      break;
    }
    if (params.early_stopping_patience > 0 && since_best >= params.early_stopping_patience) {
      result.stopped_early = true;
      break;
    }
  }
  result.last_theta = theta;
  if (result.best_epoch < 0) result.best_theta = theta;
  return result;
}

}  // namespace uqnn
