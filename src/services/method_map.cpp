#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "uqnn/services/methods.hpp"

namespace uqnn {

bool progress_wanted() { return isatty(STDERR_FILENO) && std::getenv("CI") == nullptr; }

std::function<bool(Index, double, double)> epoch_progress(bool enabled, Index total, const std::string& label) {
  if (!enabled) return {};
  return [total, label](Index epoch, double train_loss, double validation_loss) {
    if ((epoch + 1) % std::max<Index>(1, total / 100) == 0 || epoch + 1 == total) {
      std::cerr << fmt::format("\r{} {:>6}/{} loss {:.5g} validation {:.5g}   ", label, epoch + 1, total, train_loss,
                               validation_loss);
      if (epoch + 1 == total) std::cerr << '\n';
    }
    return true;
  };
}

TrainResult train_map(const FitContext& context, const Vec& start, Rng& rng) {
  const auto& post = context.posterior;
  NegativeLogPosteriorObjective objective(post);
  // Model selection on the validation data's mean negative log-likelihood (the training data when
  // there is no validation split).
  const Mat Xv = context.validation_inputs, Yv = context.validation_targets;
  const auto validation = [&post, Xv, Yv](const Vec& theta) {
    return -post->log_likelihood(theta, Xv, Yv) / static_cast<double>(Xv.cols());
  };
  return train(objective, start, context.config.training, rng, validation,
               epoch_progress(!context.config.quiet && progress_wanted(), context.config.training.epochs, "map"));
}

MethodResult run_map(const FitContext& context) {
  Rng rng(context.config.seed, 0);
  const TrainResult trained = train_map(context, context.initial_point(rng), rng);
  MethodResult result;
  result.draws = {trained.best_theta};
  result.info = {{"best_epoch", trained.best_epoch},
                 {"best_validation_nll", trained.best_validation_loss},
                 {"epochs_run", trained.history.epoch.size()},
                 {"stopped_early", trained.stopped_early}};
  std::vector<double> validation;
  for (double v : trained.history.validation_loss) validation.push_back(v);
  result.history = {{"training loss (-log posterior / N)", trained.history.train_loss},
                    {"validation NLL per point", validation}};
  return result;
}

namespace {
const bool registered = register_method({"map", "point estimate: Adam/SGD on -log posterior / N (the training options)", "QUiNN's manual", {}, {}, &run_map});
}  // namespace

}  // namespace uqnn
