#pragma once
/// @file Acquisition scores for active learning (seed 004's applications; issue 20, item 8): how
/// much labelling a point would tell about the weights, from the per-draw predictions of any
/// method (predict_draws). Higher is more informative. Regression with one target (row 0).
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {

/// The epistemic variance per point, (1 / (S - 1)) sum_s (mu_s - mean mu)^2, the square of
/// summarize_predictive's epistemic_sd ("max-variance" acquisition).
Vec epistemic_variance(const PredictiveDraws& draws);

/// BALD (Houlsby et al. 2011): the mutual information I(y; theta | x) = H[p(y | x)] - E_s H[p(y | x, theta_s)]
/// per point, with the predictive mixture's entropy taken as that of a Gaussian with its variance:
///   I ~ 0.5 log(Var_s[mu_s] + E_s[sigma_s^2]) - E_s[0.5 log sigma_s^2]
/// (Var_s the mixture's, 1 / S).
/// Exact when the draws' means are Gaussian and their noise variances equal (the predictive is then
/// Gaussian): I = 0.5 log(1 + Var[mu] / sigma^2). With a noise variance shared by every draw it ranks
/// points as epistemic_variance does.
Vec bald_score(const PredictiveDraws& draws);

}  // namespace uqnn
