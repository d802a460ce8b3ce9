#include "uqnn/services/functional_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

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
          .add("gp_iterations", &F::gp_iterations,
               "Adam steps fitting the GP hyperparameters by marginal likelihood; 0 = 100 for regression, 500 for classification")
          .at_least(0)
          .cite("Wu et al., App. E")
          .add("gp_dirichlet_alpha", &F::gp_dirichlet_alpha,
               "classification: alpha_eps of the Dirichlet-based GP's label transformation (alpha = one-hot label + alpha_eps)")
          .above(0)
          .cite("Milios et al. 2018, sec. 4")
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
          .add("measurement_box", &F::measurement_box,
               "uniform points in the box around the inputs in each measurement set; -1 = 40 for regression, 0 for "
               "classification")
          .at_least(-1)
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
  FunctionalOptions o = functional_options().read(context.config.method_settings);
  const auto& post = context.posterior;
  const std::string kind = post->likelihood().kind();
  const bool regression = kind.rfind("gaussian", 0) == 0, categorical = kind == "categorical", bernoulli = kind == "bernoulli";
  if (!regression && !categorical && !bernoulli)
    throw InputError("--method fsgld/fsghmc need --likelihood gaussian (a GP prior over the regression function) or "
                     "categorical / bernoulli (a Dirichlet-based GP prior over the logits), not '" + kind + "'");
  // The paper's settings where the user left the default (functional_options.hpp).
  if (o.gp_iterations == 0) o.gp_iterations = regression ? 100 : 500;
  if (o.measurement_box < 0) o.measurement_box = regression ? 40 : 0;
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
  if (measurement.num_data_points + measurement.num_box_points == 0)
    throw InputError("functional SG-MCMC options: --measurement-data and --measurement-box are both 0: no measurement points");
  Rng rng(context.config.seed, 0x67705f666974 /* "gp_fit" */);
  const Vec y = post->targets().row(0).transpose();
  const Index fit_points = std::min(post->num_data(), fit.max_points);
  std::optional<GaussianProcess> process;
  Vec output_means;
  double log_marginal_per_point = 0;
  if (regression) {
    // The GP is fitted to the first target (all outputs share its kernel), in the units the network sees.
    process = fit_gaussian_process(post->inputs(), y, fit, rng);
    log_marginal_per_point = process->log_marginal_likelihood(post->inputs().leftCols(fit_points), y.head(fit_points)) /
                             static_cast<double>(fit_points);
  } else {
    // Seed 002 App. E: "a Dirichlet-based GP designed for classification tasks ... pre-trained".
    const Index num_classes = categorical ? post->model().output_dim() : 2;
    const DirichletGaussianProcess dirichlet =
        fit_dirichlet_gaussian_process(post->inputs(), y, num_classes, o.gp_dirichlet_alpha, fit, rng);
    output_means = dirichlet.class_means;
    log_marginal_per_point =
        dirichlet_log_marginal_likelihood(dirichlet.process, post->inputs().leftCols(fit_points),
                                          dirichlet_targets(y.head(fit_points), num_classes, o.gp_dirichlet_alpha),
                                          dirichlet.class_means) /
        static_cast<double>(fit_points * num_classes);
    if (bernoulli) {
      // One logit g = f_1 - f_0 of two independent GPs with the same kernel: g ~ GP(m_1 - m_0, 2 k).
      Vec p = dirichlet.process.log_parameters();
      p[0] += std::log(2.0);
      process = dirichlet.process.with_log_parameters(p);
      output_means = Vec::Constant(1, output_means[1] - output_means[0]);
    } else {
      process = dirichlet.process;
    }
  }
  // The Dirichlet GP's noise is the label transformation's, not the function's: its prior is over
  // the noise-free logits (gp_prior_noise applies to regression).
  FunctionalPrior prior(post->model_ptr(), *process, o.gp_jitter, regression && o.gp_prior_noise, output_means);
  auto target = std::make_shared<FunctionalPosterior>(post, std::move(prior), MeasurementSampler(post->inputs(), measurement),
                                                      context.config.seed, o.keep_weight_prior);
  const auto& h = process->hyperparameters();
  std::string described = process->describe();
  if (!regression) {
    // The Dirichlet GP's noise is the labels' (per example and class), not the process's own.
    const auto at = described.find(", noise_variance=");
    if (at != std::string::npos) described.erase(at, described.find_first_of(",)", at + 2) - at);
    described += fmt::format(" with alpha_eps={:g}", o.gp_dirichlet_alpha);
  }
  if (info) {
    *info = functional_options().write(o);
    (*info)["gp"] = described;
    (*info)["gp_prior"] = regression ? "gaussian process fitted to the regression targets"
                                     : "Dirichlet-based gaussian process over the logits (Milios et al. 2018)";
    (*info)["gp_signal_variance"] = h.signal_variance;
    (*info)["gp_length_scales"] = std::vector<double>(h.length_scales.data(), h.length_scales.data() + h.length_scales.size());
    if (regression) (*info)["gp_noise_variance"] = h.noise_variance;
    if (!regression) (*info)["gp_output_means"] = std::vector<double>(output_means.data(), output_means.data() + output_means.size());
    (*info)["gp_log_marginal_likelihood_per_point"] = log_marginal_per_point;
    (*info)["measurement_points_per_step"] = target->measurement().size();
    (*info)["measurement_fixed"] = target->measurement().is_fixed();
    (*info)["jitter_used"] = target->reference().jitter;
  }
  context.log("functional prior: " + std::string(regression ? "" : "Dirichlet-based ") + described);
  return target;
}

}  // namespace uqnn
