// Options shared by the optimisation-based methods (src/services/approx_common.hpp).
#include "approx_common.hpp"

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

}  // namespace uqnn::detail
