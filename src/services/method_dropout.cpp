// `uqnn fit --method dropout`: MC dropout on an Mlp or a Cnn (draws = the network's parameters with one mask each).
#include "approx_common.hpp"
#include "chain_run.hpp"
#include "uqnn/approx/dropout.hpp"

namespace uqnn {

namespace {
struct DropoutOptions {
  double dropout_p = 0.1;
};
const OptionSchema<DropoutOptions>& dropout_options() {
  static const auto s = OptionSchema<DropoutOptions>("dropout", "MC dropout")
                            .add("dropout_p", &DropoutOptions::dropout_p,
                                 "drop probability p of hidden units (cnn: of the features that feed each fc layer)")
                            .at_least(0)
                            .below(1)
                            .cite("Gal & Ghahramani 2016; QUiNN's manual");
  return s;
}
}  // namespace

/// MC dropout's steps for either network: train `Objective` (the loss under random masks, with its
/// mask stream) from the method's start, then draw masks around the trained weights.
template <typename Objective, typename MaskPosterior, typename Network>
MethodResult train_and_draw_masks(const FitContext& c, std::shared_ptr<const Network> network, nlohmann::json info) {
  Objective objective(network, c.posterior, c.config.seed, 2);
  Rng rng(c.config.seed, 0);
  const auto& post = c.posterior;
  const Mat Xv = c.validation_inputs, Yv = c.validation_targets;
  const auto validation = [&post, Xv, Yv](const Vec& theta) {  // the mean network's NLL per point
    return -post->log_likelihood(theta, Xv, Yv) / static_cast<double>(Xv.cols());
  };
  TrainParams training = c.config.training;
  training.checkpoint = detail::epoch_checkpoint(c.config, "dropout.state");  // with the mask stream (Objective::archive)
  const TrainResult trained =
      train(objective, c.initial_point(rng), training, rng, validation, epoch_progress(c, training.epochs, "dropout"));
  MaskPosterior q(network, trained.best_theta);
  Rng sampler(c.config.seed, 1);
  MethodResult r;
  r.draws = Draws::independent(q.sample(sampler, detail::num_samples(c)));
  r.history = {{"training loss with dropout (-log posterior / N)", trained.history.train_loss}};
  info["best_epoch"] = trained.best_epoch;
  info["resumed_at_epoch"] = trained.resumed_at_epoch;
  r.info = std::move(info);
  return r;
}

MethodResult run_dropout(const FitContext& c) {
  const DropoutOptions o = dropout_options().read(c.config.method_settings);
  const auto* mlp = dynamic_cast<const Mlp*>(&c.posterior->model());
  if (!mlp && c.posterior->model().kind() == "non_centred")
    throw InputError("--method dropout trains the network's own weights and cannot take --prior " + c.config.probability.prior +
                     " (its weights are products of scales): use --prior gaussian, fan-in, mixture or laplace");
  if (const auto cnn = std::dynamic_pointer_cast<const Cnn>(c.posterior->model_ptr())) {
    // On a cnn (approx/dropout.hpp, CnnDropout): dropout on the features that feed each fully
    // connected layer, one mask per draw.
    return train_and_draw_masks<CnnDropoutObjective, DropoutPosterior<CnnDropout>>(
        c, std::make_shared<const CnnDropout>(cnn, o.dropout_p),
        {{"dropout_p", o.dropout_p}, {"dropout_on", "the inputs of every fully connected layer"}});
  }
  if (!mlp) throw InputError("--method dropout needs --model mlp or cnn");
  return train_and_draw_masks<DropoutObjective, DropoutPosterior<DropoutMlp>>(c, std::make_shared<const DropoutMlp>(mlp->spec(), o.dropout_p),
                                                                   {{"dropout_p", o.dropout_p}});
}

namespace {
const bool registered_dropout = register_method({
    .name = "dropout",
    .summary = "MC dropout: one dropout mask per draw",
    .reference = "Gal & Ghahramani 2016; QUiNN's manual",
    .family = MethodFamily::Approximation,
    .groups = {&detail::samples_options().group(), &dropout_options().group(), &detail::training_checkpoint_options().group()},
    .run = &run_dropout,
    .kept_draws = [](const nlohmann::json& settings) { return approximation_draws(detail::samples_options().read(settings).num_samples); },
    .external_model_refusal = "it masks the units of uqnn's own MLP layers; a module's nn.Dropout is its own"});
}  // namespace

}  // namespace uqnn
