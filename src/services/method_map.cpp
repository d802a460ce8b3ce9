#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "chain_run.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

std::function<bool(Index, double, double)> epoch_progress(const FitContext& context, Index total, const std::string& task) {
  // Shared by the callback's copies; the last copy to go finishes the task (also after early stopping).
  const auto tracker = std::make_shared<ProgressTracker>(context.reporter, task, static_cast<long>(total));
  const Index every = std::max<Index>(1, total / 100);
  return [tracker, every](Index epoch, double train_loss, double validation_loss) {
    // The losses are formatted for 1 epoch in `every` only: an epoch of a small network takes microseconds.
    std::string detail;
    if (epoch % every == 0) {
      detail = fmt::format("loss {:.5g}", train_loss);
      if (std::isfinite(validation_loss)) detail += fmt::format(" validation {:.5g}", validation_loss);  // (vi has none)
    }
    tracker->advance(1, 0, detail);
    return true;
  };
}

nlohmann::json training_info(const ConvergenceReport& r) {
  return {{"optimizer", r.optimizer},
          {"converged", r.converged},
          {"iterations", r.iterations},
          {"gradient_norm", r.gradient_norm},
          {"stop_reason", r.stop_reason}};
}

nlohmann::json training_info(const std::vector<ConvergenceReport>& reports) {
  Index converged = 0;
  double largest_norm = 0;
  nlohmann::json each = nlohmann::json::array();
  for (const auto& r : reports) {
    converged += r.converged ? 1 : 0;
    largest_norm = std::max(largest_norm, r.gradient_norm);
    each.push_back(training_info(r));
  }
  return {{"converged", converged == static_cast<Index>(reports.size())},
          {"members_converged", converged},
          {"largest_gradient_norm", largest_norm},
          {"members", each}};
}

std::optional<diagnostics::Warning> not_converged_warning(const std::vector<ConvergenceReport>& reports,
                                                          const std::string& what) {
  std::vector<const ConvergenceReport*> failed;
  for (const auto& r : reports)
    if (!r.converged && r.stop_reason != "stop signal" && r.stop_reason != "early stopping") failed.push_back(&r);
  if (failed.empty()) return std::nullopt;
  const ConvergenceReport& r = *failed.front();
  const std::string which =
      reports.size() == 1 ? what : fmt::format("{} of {} {}", failed.size(), reports.size(), what);
  const bool lbfgs = r.optimizer == "lbfgs";
  // A stochastic objective (VI's ELBO estimate) has no exact gradient to report, nor a mode for L-BFGS.
  const bool has_gradient = std::isfinite(r.gradient_norm);
  const std::string advice = !r.advice.empty() ? r.advice
                             : lbfgs           ? "more --epochs (L-BFGS's cap on evaluations) or a larger --gradient-tolerance"
                             : !has_gradient ? "more --epochs or a learning-rate schedule"
                                             : "more --epochs, a learning-rate schedule, or --optimizer lbfgs for a "
                                               "full-batch posterior mode";
  const std::string gradient =
      has_gradient ? fmt::format("; the gradient norm of the objective per data point is {:.3g}", r.gradient_norm) : "";
  return diagnostics::Warning{
      "not_converged", fmt::format("{} did not converge ({}: {} after {} {}{}). The estimate is not the optimum: try {}.", which,
                                   r.optimizer, r.stop_reason, r.iterations, lbfgs ? "evaluations" : "epochs", gradient, advice)};
}

TrainResult train_map(const FitContext& context, const Vec& start, Rng& rng, bool report_progress,
                      const EpochCheckpoint& checkpoint) {
  const auto& post = context.posterior;
  NegativeLogPosteriorObjective objective(post);
  // Model selection on the validation data's mean negative log-likelihood (the training data when
  // there is no validation split).
  const Mat Xv = context.validation_inputs, Yv = context.validation_targets;
  const auto validation = [&post, Xv, Yv](const Vec& theta) {
    return -post->log_likelihood(theta, Xv, Yv) / static_cast<double>(Xv.cols());
  };
  TrainParams params = context.config.training;
  params.checkpoint = checkpoint;
  return train(objective, start, params, rng, validation,
               report_progress ? epoch_progress(context, context.config.training.epochs, "map") : nullptr);
}

MethodResult run_map(const FitContext& context) {
  Rng rng(context.config.seed, 0);
  const TrainResult trained =
      train_map(context, context.initial_point(rng), rng, true, detail::epoch_checkpoint(context.config, "map.state"));
  MethodResult result;
  result.draws = Draws::one_per_chain({trained.best_theta});
  result.info = {{"best_epoch", trained.best_epoch},
                 {"best_validation_nll", trained.best_validation_loss},
                 {"epochs_run", trained.history.epoch.size()},
                 {"stopped_early", trained.stopped_early},
                 {"resumed_at_epoch", trained.resumed_at_epoch},
                 {"optimizer", training_info(trained.convergence)}};
  if (const auto w = not_converged_warning({trained.convergence}, "the MAP fit")) result.warnings.push_back(*w);
  result.history = {{"training loss (-log posterior / N)", trained.history.train_loss}};
  // Without a validation split the "validation" loss is the training NLL: not a curve to show as one.
  if (context.has_validation) result.history.emplace_back("validation NLL per point", trained.history.validation_loss);
  return result;
}

namespace {
const bool registered_map = register_method({
    .name = "map",
    .summary = "point estimate: Adam/SGD on -log posterior / N (the training options)",
    .reference = "QUiNN's manual",
    .family = MethodFamily::PointEstimate,
    .groups = {&detail::training_checkpoint_options().group()},
    .run = &run_map,
    .runs_on_external_model = true,
    // lbfgs stalls at the objective's rounding floor on the demo's 20 points (a gradient norm per
    // point of 1.6e-5 to 3.7e-5 after about 4,000 evaluations; 20,000 epochs change nothing): the
    // default tolerance of 1e-8 lies below it.
    .demo_preset = {{"epochs", 6000}, {"gradient_tolerance", 1e-4}}});
}  // namespace

}  // namespace uqnn
