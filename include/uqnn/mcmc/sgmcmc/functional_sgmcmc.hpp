#pragma once
/// @file Functional SG-MCMC (fSGLD, fSGHMC) of seed 002: where to find it and how it is built.
///
/// fSGLD (seed 002 eq. 6, App. D Alg. 1):
///     w_{t+1} = w_t + eps_t J^T [ (N/n) sum_batch grad_f log p(y_i | f(x_i; w_t)) + grad_f log P0(f(X_M; w_t)) ]
///               + sqrt(2 eps_t) eta_t
/// is the SGLD update (sgld.hpp, the same eps convention) applied to the gradient of
/// FunctionalPosterior (prob/functional_posterior.hpp): N/n-scaled minibatch likelihood plus the
/// GP functional prior (prob/functional_prior.hpp) at measurement points X_M drawn afresh at every
/// gradient step (prob/measurement_sampler.hpp). fSGHMC (eq. 9, Alg. 2) is likewise SGHMC
/// (sghmc.hpp: w += eps M^-1 z; z += eps g(new w) - eps C M^-1 z + sqrt(2 C eps) eta) on that gradient;
/// with g(z) = z and p(g) = N(0, M), eq. 9's grad_z g grad_g log p(g) = -M^-1 z. Alg. 2's momentum
/// resampling before every block of m steps is SghmcParams::resample_momentum / num_steps.
/// The GP hyperparameters come from fit_gaussian_process (optim/gaussian_process_fit.hpp), the
/// "pre-trained GP prior". The chain's Rng draws, per gradient step: the minibatch, then X_M, then
/// the sampler's noise, so runs are reproducible per (seed, chain).
/// References: seed 002 sec. 3, App. D-E.
#include <memory>

#include "uqnn/mcmc/sgmcmc/sghmc.hpp"
#include "uqnn/mcmc/sgmcmc/sgld.hpp"
#include "uqnn/core/randomized_log_density.hpp"

namespace uqnn::sgmcmc {

/// fSGLD for one chain: SGLD on the functional posterior (a FunctionalPosterior, which the samplers
/// see as the RandomizedLogDensity of core: mcmc does not include prob).
inline std::unique_ptr<SgldSampler> make_fsgld_sampler(std::shared_ptr<const RandomizedLogDensity> target, SgldParams params) {
  return std::make_unique<SgldSampler>(std::move(target), std::move(params));
}

/// fSGHMC for one chain: SGHMC on the functional posterior.
inline std::unique_ptr<SghmcSampler> make_fsghmc_sampler(std::shared_ptr<const RandomizedLogDensity> target, SghmcParams params) {
  return std::make_unique<SghmcSampler>(std::move(target), std::move(params));
}

}  // namespace uqnn::sgmcmc
