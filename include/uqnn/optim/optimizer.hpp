#pragma once
/// @file First-order optimisers and learning-rate schedules (PyTorch semantics, so settings
/// carry over from QUiNN / PyTorch scripts unchanged).
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "uqnn/core/registry.hpp"
#include "uqnn/core/state_archive.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

/// Optimiser settings. weight_decay adds weight_decay * theta to the gradient (L2, as
/// torch.optim.Adam / SGD do); "adamw" decouples it (theta *= 1 - lr weight_decay, torch.optim.AdamW).
struct OptimizerParams {
  std::string name = "adam";  ///< "adam", "adamw" or "sgd"; in TrainParams also "lbfgs" and "auto"
  double learning_rate = 1e-2;
  double weight_decay = 0.0;
  double momentum = 0.0;  ///< sgd only
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  ///< adam and adamw only
  void validate() const;
};

/// Minimises: `step` moves theta against `grad` (the gradient of the loss).
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void step(Vec& theta, const Vec& grad, double learning_rate) = 0;
  /// Saves or restores the optimiser's state (moments, step count, velocity): checkpoints.
  virtual void archive(StateArchive& archive) = 0;
};

/// An optimiser of `--optimizer`. First-order ones step through an Optimizer; lbfgs (full batch) and
/// auto (chosen per objective) are resolved by train().
struct OptimizerKind {
  std::string name = {};
  std::string summary = {};
  std::string reference = {};
  /// The first-order optimiser; null for lbfgs and auto.
  std::function<std::unique_ptr<Optimizer>(const OptimizerParams&, Index dim)> make = nullptr;
};
const Registry<OptimizerKind>& optimizer_kinds();

std::unique_ptr<Optimizer> make_optimizer(const OptimizerParams& params, Index dim);

/// A learning-rate schedule of `--lr-schedule`.
struct ScheduleKind {
  std::string name = {};
  std::string summary = {};
};
const Registry<ScheduleKind>& schedule_kinds();

/// Learning-rate schedule, applied once per epoch.
struct ScheduleParams {
  std::string name = "constant";  ///< constant | step | exponential | plateau
  Index step_every = 1000;        ///< step: multiply by gamma every step_every epochs
  double gamma = 0.5;             ///< step / exponential factor
  double factor = 0.5;            ///< plateau: multiply by factor when the loss stalls
  Index patience = 10;            ///< plateau: epochs without improvement before reducing
  Index cooldown = 0;             ///< plateau: epochs to wait after a reduction
  double min_learning_rate = 0.0;
  void validate() const;
};

class LearningRateSchedule {
 public:
  LearningRateSchedule(ScheduleParams params, double initial);
  /// The learning rate for epoch `epoch` (0-based) given the monitored loss of the previous epoch.
  double next(Index epoch, double monitored_loss);
  double current() const { return rate_; }
  void archive(StateArchive& a) { a.io(rate_), a.io(best_), a.io(bad_epochs_), a.io(cooldown_left_); }

 private:
  ScheduleParams params_;
  double initial_, rate_;
  double best_ = std::numeric_limits<double>::infinity();
  Index bad_epochs_ = 0, cooldown_left_ = 0;
};

}  // namespace uqnn
