// Flags of the optimisation-based methods (ens, rms, vi, laplace, swag, dropout). Each writes its
// value into FitConfig::method_options under the ApproxOptions field name only when given, so the
// defaults live in one place (include/uqnn/services/approx_options.hpp) and TOML keys work through
// --config like every other flag.
#include <fmt/format.h>

#include "commands.hpp"
#include "uqnn/services/approx_options.hpp"

namespace uqnn::cli {

namespace {
template <typename T>
void option(CLI::App& c, FitConfig& cfg, const std::string& field, const T& fallback, const std::string& help) {
  std::string flag = "--" + field;
  for (char& ch : flag)
    if (ch == '_') ch = '-';
  auto* o = c.add_option_function<T>(flag, [&cfg, field](const T& v) { cfg.method_options[field] = v; }, help);
  if constexpr (std::is_same_v<T, std::string>) o->default_str(fallback);
  else o->default_str(fmt::format("{}", fallback));
}
void flag(CLI::App& c, FitConfig& cfg, const std::string& field, const std::string& help) {
  std::string name = "--" + field;
  for (char& ch : name)
    if (ch == '_') ch = '-';
  c.add_flag_function(name, [&cfg, field](std::int64_t n) { cfg.method_options[field] = n > 0; }, help);
}
}  // namespace

void add_approx_options(CLI::App& c, FitConfig& cfg) {
  const ApproxOptions d;
  option(c, cfg, "num_samples", d.num_samples, "vi/laplace/swag/dropout: number of posterior draws returned");
  option(c, cfg, "ens_members", d.ens_members, "ens/rms: number of members J");
  option(c, cfg, "ens_data_fraction", d.ens_data_fraction, "ens/rms: data fraction delta in (0,1]; each member trains on floor(delta N) random rows");
  flag(c, cfg, "rms_perturb_targets", "rms: also perturb the targets by N(0, sigma^2) (exact posterior draws for linear-Gaussian models)");
  option(c, cfg, "vi_prior", d.vi_prior, "vi: mixture (pi N(0,s1^2) + (1-pi) N(0,s2^2)) | model (the --prior)");
  option(c, cfg, "vi_pi", d.vi_pi, "vi: scale-mixture weight pi");
  option(c, cfg, "vi_sigma1", d.vi_sigma1, "vi: scale-mixture sigma1");
  option(c, cfg, "vi_sigma2", d.vi_sigma2, "vi: scale-mixture sigma2");
  option(c, cfg, "vi_samples", d.vi_samples, "vi: S reparameterised samples per step");
  option(c, cfg, "vi_mu_init", d.vi_mu_init, "vi: mu initialised U(-a, a)");
  option(c, cfg, "vi_rho_init_lower", d.vi_rho_init_lower, "vi: rho initialised U(lower, upper), sigma = softplus(rho)");
  option(c, cfg, "vi_rho_init_upper", d.vi_rho_init_upper, "vi: see --vi-rho-init-lower");
  option(c, cfg, "vi_kl", d.vi_kl, "vi: analytic (closed form, Gaussian prior) | mc (seed 001's log q - log p)");
  option(c, cfg, "laplace_curvature", d.laplace_curvature, "laplace: exact (Hessian) | fisher (empirical Fisher) | ggn (generalized Gauss-Newton)");
  option(c, cfg, "laplace_structure", d.laplace_structure, "laplace: full | diag");
  option(c, cfg, "laplace_cov_scale", d.laplace_cov_scale, "laplace: s in Sigma = (s H)^-1");
  option(c, cfg, "laplace_max_memory_gb", d.laplace_max_memory_gb, "laplace: limit on the K x K matrices (GiB)");
  flag(c, cfg, "laplace_tune", "laplace: tune the prior precision by the Laplace marginal likelihood");
  flag(c, cfg, "laplace_tune_noise", "laplace: tune the prior precision and the noise sd (fixed --noise)");
  option(c, cfg, "laplace_newton_steps", d.laplace_newton_steps, "laplace: Newton steps polishing the MAP (0 = off)");
  option(c, cfg, "laplace_predictive", d.laplace_predictive,
         "laplace: nn (seed 001: sampled weights through the network) | glm (through the network linearised at the MAP; "
         "use when most directions are prior-dominated)");
  option(c, cfg, "swag_steps", d.swag_steps, "swag: T SGD steps after pre-training");
  option(c, cfg, "swag_every", d.swag_every, "swag: c, a snapshot every c steps");
  option(c, cfg, "swag_rank", d.swag_rank, "swag: k, deviation columns kept");
  option(c, cfg, "swag_cov", d.swag_cov, "swag: lowrank | diag");
  option(c, cfg, "swag_members", d.swag_members, "swag: J members, each from its own initialisation (QUiNN's nens; MultiSWAG)");
  option(c, cfg, "swag_lr", d.swag_lr, "swag: SGD learning rate on -log posterior / N; 0 = 1 / (largest Hessian eigenvalue at the MAP)");
  option(c, cfg, "swag_momentum", d.swag_momentum, "swag: SGD momentum");
  option(c, cfg, "dropout_p", d.dropout_p, "dropout: drop probability p of hidden units");
}

}  // namespace uqnn::cli
