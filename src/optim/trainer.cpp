#include "uqnn/optim/trainer.hpp"

#include <LBFGS.h>

#include <fmt/format.h>

#include <cmath>
#include <exception>
#include <limits>
#include <type_traits>

#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/optim/epoch_loop.hpp"

namespace uqnn {

void TrainParams::validate() const {
  optimizer.validate();
  schedule.validate();
  require(epochs >= 1, "epochs", ">= 1");
  require(batch_size >= 0, "batch_size", ">= 0 (0 = full batch)");
  require(early_stopping_patience >= 0, "early_stopping_patience", ">= 0 (0 = off)");
  require(validate_every >= 1, "validate_every", ">= 1");
  require(gradient_tolerance > 0, "gradient_tolerance", "> 0");
  require(convergence_window >= 0, "convergence_window", ">= 0 (0 = off)");
  require(convergence_tolerance > 0, "convergence_tolerance", "> 0");
}

std::string chosen_optimizer(const Objective& objective, const TrainParams& params) {
  if (params.optimizer.name != "auto") return params.optimizer.name;
  const bool full_batch = params.batch_size == 0 || params.batch_size >= objective.num_data();
  return objective.wants_exact_minimum() && full_batch && params.early_stopping_patience == 0 ? "lbfgs" : "adam";
}

namespace {

IndexVec all_rows(Index n) {
  IndexVec rows(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = i;
  return rows;
}

/// The full objective plus the optimiser's L2 term, as L-BFGS minimises it.
struct FullObjective {
  const Objective& objective;
  IndexVec rows;
  double weight_decay;
  double operator()(const Vec& theta, Vec& grad) const {
    double loss = objective.loss_and_grad(theta, rows, grad);
    if (weight_decay > 0) {
      loss += 0.5 * weight_decay * theta.squaredNorm();
      grad += weight_decay * theta;
    }
    return loss;
  }
};

struct StopTraining {};  // thrown out of L-BFGS's evaluations by a stop signal or the callback
struct Stagnated {};     // thrown when the objective stopped falling by more than its rounding
struct EvaluationLimit {};  // thrown at the --epochs-th evaluation
struct EvaluationFailed {};  // thrown when the objective, validation loss or callback threw (rethrown after the solver)

/// An improvement of the objective by less than this relative amount is rounding, not progress
/// (Stan's tol_rel_obj default: 1e4 machine epsilons).
constexpr double kRelativeRounding = 1e4 * std::numeric_limits<double>::epsilon();
/// Evaluations without progress after which L-BFGS has stagnated (LBFGSpp's line-search budget).
constexpr Index kStagnantEvaluations = 20;

/// What L-BFGS carries from one iteration to the next, with the trainer's bookkeeping: all that a
/// checkpoint keeps (the curvature pairs aside).
struct LbfgsState {
  Vec x, grad, direction;  ///< the iterate, its gradient, the search direction
  double fx = 0.0;         ///< the loss at x
  double step = 0.0;       ///< the line search's first trial step
  Index iteration = 0;     ///< k: 1 after the first evaluation
  Vec best_point;          ///< the best point evaluated, and its loss
  double best_loss = std::numeric_limits<double>::infinity();
  Index evaluations = 0;
  Index last_progress = 0;  ///< the evaluation at which the loss last fell by more than its rounding
  double progress_reference = std::numeric_limits<double>::infinity();
  Index history_size = 0;   ///< history entries up to here
  void archive(StateArchive& a) {
    a.io(x), a.io(grad), a.io(direction), a.io(fx), a.io(step), a.io(iteration);
    a.io(best_point), a.io(best_loss), a.io(evaluations), a.io(last_progress), a.io(progress_reference), a.io(history_size);
  }
};

/// The first `size` entries of `history`.
TrainHistory history_head(const TrainHistory& history, Index size) {
  const auto head = [size](const auto& v) { return std::decay_t<decltype(v)>(v.begin(), v.begin() + size); };
  return {head(history.epoch), head(history.train_loss), head(history.validation_loss), head(history.learning_rate)};
}

/// Full-batch L-BFGS (Nocedal & Wright 2006, alg. 7.5) with a backtracking line search to the
/// strong Wolfe conditions, which keep the curvature pairs positive; stopped when the gradient norm
/// of the full objective is at most `gradient_tolerance`, when the objective stops falling beyond its
/// rounding, or after `epochs` evaluations. Every evaluation is a history entry and an "epoch" to the
/// callback, so the history, the progress bar and the cap all count the line search's work.
///
/// The iteration is LBFGSpp's LBFGSSolver::minimize (Debian's liblbfgspp-dev; `past` = 0), written out
/// here around its line search and its two-loop recursion (BFGSMat) so that the state between
/// iterations can be checkpointed: the solver keeps it private. The last m curvature pairs are kept
/// beside BFGSMat, which a resumed run rebuilds by adding them again in order (the same s, y, s'y and
/// theta, so bitwise the same directions). A stop signal (which ends an evaluation inside a line
/// search) saves the state at the start of that iteration; the resumed run repeats its evaluations.
///
/// Its steps: evaluate (one objective evaluation with the run's bookkeeping), restore (a
/// checkpoint), iterate (the solver's loop, ended by the reason it stopped) and finish (the point
/// kept and the convergence report).
class LbfgsRun {
 public:
  LbfgsRun(const Objective& objective, const Vec& theta, const TrainParams& params,
           const std::function<double(const Vec&)>& validation_loss, const EpochCallback& on_epoch)
      : full_{objective, all_rows(objective.num_data()), params.optimizer.weight_decay},
        params_(params),
        validation_loss_(validation_loss),
        on_epoch_(on_epoch),
        checkpoint_(params.checkpoint, [this](StateArchive& a) { archive(a); }) {
    result_.best_validation_loss = std::numeric_limits<double>::infinity();
    now_.x = theta;
    now_.best_point = theta;
    now_.grad.resize(theta.size());
    lbfgs_.epsilon = params.gradient_tolerance;
    lbfgs_.epsilon_rel = 0.0;
    lbfgs_.max_iterations = static_cast<int>(params.epochs);
    lbfgs_.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;
    lbfgs_.check_param();
    curvature_.reset(static_cast<int>(theta.size()), lbfgs_.m);
  }
  LbfgsRun(const LbfgsRun&) = delete;  // the checkpoint's state function points at this object
  LbfgsRun& operator=(const LbfgsRun&) = delete;

  TrainResult run() {
    const bool resumed = restore();
    return finish(iterate(resumed));
  }

 private:
  /// Why the solver's loop ended.
  enum class End { SolverReturned, EvaluationLimit, AtPrecision, Stopped };

  /// One evaluation of the full objective at x with the run's bookkeeping: the best point, the
  /// progress monitor, the history entry and the callback. Non-finite values are +inf to the line
  /// search (it then shortens the step); a stop signal or the callback ends the run by throwing
  /// StopTraining, keeping the best point evaluated.
  double evaluate(const Vec& x, Vec& grad) {
    double loss = full_(x, grad);
    if (!std::isfinite(loss) || !grad.allFinite()) {
      grad.setZero();
      loss = std::numeric_limits<double>::infinity();
    }
    if (loss < now_.best_loss) {
      now_.best_loss = loss;
      now_.best_point = x;
    }
    if (loss < now_.progress_reference - kRelativeRounding * std::max(1.0, std::abs(loss))) {
      now_.progress_reference = loss;
      now_.last_progress = now_.evaluations;
    }
    const double val = validation_loss_ ? validation_loss_(x) : loss;
    TrainHistory& history = result_.history;
    history.epoch.push_back(now_.evaluations);
    history.train_loss.push_back(loss);
    history.validation_loss.push_back(val);
    history.learning_rate.push_back(std::numeric_limits<double>::quiet_NaN());
    ++now_.evaluations;
    if ((on_epoch_ && !on_epoch_(now_.evaluations - 1, loss, val)) || stop_requested()) {
      result_.interrupted = stop_requested();
      throw StopTraining{};
    }
    if (now_.evaluations - now_.last_progress > kStagnantEvaluations) throw Stagnated{};
    if (now_.evaluations >= params_.epochs) throw EvaluationLimit{};
    return loss;
  }

  /// evaluate() as the line search calls it: the line search's own failures are std::runtime_error
  /// and std::logic_error; an exception of the objective, the validation loss or the callback is
  /// carried past the solver and rethrown as it was.
  double guarded_evaluate(const Vec& x, Vec& grad) {
    try {
      return evaluate(x, grad);
    } catch (const StopTraining&) {
      throw;
    } catch (const Stagnated&) {
      throw;
    } catch (const EvaluationLimit&) {
      throw;
    } catch (...) {
      evaluation_error_ = std::current_exception();
      throw EvaluationFailed{};
    }
  }

  void add_pair(Vec s, Vec y) {
    curvature_.add_correction(s, y);
    pairs_s_.push_back(std::move(s));
    pairs_y_.push_back(std::move(y));
    if (static_cast<int>(pairs_s_.size()) > lbfgs_.m) {
      pairs_s_.erase(pairs_s_.begin());
      pairs_y_.erase(pairs_y_.begin());
    }
  }

  /// The checkpoint: the state at the start of the current iteration, the curvature pairs and the
  /// history up to there.
  void archive(StateArchive& a) {
    a.section("uqnn training checkpoint 1 (lbfgs)");
    a.io(boundary_), a.io(pairs_s_), a.io(pairs_y_);
    TrainHistory history = a.saving() ? history_head(result_.history, boundary_.history_size) : TrainHistory{};
    a.io(history);
    if (a.loading()) result_.history = std::move(history);
  }

  /// From a checkpoint when there is one to resume: the iteration's state and BFGSMat rebuilt
  /// from the pairs.
  bool restore() {
    if (!checkpoint_.restore()) return false;
    now_ = boundary_;
    have_boundary_ = true;
    const std::vector<Vec> s = pairs_s_, y = pairs_y_;
    pairs_s_.clear(), pairs_y_.clear();
    for (std::size_t i = 0; i < s.size(); ++i) add_pair(s[i], y[i]);
    result_.resumed_at_epoch = now_.evaluations;
    return true;
  }

  /// An iteration starts here: what a checkpoint keeps, saved when due.
  void at_boundary() {
    const Index before = boundary_.evaluations;
    boundary_ = now_;
    boundary_.history_size = static_cast<Index>(result_.history.epoch.size());
    have_boundary_ = true;
    checkpoint_.after_progress(before, now_.evaluations);
  }

  /// LBFGSpp's minimize loop from the first evaluation (or the restored iteration) to its end.
  End iterate(bool resumed) {
    const auto f = [this](const Vec& x, Vec& grad) { return guarded_evaluate(x, grad); };
    try {
      if (!resumed) {
        now_.fx = f(now_.x, now_.grad);
        now_.direction = -now_.grad;
        now_.step = 1.0 / now_.direction.norm();
        now_.iteration = 1;
        if (now_.grad.norm() > lbfgs_.epsilon) at_boundary();
      }
      while (now_.grad.norm() > lbfgs_.epsilon) {
        const Vec x_before = now_.x, grad_before = now_.grad;
        LBFGSpp::LineSearchBacktracking<double>::LineSearch(f, now_.fx, now_.x, now_.grad, now_.step, now_.direction, x_before, lbfgs_);
        if (now_.grad.norm() <= lbfgs_.epsilon || now_.iteration >= lbfgs_.max_iterations) break;
        add_pair(now_.x - x_before, now_.grad - grad_before);
        curvature_.apply_Hv(now_.grad, -1.0, now_.direction);
        now_.step = 1.0;
        ++now_.iteration;
        at_boundary();
      }
      return End::SolverReturned;
    } catch (const EvaluationLimit&) {
      result_.convergence.stop_reason = "evaluation limit";
      return End::EvaluationLimit;
    } catch (const Stagnated&) {
      result_.convergence.stop_reason = fmt::format("no decrease beyond the objective's rounding in {} evaluations",
                                                    kStagnantEvaluations);
      return End::AtPrecision;
    } catch (const EvaluationFailed&) {
      std::rethrow_exception(evaluation_error_);
    } catch (const StopTraining&) {
      result_.convergence.stop_reason = result_.interrupted ? "stop signal" : "stopped by the callback";
      if (result_.interrupted && have_boundary_) checkpoint_.save();
      return End::Stopped;
    } catch (const std::runtime_error& e) {  // the line search found no acceptable step
      result_.convergence.stop_reason = std::string("line search: ") + e.what();
      return End::AtPrecision;
    } catch (const std::logic_error& e) {  // a direction uphill: the curvature pairs went wrong
      result_.convergence.stop_reason = std::string("line search: ") + e.what();
      return End::AtPrecision;
    }
  }

  /// The point kept (the best evaluated, or the solver's last where it ties up to rounding) and
  /// the convergence report.
  TrainResult finish(End end) {
    const Vec& x = now_.x;
    Vec& best_point = now_.best_point;
    const double best_loss = now_.best_loss;
    if (!std::isfinite(best_loss)) throw DivergenceError("training diverged (no finite loss from the start)");
    // The solver's last point where its loss is the best one up to rounding: there the best loss
    // is decided by rounding error, and the solver's point is the one its gradient test judged.
    Vec grad(x.size());
    if (x.allFinite()) {
      const double last_loss = full_(x, grad);
      if (std::isfinite(last_loss) && last_loss <= best_loss + kRelativeRounding * std::max(1.0, std::abs(best_loss)))
        best_point = x;
    }
    full_(best_point, grad);
    ConvergenceReport& report = result_.convergence;
    report.optimizer = "lbfgs";
    report.iterations = now_.evaluations;
    report.gradient_norm = grad.norm();
    if (report.gradient_norm <= params_.gradient_tolerance) {
      report.converged = true;
      report.stop_reason = fmt::format("gradient norm <= {:g}", params_.gradient_tolerance);
    } else if (end == End::AtPrecision && report.gradient_norm <= 1000 * params_.gradient_tolerance) {
      // No step along the search direction lowers the objective in double precision: a change of
      // g^2 / (2 lambda) is below f's rounding once the gradient is ~sqrt(eps |f| lambda_max), which
      // for stiff networks is above the tolerance. Converged as far as f can tell; a failure with
      // a larger gradient (a kink of a ReLU network, a bad curvature pair) is not.
      report.converged = true;
      report.stop_reason = fmt::format("at the precision of double arithmetic ({})", report.stop_reason);
    } else if (end == End::SolverReturned) {
      report.stop_reason = "iteration limit";
    }
    result_.best_theta = best_point;
    result_.last_theta = x;
    result_.best_epoch = now_.evaluations - 1;
    result_.best_validation_loss = validation_loss_ ? validation_loss_(best_point) : best_loss;
    return std::move(result_);
  }

  const FullObjective full_;
  const TrainParams& params_;
  const std::function<double(const Vec&)>& validation_loss_;
  const EpochCallback& on_epoch_;
  TrainResult result_;
  LbfgsState now_;       ///< the solver's variables, which the evaluations update
  LbfgsState boundary_;  ///< now_ at the start of the current iteration: what a checkpoint keeps
  bool have_boundary_ = false;
  LBFGSpp::LBFGSParam<double> lbfgs_;
  LBFGSpp::BFGSMat<double> curvature_;
  std::vector<Vec> pairs_s_, pairs_y_;  ///< the last m pairs, oldest first
  std::exception_ptr evaluation_error_;
  EpochCheckpointer checkpoint_;
};

TrainResult train_lbfgs(const Objective& objective, Vec theta, const TrainParams& params,
                        const std::function<double(const Vec&)>& validation_loss, const EpochCallback& on_epoch) {
  if (params.batch_size != 0 && params.batch_size < objective.num_data())
    throw InputError("--optimizer lbfgs needs full batches (--batch-size 0): L-BFGS's line search and curvature "
                     "pairs assume the same objective at every step");
  LbfgsRun run(objective, theta, params, validation_loss, on_epoch);
  return run.run();
}

/// Mean of history[first, first + count).
double window_mean(const std::vector<double>& history, std::size_t first, std::size_t count) {
  double sum = 0;
  for (std::size_t i = first; i < first + count; ++i) sum += history[i];
  return sum / static_cast<double>(count);
}

/// The first-order optimisers' convergence monitor: the mean training loss of the last window of
/// epochs against that of the window before, relative to the loss (an MSE of 1e-3 still falling by
/// 1e-5 per window has not converged).
bool loss_has_levelled_off(const std::vector<double>& losses, const TrainParams& params) {
  const auto w = static_cast<std::size_t>(params.convergence_window);
  if (w == 0 || losses.size() < 2 * w) return false;
  const double last = window_mean(losses, losses.size() - w, w);
  const double before = window_mean(losses, losses.size() - 2 * w, w);
  return std::abs(last - before) <= params.convergence_tolerance * std::abs(last);
}

/// Adam, AdamW or SGD on minibatches, with the learning-rate schedule, validation, the best
/// snapshot, early stopping and the convergence monitor, run by the one epoch loop (optim/epoch_loop.hpp).
TrainResult train_first_order(const Objective& objective, Vec theta, const TrainParams& params, const OptimizerParams& chosen,
                              Rng& rng, const std::function<double(const Vec&)>& validation_loss, const EpochCallback& on_epoch) {
  const Index n = objective.num_data();
  auto optimizer = make_optimizer(chosen, theta.size());
  LearningRateSchedule schedule(params.schedule, params.optimizer.learning_rate);
  const double nan = std::numeric_limits<double>::quiet_NaN();

  TrainResult result;
  result.best_theta = theta;
  result.best_validation_loss = std::numeric_limits<double>::infinity();
  Index since_best = 0;
  double monitored = nan;
  Vec grad(theta.size());
  double lr = 0.0, loss_sum = 0.0;
  Index seen = 0;
  enum class Ending { None, EarlyStopping, LevelledOff } ending = Ending::None;
  EpochLoopCallbacks callbacks;
  callbacks.state = [&](StateArchive& a) {
    a.io(theta), a.io(rng), a.io(since_best), a.io(monitored);
    a.io(result.best_theta), a.io(result.best_validation_loss), a.io(result.best_epoch);
    a.io(result.history);
    optimizer->archive(a);
    schedule.archive(a);
    objective.archive(a);
  };
  callbacks.on_epoch_begin = [&](Index epoch) {
    lr = schedule.next(epoch, monitored);
    loss_sum = 0;
    seen = 0;
  };
  callbacks.on_step = [&](Index epoch, const IndexVec& rows) {
    const double loss = objective.loss_and_grad(theta, rows, grad);
    if (!std::isfinite(loss) || !grad.allFinite())
      throw DivergenceError("training diverged (non-finite loss or gradient) at epoch " + std::to_string(epoch) +
                               ": lower the learning rate");
    optimizer->step(theta, grad, lr);
    const Index size = static_cast<Index>(rows.size());
    loss_sum += loss * static_cast<double>(size);
    seen += size;
  };
  callbacks.on_epoch_end = [&](Index epoch) {
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
    if (on_epoch && !on_epoch(epoch, train_loss, val)) return EpochAction::Stop;
    if (params.early_stopping_patience > 0 && since_best >= params.early_stopping_patience) ending = Ending::EarlyStopping;
    else if (params.stop_when_converged && loss_has_levelled_off(result.history.train_loss, params)) ending = Ending::LevelledOff;
    return ending == Ending::None ? EpochAction::Continue : EpochAction::Finish;
  };
  const EpochLoopResult ran = run_epochs({.epochs = params.epochs, .num_data = n, .batch_size = params.batch_size,
                                          .checkpoint = params.checkpoint,
                                          .checkpoint_section = "uqnn training checkpoint 1 (" + chosen.name + ")"}, rng, callbacks);
  result.resumed_at_epoch = ran.resumed_at_epoch;
  result.interrupted = ran.interrupted;
  // A stop signal in the epoch that also stopped early or levelled off reads as the stop signal.
  if (!result.interrupted) {
    result.stopped_early = ending == Ending::EarlyStopping;
    result.convergence.converged = ending == Ending::LevelledOff;
  }
  if (!result.convergence.converged) result.convergence.converged = loss_has_levelled_off(result.history.train_loss, params);
  result.last_theta = theta;
  if (result.best_epoch < 0) result.best_theta = theta;
  // The full gradient's norm at the kept point, for the report (the monitor decided convergence).
  ConvergenceReport& report = result.convergence;
  report.optimizer = chosen.name;
  report.iterations = static_cast<Index>(result.history.epoch.size());
  Vec full_grad(theta.size());
  FullObjective{objective, all_rows(n), params.optimizer.weight_decay}(result.best_theta, full_grad);
  report.gradient_norm = full_grad.norm();
  report.stop_reason = result.interrupted     ? "stop signal"
                       : result.stopped_early ? "early stopping"
                       : report.iterations < params.epochs ? "training loss levelled off"
                                                           : "epoch limit";
  if (report.converged && report.stop_reason == "epoch limit")
    report.stop_reason += fmt::format(", the training loss levelled off (relative change <= {:g} between the last two "
                                      "windows of {} epochs)", params.convergence_tolerance, params.convergence_window);
  return result;
}

}  // namespace

TrainResult train(const Objective& objective, Vec theta, const TrainParams& params, Rng& rng,
                  const std::function<double(const Vec&)>& validation_loss, const EpochCallback& on_epoch) {
  params.validate();
  OptimizerParams chosen = params.optimizer;
  chosen.name = chosen_optimizer(objective, params);
  if (chosen.name == "lbfgs") return train_lbfgs(objective, std::move(theta), params, validation_loss, on_epoch);
  return train_first_order(objective, std::move(theta), params, chosen, rng, validation_loss, on_epoch);
}

}  // namespace uqnn
