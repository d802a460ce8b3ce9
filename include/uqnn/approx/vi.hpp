#pragma once
/// @file Variational inference by Bayes by Backprop (Blundell et al. 2015; seed 001, "Variational
/// Inference (NN_VI)").
///
/// q(w_k) = N(mu_k, sigma_k^2), sigma_k = softplus(rho_k) = log(1 + e^rho_k) as the manual says
/// (QUiNN's code uses sigma = exp(rho): defect 5). Per minibatch b of B = ceil(N / batch) the loss is
/// exactly seed 001's
///   L(phi) = (1/B) [log q(w) - log p(w)] - (N / |b|) sum_{i in b} log p(y_i | w),   w ~ q,
/// which for a one-output Gaussian with fixed sigma is (1/B)[log q - log p] + (N/2) log(2 pi sigma^2)
/// + (N / 2 sigma^2) MSE_b(w), averaged over S reparameterised draws w = mu + sigma * eps, minimised
/// by Adam. With a Gaussian prior the KL term may be analytic (KL(q || p) / B instead of the
/// one-sample estimate). Note: the likelihood term is scaled to the full data while the KL is divided
/// by B, so for B > 1 the minimiser is that of KL / B + NLL (a down-weighted KL); B = 1 (full batch,
/// QUiNN's default) is the true negative ELBO. The reported ELBO is the unbiased estimate
/// -(KL + NLL) per epoch whatever B. Likelihood extras (learned log sigma) are variational too, with
/// the likelihood's own prior on them.
#include <functional>
#include <memory>
#include <vector>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/optim/epoch_checkpoint.hpp"
#include "uqnn/optim/optimizer.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

struct ViParams {
  Index epochs = 600;            ///< QUiNN NN_VI.fit default
  double learning_rate = 0.01;   ///< Adam
  Index batch_size = 0;          ///< 0 = full batch (QUiNN default)
  Index num_samples = 1;         ///< S draws per step (QUiNN nsam)
  double mu_init_lower = -0.2, mu_init_upper = 0.2;   ///< mu ~ U(lower, upper) (QUiNN defaults)
  double rho_init_lower = -5.0, rho_init_upper = -4.0; ///< rho ~ U(lower, upper) (QUiNN defaults)
  bool analytic_kl = true;       ///< use the closed-form KL when the prior is a GaussianPrior
  /// When non-empty (posterior dim entries), mu starts here instead of U(mu_init_lower, upper),
  /// e.g. at a MAP fit (seed 000's VI-HMC examples pre-train).
  Vec initial_mean;
  ScheduleParams schedule;       ///< learning-rate schedule per epoch (monitors -ELBO)
  /// The convergence monitor's windows: mu is averaged over each of the last two windows of
  /// max(monitor_window, epochs / 10) epochs (ViResult::mu_last_window); 0 = off.
  Index monitor_window = 100;
  /// The loop's state after an epoch (optim/epoch_checkpoint.hpp): a stopped fit resumes bitwise.
  EpochCheckpoint checkpoint;
  void validate() const;
};

struct ViResult {
  Vec mu, rho;
  std::vector<double> elbo;  ///< per-epoch ELBO estimate
  bool analytic_kl = false;  ///< whether the closed-form KL was used
  bool interrupted = false;  ///< a stop signal ended the epochs early (core/stop_signal.hpp)
  Index resumed_at_epoch = 0;  ///< the epoch a checkpoint restored (0: started afresh)
  std::shared_ptr<const DiagonalGaussianPosterior> approximation;  ///< q with sigma = softplus(rho)
  /// mu averaged over the last window of `monitor_window` epochs and over the window before it
  /// (empty when the run was shorter than two windows or stopped early): how far the means still
  /// drift, which -ELBO's noise can hide.
  Vec mu_last_window, mu_window_before;
  Index monitor_window = 0;
};

/// softplus(rho) = log(1 + e^rho), stable for large |rho|.
double softplus(double rho);
/// rho with softplus(rho) = sigma.
double inverse_softplus(double sigma);

/// Fits q to the posterior's likelihood and data with `prior` on the network parameters (the
/// posterior's own prior is not used, so seed 001's scale mixture can be given); the extras use the
/// likelihood's prior. Extras' mu start at the likelihood's initial extras.
ViResult fit_bayes_by_backprop(const Posterior& posterior, const Prior& prior, const ViParams& params, Rng& rng,
                               const std::function<bool(Index, double)>& on_epoch = {});

/// The gradient of seed 001's per-minibatch loss at q = N(mu, softplus(rho)^2) (network parameters
/// then likelihood extras):
///   KL(q || p) / kl_divisor - data_term(w),   w = mu + softplus(rho) eps,
/// averaged over `num_samples` reparameterised draws (K normals each from `rng`). `data_term(w, grad)`
/// returns the minibatch's log likelihood already scaled to the data set (N / |b| sum log p(y_i | w))
/// and adds its gradient to `grad`. kl_divisor is the number of minibatches per pass over the data
/// (Blundell et al. 2015, eq. 8 with pi_i = 1 / M). The KL is closed form for the network when
/// `analytic_kl` (the prior must then be a GaussianPrior), a one-sample estimate otherwise; the
/// extras' part is always estimated. One step of fit_bayes_by_backprop, and of an online learner.
struct BayesByBackpropGradient {
  double kl = 0.0;   ///< estimate of KL(q || p), not divided
  double nll = 0.0;  ///< estimate of -data_term
  Vec g_mu, g_rho;   ///< gradient of the loss in mu and rho
};
BayesByBackpropGradient bayes_by_backprop_gradient(const Vec& mu, const Vec& rho, const Prior& prior, const Likelihood& likelihood,
                                                   bool analytic_kl, Index num_samples, double kl_divisor,
                                                   const std::function<double(const Vec& w, Vec& grad)>& data_term, Rng& rng);

/// The data term of one minibatch: log p(y_i | w) summed over the examples `rows` of the posterior's
/// data, or an unbiased estimate of that sum (e.g. a DeepONet's query points subsampled inside each
/// function: examples/vi_hmc/burgers_deeponet.hpp); its gradient in w is added to *grad.
using MinibatchLogLikelihood = std::function<double(const Vec& w, const IndexVec& rows, Vec* grad)>;

/// As above with the data term computed by `data_term` instead of the posterior's model on the
/// gathered columns (which is what the overload above passes).
ViResult fit_bayes_by_backprop(const Posterior& posterior, const Prior& prior, const ViParams& params, Rng& rng,
                               const MinibatchLogLikelihood& data_term,
                               const std::function<bool(Index, double)>& on_epoch = {});

}  // namespace uqnn
