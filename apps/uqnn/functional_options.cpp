// Flags of the functional SG-MCMC methods (fsgld, fsghmc; seed 002). Each writes its value into
// FitConfig::method_options under the FunctionalOptions field name only when given, so the
// defaults live in include/uqnn/services/functional_options.hpp.
#include <fmt/format.h>

#include "commands.hpp"
#include "uqnn/services/functional_options.hpp"

namespace uqnn::cli {

namespace {
template <typename T>
void option(CLI::App& c, FitConfig& cfg, const std::string& flag, const std::string& field, const T& fallback,
            const std::string& help) {
  auto* o = c.add_option_function<T>(flag, [&cfg, field](const T& v) { cfg.method_options[field] = v; }, help);
  if constexpr (std::is_same_v<T, std::string>) o->default_str(fallback);
  else o->default_str(fmt::format("{}", fallback));
}
}  // namespace

void add_functional_options(CLI::App& c, FitConfig& cfg) {
  const FunctionalOptions d;
  option(c, cfg, "--gp-kernel", "gp_kernel", d.gp_kernel, "fsgld/fsghmc: GP prior kernel rbf | matern52 | linear");
  c.add_flag_function("--gp-ard", [&cfg](std::int64_t n) { cfg.method_options["gp_ard"] = n > 0; },
                      "fsgld/fsghmc: one GP length scale per input (default: one shared)");
  option(c, cfg, "--gp-iterations", "gp_iterations", d.gp_iterations, "fsgld/fsghmc: Adam steps fitting the GP hyperparameters by marginal likelihood");
  option(c, cfg, "--gp-lr", "gp_learning_rate", d.gp_learning_rate, "fsgld/fsghmc: Adam learning rate of the GP fit (log scale)");
  option(c, cfg, "--gp-max-points", "gp_max_points", d.gp_max_points, "fsgld/fsghmc: the GP fit uses at most this many random training points");
  option(c, cfg, "--gp-jitter", "gp_jitter", d.gp_jitter, "fsgld/fsghmc: jitter on the prior covariance diagonal, relative to the signal variance");
  c.add_option_function<bool>("--gp-prior-noise", [&cfg](const bool& v) { cfg.method_options["gp_prior_noise"] = v; },
                              "fsgld/fsghmc: add the fitted GP noise variance to the prior covariance (true|false)")
      ->default_str(d.gp_prior_noise ? "true" : "false");
  option(c, cfg, "--measurement-data", "measurement_data", d.measurement_data,
         "fsgld/fsghmc: training inputs in each measurement set (>= N: all of them, fixed)");
  option(c, cfg, "--measurement-box", "measurement_box", d.measurement_box,
         "fsgld/fsghmc: uniform points in the box around the inputs in each measurement set");
  option(c, cfg, "--measurement-margin", "measurement_margin", d.measurement_margin,
         "fsgld/fsghmc: box = [min - margin*range, max + margin*range] per (standardised) input");
}

}  // namespace uqnn::cli
