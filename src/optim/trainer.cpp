#include "uqnn/optim/trainer.hpp"

#include <LBFGS.h>

#include <fmt/format.h>

#include <cmath>
#include <exception>
#include <limits>
#include <type_traits>

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
TrainResult train_lbfgs(const Objective& objective, Vec theta, const TrainParams& params,
                        const std::function<double(const Vec&)>& validation_loss, const EpochCallback& on_epoch) {
  const Index n = objective.num_data();
  if (params.batch_size != 0 && params.batch_size < n)
    throw InputError("--optimizer lbfgs needs full batches (--batch-size 0): L-BFGS's line search and curvature "
                     "pairs assume the same objective at every step");
  const FullObjective full{objective, all_rows(n), params.optimizer.weight_decay};
  TrainResult result;
  result.best_validation_loss = std::numeric_limits<double>::infinity();
  LbfgsState now;  // the solver's variables, which the evaluations update
  now.x = theta;
  now.best_point = theta;
  now.grad.resize(theta.size());
  // Non-finite values are +inf to the line search (it then shortens the step); a stop signal or
  // the callback ends the run by throwing StopTraining, keeping the best point evaluated.
  auto evaluate = [&](const Vec& x, Vec& grad) {
    double loss = full(x, grad);
    if (!std::isfinite(loss) || !grad.allFinite()) {
      grad.setZero();
      loss = std::numeric_limits<double>::infinity();
    }
    if (loss < now.best_loss) {
      now.best_loss = loss;
      now.best_point = x;
    }
    if (loss < now.progress_reference - kRelativeRounding * std::max(1.0, std::abs(loss))) {
      now.progress_reference = loss;
      now.last_progress = now.evaluations;
    }
    const double val = validation_loss ? validation_loss(x) : loss;
    result.history.epoch.push_back(now.evaluations);
    result.history.train_loss.push_back(loss);
    result.history.validation_loss.push_back(val);
    result.history.learning_rate.push_back(std::numeric_limits<double>::quiet_NaN());
    ++now.evaluations;
    if ((on_epoch && !on_epoch(now.evaluations - 1, loss, val)) || stop_requested()) {
      result.interrupted = stop_requested();
      throw StopTraining{};
    }
    if (now.evaluations - now.last_progress > kStagnantEvaluations) throw Stagnated{};
    if (now.evaluations >= params.epochs) throw EvaluationLimit{};
    return loss;
  };
  // The line search's own failures are std::runtime_error and std::logic_error; an exception of the
  // objective, the validation loss or the callback is carried past the solver and rethrown as it was.
  std::exception_ptr evaluation_error;
  auto f = [&](const Vec& x, Vec& grad) -> double {
    try {
      return evaluate(x, grad);
    } catch (const StopTraining&) {
      throw;
    } catch (const Stagnated&) {
      throw;
    } catch (const EvaluationLimit&) {
      throw;
    } catch (...) {
      evaluation_error = std::current_exception();
      throw EvaluationFailed{};
    }
  };
  LBFGSpp::LBFGSParam<double> lbfgs;
  lbfgs.epsilon = params.gradient_tolerance;
  lbfgs.epsilon_rel = 0.0;
  lbfgs.max_iterations = static_cast<int>(params.epochs);
  lbfgs.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;
  lbfgs.check_param();
  LBFGSpp::BFGSMat<double> curvature;
  curvature.reset(static_cast<int>(theta.size()), lbfgs.m);
  std::vector<Vec> pairs_s, pairs_y;  // the last m pairs, oldest first
  const auto add_pair = [&](Vec s, Vec y) {
    curvature.add_correction(s, y);
    pairs_s.push_back(std::move(s));
    pairs_y.push_back(std::move(y));
    if (static_cast<int>(pairs_s.size()) > lbfgs.m) {
      pairs_s.erase(pairs_s.begin());
      pairs_y.erase(pairs_y.begin());
    }
  };
  LbfgsState boundary;  // `now` at the start of the current iteration: what a checkpoint keeps
  bool have_boundary = false;
  EpochCheckpointer checkpoint(params.checkpoint, [&](StateArchive& a) {
    a.section("uqnn training checkpoint 1 (lbfgs)");
    a.io(boundary), a.io(pairs_s), a.io(pairs_y);
    TrainHistory history = a.saving() ? history_head(result.history, boundary.history_size) : TrainHistory{};
    a.io(history);
    if (a.loading()) result.history = std::move(history);
  });
  const bool resumed = checkpoint.restore();
  if (resumed) {
    now = boundary;
    have_boundary = true;
    const std::vector<Vec> s = pairs_s, y = pairs_y;
    pairs_s.clear(), pairs_y.clear();
    for (std::size_t i = 0; i < s.size(); ++i) add_pair(s[i], y[i]);
    result.resumed_at_epoch = now.evaluations;
  }
  const auto at_boundary = [&] {
    const Index before = boundary.evaluations;
    boundary = now;
    boundary.history_size = static_cast<Index>(result.history.epoch.size());
    have_boundary = true;
    checkpoint.after_progress(before, now.evaluations);
  };
  enum class End { SolverReturned, EvaluationLimit, AtPrecision, Stopped };
  End end = End::Stopped;
  try {
    if (!resumed) {
      now.fx = f(now.x, now.grad);
      now.direction = -now.grad;
      now.step = 1.0 / now.direction.norm();
      now.iteration = 1;
      if (now.grad.norm() > lbfgs.epsilon) at_boundary();
    }
    while (now.grad.norm() > lbfgs.epsilon) {
      const Vec x_before = now.x, grad_before = now.grad;
      LBFGSpp::LineSearchBacktracking<double>::LineSearch(f, now.fx, now.x, now.grad, now.step, now.direction, x_before, lbfgs);
      if (now.grad.norm() <= lbfgs.epsilon || now.iteration >= lbfgs.max_iterations) break;
      add_pair(now.x - x_before, now.grad - grad_before);
      curvature.apply_Hv(now.grad, -1.0, now.direction);
      now.step = 1.0;
      ++now.iteration;
      at_boundary();
    }
    end = End::SolverReturned;
  } catch (const EvaluationLimit&) {
    end = End::EvaluationLimit;
    result.convergence.stop_reason = "evaluation limit";
  } catch (const Stagnated&) {
    end = End::AtPrecision;
    result.convergence.stop_reason = fmt::format("no decrease beyond the objective's rounding in {} evaluations",
                                                 kStagnantEvaluations);
  } catch (const EvaluationFailed&) {
    std::rethrow_exception(evaluation_error);
  } catch (const StopTraining&) {
    result.convergence.stop_reason = result.interrupted ? "stop signal" : "stopped by the callback";
    if (result.interrupted && have_boundary) checkpoint.save();
  } catch (const std::runtime_error& e) {  // the line search found no acceptable step
    end = End::AtPrecision;
    result.convergence.stop_reason = std::string("line search: ") + e.what();
  } catch (const std::logic_error& e) {  // a direction uphill: the curvature pairs went wrong
    end = End::AtPrecision;
    result.convergence.stop_reason = std::string("line search: ") + e.what();
  }
  const Vec& x = now.x;
  Vec& best_point = now.best_point;
  const double best_loss = now.best_loss;
  const Index evaluations = now.evaluations;
  if (!std::isfinite(best_loss)) throw std::runtime_error("training diverged (no finite loss from the start)");
  // The solver's last point where its loss is the best one up to rounding: there the best loss
  // is decided by rounding error, and the solver's point is the one its gradient test judged.
  Vec grad(theta.size());
  if (x.allFinite()) {
    const double last_loss = full(x, grad);
    if (std::isfinite(last_loss) && last_loss <= best_loss + kRelativeRounding * std::max(1.0, std::abs(best_loss)))
      best_point = x;
  }
  full(best_point, grad);
  ConvergenceReport& report = result.convergence;
  report.optimizer = "lbfgs";
  report.iterations = evaluations;
  report.gradient_norm = grad.norm();
  if (report.gradient_norm <= params.gradient_tolerance) {
    report.converged = true;
    report.stop_reason = fmt::format("gradient norm <= {:g}", params.gradient_tolerance);
  } else if (end == End::AtPrecision && report.gradient_norm <= 1000 * params.gradient_tolerance) {
    // No step along the search direction lowers the objective in double precision: a change of
    // g^2 / (2 lambda) is below f's rounding once the gradient is ~sqrt(eps |f| lambda_max), which
    // for stiff networks is above the tolerance. Converged as far as f can tell; a failure with
    // a larger gradient (a kink of a ReLU network, a bad curvature pair) is not.
    report.converged = true;
    report.stop_reason = fmt::format("at the precision of double arithmetic ({})", report.stop_reason);
  } else if (end == End::SolverReturned) {
    report.stop_reason = "iteration limit";
  }
  result.best_theta = best_point;
  result.last_theta = x;
  result.best_epoch = evaluations - 1;
  result.best_validation_loss = validation_loss ? validation_loss(best_point) : best_loss;
  return result;
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

}  // namespace

TrainResult train(const Objective& objective, Vec theta, const TrainParams& params, Rng& rng,
                  const std::function<double(const Vec&)>& validation_loss, const EpochCallback& on_epoch) {
  params.validate();
  OptimizerParams chosen = params.optimizer;
  chosen.name = chosen_optimizer(objective, params);
  if (chosen.name == "lbfgs") return train_lbfgs(objective, std::move(theta), params, validation_loss, on_epoch);
  const Index n = objective.num_data();
  const Index batch = (params.batch_size == 0 || params.batch_size > n) ? n : params.batch_size;
  auto optimizer = make_optimizer(chosen, theta.size());
  LearningRateSchedule schedule(params.schedule, params.optimizer.learning_rate);
  const double nan = std::numeric_limits<double>::quiet_NaN();

  TrainResult result;
  result.best_theta = theta;
  result.best_validation_loss = std::numeric_limits<double>::infinity();
  Index since_best = 0;
  double monitored = nan;
  Vec grad(theta.size());
  Index next_epoch = 0;  // where the loop (re)starts; after an epoch, the one after it
  EpochCheckpointer checkpoint(params.checkpoint, [&](StateArchive& a) {
    a.section("uqnn training checkpoint 1 (" + chosen.name + ")");
    a.io(next_epoch), a.io(theta), a.io(rng), a.io(since_best), a.io(monitored);
    a.io(result.best_theta), a.io(result.best_validation_loss), a.io(result.best_epoch);
    a.io(result.history);
    optimizer->archive(a);
    schedule.archive(a);
    objective.archive(a);
  });
  if (checkpoint.restore()) result.resumed_at_epoch = next_epoch;
  for (Index epoch = next_epoch; epoch < params.epochs; ++epoch) {
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
    const bool early = params.early_stopping_patience > 0 && since_best >= params.early_stopping_patience;
    const bool levelled = params.stop_when_converged && loss_has_levelled_off(result.history.train_loss, params);
    // The checkpoint holds the state a run goes on from: after this epoch, unless the loop ends here.
    next_epoch = epoch + 1;
    if (stop_requested()) {  // SIGINT / SIGTERM / SIGHUP: keep what this epoch reached
      result.interrupted = true;
      if (!early && !levelled && next_epoch < params.epochs) checkpoint.save();
      break;
    }
    if (early) {
      result.stopped_early = true;
      break;
    }
    if (levelled) {
      result.convergence.converged = true;
      break;
    }
    if (next_epoch < params.epochs) checkpoint.after_epoch(next_epoch);
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

}  // namespace uqnn
