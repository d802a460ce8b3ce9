#include "uqnn/services/functional_options.hpp"

#include "uqnn/core/error.hpp"

namespace uqnn {

#define UQNN_FUNCTIONAL_FIELDS(X)                                                                                   \
  X(gp_kernel) X(gp_ard) X(gp_iterations) X(gp_learning_rate) X(gp_max_points) X(gp_jitter) X(gp_prior_noise) X(measurement_data) \
  X(measurement_box) X(measurement_margin)

FunctionalOptions FunctionalOptions::from_json(const nlohmann::json& j) {
  FunctionalOptions o;
  try {
#define UQNN_READ(name) \
  if (j.contains(#name)) j.at(#name).get_to(o.name);
    UQNN_FUNCTIONAL_FIELDS(UQNN_READ)
#undef UQNN_READ
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("method options: ") + e.what());
  }
  return o;
}

nlohmann::json FunctionalOptions::to_json() const {
  nlohmann::json j;
#define UQNN_WRITE(name) j[#name] = name;
  UQNN_FUNCTIONAL_FIELDS(UQNN_WRITE)
#undef UQNN_WRITE
  return j;
}

std::shared_ptr<FunctionalPosterior> build_functional_posterior(const FitContext& context, nlohmann::json* info) {
  const FunctionalOptions o = FunctionalOptions::from_json(context.config.method_options);
  const auto& post = context.posterior;
  if (post->likelihood().kind().rfind("gaussian", 0) != 0)
    throw InputError("--method fsgld/fsghmc need --likelihood gaussian (the GP prior is over the regression function), not '" +
                     post->likelihood().kind() + "'");
  GpFitParams fit;
  fit.kernel = parse_gp_kernel(o.gp_kernel);
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
                                                      context.config.seed);
  const auto& h = process.hyperparameters();
  if (info) {
    *info = o.to_json();
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
  if (context.log) context.log("functional prior: " + process.describe());
  return target;
}

}  // namespace uqnn
