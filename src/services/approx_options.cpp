// Options shared by the optimisation-based methods (src/services/approx_common.hpp).
#include "approx_common.hpp"

#include "uqnn/prob/curvature_directions.hpp"

namespace uqnn::detail {

const OptionSchema<SamplesOptions>& samples_options() {
  static const auto s = OptionSchema<SamplesOptions>("samples", "Draws of an approximation")
                            .add("num_samples", &SamplesOptions::num_samples, "number of posterior draws returned")
                            .at_least(2);
  return s;
}

const OptionSchema<EnsembleParams>& ensemble_options() {
  static const auto s = OptionSchema<EnsembleParams>("ensemble", "Ensembles (ens, rms)")
                            .add("ens_members", &EnsembleParams::members, "number of members J")
                            .at_least(1)
                            .cite("QUiNN's manual, deep ensembles")
                            .add("ens_data_fraction", &EnsembleParams::data_fraction,
                                 "data fraction delta; each member trains on floor(delta N) random rows")
                            .above(0)
                            .at_most(1)
                            .add("ens_noise_holdout", &EnsembleParams::noise_holdout,
                                 "with a learned noise (no --noise), ens: fraction of the rows held out to estimate the "
                                 "noise sd (0 = each member's training residuals)")
                            .at_least(0)
                            .below(1)
                            .cite("Lakshminarayanan et al. 2017")
                            .add("ens_noise_refit", &EnsembleParams::noise_refit,
                                 "with --ens-noise-holdout F > 0: twins of the members train without F of the rows, the noise "
                                 "sd is the one that maximises their mixture's likelihood there (floored at each member's "
                                 "training residuals), and the members train on all rows (twice the training) | "
                                 "--no-ens-noise-refit: each member holds out F of its rows and averages its training and "
                                 "held-out residuals");
  return s;
}

const OptionSchema<ViOptions>& vi_options() {
  static const auto s =
      OptionSchema<ViOptions>("vi", "Variational inference (Bayes by Backprop)")
          .add("vi_prior", &ViOptions::vi_prior, "model: the fit's --prior | mixture: pi N(0,s1^2) + (1-pi) N(0,s2^2) (QUiNN's manual's default)")
          .one_of({"mixture", "model"})
          .cite("Blundell et al. 2015; QUiNN's manual")
          .add("vi_pi", &ViOptions::vi_pi, "scale-mixture weight pi")
          .above(0)
          .at_most(1)
          .add("vi_sigma1", &ViOptions::vi_sigma1, "scale-mixture sigma1")
          .above(0)
          .add("vi_sigma2", &ViOptions::vi_sigma2, "scale-mixture sigma2")
          .above(0)
          .add("vi_samples", &ViOptions::vi_samples, "S reparameterised samples per step")
          .at_least(1)
          .add("vi_mu_init", &ViOptions::vi_mu_init, "mu initialised U(-a, a)")
          .at_least(0)
          .add("vi_rho_init_lower", &ViOptions::vi_rho_init_lower, "rho initialised U(lower, upper), sigma = softplus(rho)")
          .at_most_option("vi_rho_init_upper")
          .add("vi_rho_init_upper", &ViOptions::vi_rho_init_upper, "see --vi-rho-init-lower")
          .add("vi_kl", &ViOptions::vi_kl, "analytic (closed form, Gaussian prior) | mc (QUiNN's manual's log q - log p)")
          .one_of({"analytic", "mc"})
          .add("vi_lr_decay", &ViOptions::vi_lr_decay,
               "mean-field: with --lr-schedule constant, the learning rate decays exponentially to this fraction of --lr "
               "over --epochs; unset: 0.01 for vi (Adam's iterate then settles on the optimum), 1 (constant) for vi-hmc")
          .above(0)
          .at_most(1)
          .add("vi_family", &ViOptions::vi_family,
               "mean-field: independent Gaussians (Bayes by Backprop) | flow: RealNVP affine couplings on a diagonal "
               "Gaussian, fitted by the reparameterised ELBO (learns correlations; --vi-flow-*)")
          .one_of({"mean-field", "flow"})
          .cite("Dinh et al. 2017 (RealNVP); Rezende & Mohamed 2015")
          .add("vi_flow_layers", &ViOptions::vi_flow_layers, "flow: affine coupling layers")
          .at_least(0)
          .add("vi_flow_hidden", &ViOptions::vi_flow_hidden, "flow: tanh units of each coupling's conditioner")
          .at_least(1)
          .add("vi_flow_epochs", &ViOptions::vi_flow_epochs, "flow: passes over the data (one Adam step each in full batch; --lr, --batch-size)")
          .at_least(1)
          .add("vi_flow_samples", &ViOptions::vi_flow_samples, "flow: reparameterised draws per step")
          .at_least(1)
          .add("vi_flow_lr_decay", &ViOptions::vi_flow_lr_decay, "flow: the learning rate decays exponentially to this fraction of --lr")
          .above(0)
          .at_most(1);
  return s;
}

std::optional<diagnostics::Warning> narrow_spread_warning(const Posterior& posterior, const Draws& draws, const std::string& method,
                                                          const std::string& remedy) {
  if (draws.size() < 2) return std::nullopt;
  const Index K = posterior.dim(), N = posterior.num_data();
  Vec mean = Vec::Zero(K);
  draws.for_each([&](Index, const Vec& theta) { mean += theta / static_cast<double>(draws.size()); });
  // The stiffest direction and the flattest few: mean field misses a correlated pair's flat
  // direction, which need not be the flattest of all (a weight set by its prior alone can be).
  constexpr Index kFlatDirections = 6;
  std::vector<std::pair<std::string, CurvatureDirection>> directions;
  try {
    const CurvatureDirection stiff = stiffest_direction(posterior, mean, N);
    directions.emplace_back("stiffest", stiff);
    const auto flat = flattest_directions(posterior, mean, N, stiff.curvature, kFlatDirections);
    for (std::size_t i = 0; i < flat.size(); ++i)
      directions.emplace_back(i == 0 ? std::string("flattest")
                                     : fmt::format("{}{}-flattest", i + 1, i == 1 ? "nd" : i == 2 ? "rd" : "th"), flat[i]);
  } catch (const std::runtime_error&) {
    return std::nullopt;  // no finite curvature at the mean: nothing to measure against
  }
  constexpr double kTooNarrow = 0.5;
  std::vector<std::string> narrow;
  for (const auto& entry : directions) {
    const std::string& name = entry.first;
    const CurvatureDirection& d = entry.second;  // a named reference: clang 14 cannot capture a structured binding
    if (!(d.curvature > 0.0)) return std::nullopt;  // -log posterior not convex at the mean: no reference
    double sum = 0.0, sum_squares = 0.0;
    draws.for_each([&](Index, const Vec& theta) {
      const double x = d.direction.dot(theta - mean);
      sum += x, sum_squares += x * x;
    });
    const double n = static_cast<double>(draws.size());
    const double variance = (sum_squares - sum * sum / n) / (n - 1.0);
    const double ratio = variance * static_cast<double>(N) * d.curvature;
    if (ratio < kTooNarrow) narrow.push_back(fmt::format("{} ({:.2g} of it)", name, ratio));
  }
  if (narrow.empty()) return std::nullopt;
  std::string list;
  for (std::size_t i = 0; i < narrow.size(); ++i)
    list += (i == 0 ? "" : (i + 1 == narrow.size() ? " and " : ", ")) + narrow[i];
  if (narrow.empty()) return std::nullopt;
  return diagnostics::Warning{"narrow_spread",
                              fmt::format("{}: the draws are too narrow along the posterior's {} direction{}, measured against "
                                          "its curvature at their mean (a Gaussian posterior's variance there is at least the "
                                          "inverse curvature): the intervals over-claim. For calibrated intervals use --method "
                                          "nuts or laplace, {}.",
                                          method, list, narrow.size() == 1 ? "" : "s", remedy)};
}

void check_narrow_spread(const Posterior& posterior, const Draws& draws, const std::string& method, const std::string& remedy,
                         MethodResult& r) {
  const double work = static_cast<double>(posterior.num_data()) * static_cast<double>(posterior.dim());
  if (draws.size() < 2) {
    r.info["narrow_spread_check"] = "skipped: fewer than 2 draws";
  } else if (work > kNarrowSpreadWork) {
    r.info["narrow_spread_check"] = fmt::format("skipped: {} rows x {} parameters is above {:.0e} (the check's ~660 "
                                                "Hessian-vector products over every row cost too much at this size)",
                                                posterior.num_data(), posterior.dim(), kNarrowSpreadWork);
  } else {
    r.info["narrow_spread_check"] = "done";
    if (auto w = narrow_spread_warning(posterior, draws, method, remedy)) r.warnings.push_back(*w);
  }
}

}  // namespace uqnn::detail
