#include "uqnn/services/functional_options.hpp"

#include "uqnn/core/error.hpp"
#include "uqnn/optim/gaussian_process_fit.hpp"

namespace uqnn {

const OptionSchema<FunctionalOptions>& functional_options() {
  using F = FunctionalOptions;
  static const auto s =
      OptionSchema<F>("functional", "Functional prior (fsgld, fsghmc)")
          .add("gp_kernel", &F::gp_kernel, "GP prior kernel (nngp: the network's infinite-width limit, nn/nngp.hpp)")
          .one_of({"rbf", "matern52", "linear", "nngp"})
          .cite("Wu et al., sec. 4; Lee et al. 2018 (nngp)")

          .add("gp_ard", &F::gp_ard, "one GP length scale per input (default: one shared)")
          .add("gp_iterations", &F::gp_iterations, "Adam steps fitting the GP hyperparameters by marginal likelihood")
          .at_least(1)
          .cite("Wu et al., App. E")
          .add("gp_lr", &F::gp_learning_rate, "Adam learning rate of the GP fit (log scale)")
          .above(0)
          .add("gp_max_points", &F::gp_max_points, "the GP fit uses at most this many random training points")
          .at_least(1)
          .add("gp_jitter", &F::gp_jitter, "jitter on the prior covariance diagonal, relative to the signal variance")
          .at_least(0)
          .add("gp_prior_noise", &F::gp_prior_noise, "add the fitted GP noise variance to the prior covariance")
          .add("measurement_data", &F::measurement_data, "training inputs in each measurement set (>= N: all of them, fixed)")
          .at_least(0)
          .cite("Wu et al., sec. 5.1")
          .add("measurement_box", &F::measurement_box, "uniform points in the box around the inputs in each measurement set")
          .at_least(0)
          .add("measurement_margin", &F::measurement_margin,
               "box = [min - margin*range, max + margin*range] per (standardised) input")
          .at_least(0)
          .add("keep_weight_prior", &F::keep_weight_prior,
               "keep the weight prior (--prior) beside the GP prior: weights that neither the GP nor the data pin down "
               "stay bounded instead of random-walking (default: the GP prior alone, eq. 6 of Wu et al. 2024)");
  return s;
}

const OptionSchema<NngpOptions>& nngp_options() {
  using N = NngpOptions;
  static const auto s = OptionSchema<N>("nngp", "NNGP kernel (--gp-kernel nngp, --method nngp)")
                            .add("nngp_weight_variance", &N::nngp_weight_variance,
                                 "weights ~ N(0, v / fan_in) in the network whose infinite-width limit the kernel is; 0 = 2 "
                                 "for relu and silu, 1 otherwise")
                            .at_least(0)
                            .cite("Lee et al. 2018")
                            .add("nngp_bias_variance", &N::nngp_bias_variance, "biases ~ N(0, v)")
                            .at_least(0);
  return s;
}

NngpArchitecture nngp_architecture(const FitConfig& config, const std::string& what) {
  const ModelConfig& m = config.model;
  if (m.kind != "mlp" || !m.bias)
    throw InputError(what + " is the infinite-width limit of an MLP with biases: use --model mlp, not --model " + m.kind +
                     (m.bias ? std::string() : " --no-bias"));
  const NngpOptions o = nngp_options().read(config.method_settings);
  NngpArchitecture a;
  a.depth = static_cast<Index>(m.hidden.size());
  a.activation = parse_activation(m.activation);
  a.weight_variance = o.nngp_weight_variance > 0 ? o.nngp_weight_variance : default_nngp_weight_variance(a.activation);
  a.bias_variance = o.nngp_bias_variance;
  return a;
}

std::shared_ptr<FunctionalPosterior> build_functional_posterior(const FitContext& context, nlohmann::json* info) {
  const FunctionalOptions o = functional_options().read(context.config.method_settings);
  const auto& post = context.posterior;
  if (post->likelihood().kind().rfind("gaussian", 0) != 0)
    throw InputError("--method fsgld/fsghmc need --likelihood gaussian (the GP prior is over the regression function), not '" +
                     post->likelihood().kind() + "'");
  GpFitParams fit;
  fit.kernel = parse_gp_kernel(o.gp_kernel);
  if (fit.kernel == GpKernel::Nngp) {
    if (o.gp_ard) throw InputError("--gp-ard: the nngp kernel has no length scales (its input scale is --nngp-weight-variance)");
    fit.nngp = nngp_architecture(context.config, "--gp-kernel nngp");
  }
  fit.per_input_length_scales = o.gp_ard;
  fit.iterations = o.gp_iterations;
  fit.learning_rate = o.gp_learning_rate;
  fit.max_points = o.gp_max_points;
  MeasurementParams measurement;
  measurement.num_data_points = o.measurement_data;
  measurement.num_box_points = o.measurement_box;
  measurement.box_margin = o.measurement_margin;
  try {
    fit.validate();
    measurement.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("functional SG-MCMC options: ") + e.what());
  }
  // The GP is fitted to the first target (all outputs share its kernel), in the units the network sees.
  Rng rng(context.config.seed, 0x67705f666974 /* "gp_fit" */);
  const Vec y = post->targets().row(0).transpose();
  const GaussianProcess process = fit_gaussian_process(post->inputs(), y, fit, rng);
  FunctionalPrior prior(post->model_ptr(), process, o.gp_jitter, o.gp_prior_noise);
  auto target = std::make_shared<FunctionalPosterior>(post, std::move(prior), MeasurementSampler(post->inputs(), measurement),
                                                      context.config.seed, o.keep_weight_prior);
  const auto& h = process.hyperparameters();
  if (info) {
    *info = functional_options().write(o);
    (*info)["gp"] = process.describe();
    (*info)["gp_signal_variance"] = h.signal_variance;
    (*info)["gp_length_scales"] = std::vector<double>(h.length_scales.data(), h.length_scales.data() + h.length_scales.size());
    (*info)["gp_noise_variance"] = h.noise_variance;
    (*info)["gp_log_marginal_likelihood_per_point"] = process.log_marginal_likelihood(
        post->inputs().leftCols(std::min(post->num_data(), fit.max_points)), y.head(std::min(post->num_data(), fit.max_points))) /
        static_cast<double>(std::min(post->num_data(), fit.max_points));
    (*info)["measurement_points_per_step"] = target->measurement().size();
    (*info)["measurement_fixed"] = target->measurement().is_fixed();
    (*info)["jitter_used"] = target->reference().jitter;
  }
  context.log("functional prior: " + process.describe());
  return target;
}

}  // namespace uqnn
