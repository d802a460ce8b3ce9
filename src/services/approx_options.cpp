#include "uqnn/services/approx_options.hpp"

#include "uqnn/core/error.hpp"

namespace uqnn {

#define UQNN_APPROX_FIELDS(X)                                                                                   \
  X(num_samples) X(threads) X(ens_members) X(ens_data_fraction) X(rms_perturb_targets) X(vi_prior) X(vi_pi)     \
  X(vi_sigma1) X(vi_sigma2) X(vi_samples) X(vi_mu_init) X(vi_rho_init_lower) X(vi_rho_init_upper) X(vi_kl)      \
  X(laplace_curvature) X(laplace_structure) X(laplace_cov_scale) X(laplace_max_memory_gb) X(laplace_tune)       \
  X(laplace_tune_noise) X(laplace_newton_steps) X(laplace_predictive) X(swag_steps) X(swag_every) X(swag_rank) X(swag_members) X(swag_cov) X(swag_lr) \
  X(swag_momentum) X(dropout_p)

ApproxOptions ApproxOptions::from_json(const nlohmann::json& j) {
  ApproxOptions o;
  try {
#define UQNN_READ(name) \
  if (j.contains(#name)) j.at(#name).get_to(o.name);
    UQNN_APPROX_FIELDS(UQNN_READ)
#undef UQNN_READ
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("method options: ") + e.what());
  }
  return o;
}

nlohmann::json ApproxOptions::to_json() const {
  nlohmann::json j;
#define UQNN_WRITE(name) j[#name] = name;
  UQNN_APPROX_FIELDS(UQNN_WRITE)
#undef UQNN_WRITE
  return j;
}

}  // namespace uqnn
