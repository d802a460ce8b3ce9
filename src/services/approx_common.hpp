#pragma once
#include <optional>
// Helpers shared by the runners of the optimisation-based methods (private to src/services).
#include <fmt/format.h>

#include "uqnn/approx/ensemble.hpp"
#include "uqnn/approx/vi.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/services/options.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"
#include "chain_run.hpp"
#include "sampler_options.hpp"

namespace uqnn::detail {

/// Draws returned by the methods that sample an approximation (vi, laplace, swag, dropout).
struct SamplesOptions {
  Index num_samples = 200;
};
const OptionSchema<SamplesOptions>& samples_options();
/// Draws to return, from the method's settings.
inline Index num_samples(const FitContext& c) { return samples_options().read(c.config.method_settings).num_samples; }

/// Members J and data fraction delta of ens and rms (seed 001; QUiNN NN_Ens / NN_RMS).
const OptionSchema<EnsembleParams>& ensemble_options();

/// Bayes by Backprop (vi, vi-hmc): QUiNN NN_VI's defaults, softplus sigma as seed 001 says.
struct ViOptions {
  std::string vi_prior = "model";  ///< model (the fit's --prior) | mixture (pi, sigma1, sigma2: QUiNN's manual)
  double vi_pi = 0.5, vi_sigma1 = 1.0, vi_sigma2 = 1.0;
  Index vi_samples = 1;  ///< S
  double vi_mu_init = 0.2;  ///< mu ~ U(-a, a)
  double vi_rho_init_lower = -5.0, vi_rho_init_upper = -4.0;
  std::string vi_kl = "analytic";  ///< analytic (Gaussian prior only) | mc
  /// mean-field: with --lr-schedule constant, the learning rate decays exponentially to this
  /// fraction of --lr over the epochs. Unset: 0.01 for vi, 1 (constant, seed 000's) for vi-hmc.
  std::optional<double> vi_lr_decay;
  std::string vi_family = "mean-field";  ///< mean-field | flow (approx/flow.hpp)
  Index vi_flow_layers = 8, vi_flow_hidden = 32, vi_flow_epochs = 10000, vi_flow_samples = 8;
  double vi_flow_lr_decay = 0.01;  ///< the flow's learning rate decays to this fraction
};
const OptionSchema<ViOptions>& vi_options();


/// The ensemble's settings with the fit's --threads and training.
inline EnsembleParams ensemble_params(const FitContext& c) {
  EnsembleParams p = ensemble_options().read(c.config.method_settings);
  p.threads = c.config.threads;
  p.training = c.config.training;
  p.checkpoint = member_checkpoint(c.config);
  p.lockstep = lockstep_options().read(c.config.method_settings).lockstep;
  // --conformal cv+ / jackknife+: member k leaves out fold k (K = the members; jackknife+ one member
  // per training row), and fit_output calibrates on the same folds (out_of_fold_assignment).
  const std::string& conformal = c.config.conformal.method;
  if (c.config.conformal.enabled() && conformal_kinds().find(conformal).out_of_fold) {
    const Index n = c.posterior->num_data();
    if (conformal == "jackknife+") {
      if (n > kJackknifePlusMaxRows)
        throw InputError(fmt::format("--conformal jackknife+ trains one member per training row, and there are {} (at most {}): use "
                                     "--conformal cv+, whose K = --ens-members folds cost K trainings",
                                     n, kJackknifePlusMaxRows));
      p.members = n;
    }
    p.fold_of_row = out_of_fold_assignment(conformal, n, p.members, c.config.seed);
  }
  return p;
}

/// Result of an ensemble-like method: members as draws, one "chain" per member, the first member
/// training curves as history.
inline MethodResult ensemble_result(const std::vector<MemberFit>& fits, const std::string& loss_name) {
  MethodResult r;
  std::size_t present = 0, rows = 0;
  std::vector<ConvergenceReport> reports;
  for (std::size_t j = 0; j < fits.size(); ++j) {
    if (fits[j].theta.size() == 0) continue;  // a member of another part (--part k/n)
    reports.push_back(fits[j].convergence);
    r.draws.add_chain(static_cast<Index>(j), fits[j].theta.transpose());
    if (present++ < 8) r.history.emplace_back(fmt::format("member {} {}", j, loss_name), fits[j].history.train_loss);
    rows = fits[j].rows.size();
  }
  r.history_label = loss_name;
  r.info["members"] = present;
  r.info["member_rows"] = rows;
  r.info["optimizer"] = training_info(reports);
  if (const auto w = not_converged_warning(reports, "members' fits")) r.warnings.push_back(*w);
  return r;
}

/// Bayes by Backprop on the context's posterior with the fit's VI settings (method_vi.cpp);
/// `prior` receives the prior used on the network parameters; `default_lr_decay` is the learning
/// rate's final fraction when --vi-lr-decay is unset. Shared by vi and vi-hmc.
ViResult fit_vi(const FitContext& c, std::shared_ptr<const Prior>& prior, double default_lr_decay);


/// An approximation's draws measured against the posterior's curvature at their mean: along the
/// posterior's stiffest and flattest directions (prob/curvature_directions.hpp) the variance of a
/// Gaussian posterior is exactly, or at least, 1 / (N x curvature). A warning when the draws' variance
/// is below half of that along either direction: the intervals over-claim there (mean-field VI on
/// correlated weights, SWAG's isotropic SGD noise). Nothing when -log posterior is not convex at the
/// mean (a network between modes), where the curvature is no reference. `remedy` ends the message.
std::optional<diagnostics::Warning> narrow_spread_warning(const Posterior& posterior, const Draws& draws, const std::string& method,
                                                          const std::string& remedy);

/// narrow_spread_warning where it is affordable: the warning goes to r.warnings, and
/// r.info["narrow_spread_check"] says whether the check ran. Its ~660 Hessian-vector products over
/// all training rows cost about 660 N K multiply-adds times a network's reuse of its weights; it
/// runs when N x K is at most kNarrowSpreadWork (2e8: a 20,000-weight network on 10,000 rows,
/// seconds to a minute) and is skipped, saying so, above it:
/// on a ResNet over 4,000 images it took longer than the fit itself, and at so many weights 100
/// subspace iterations do not resolve the flattest directions anyway.
void check_narrow_spread(const Posterior& posterior, const Draws& draws, const std::string& method, const std::string& remedy,
                         MethodResult& r);
inline constexpr double kNarrowSpreadWork = 2e8;

}  // namespace uqnn::detail
