#pragma once
/// @file How far one predictive is from a reference predictive (long NUTS runs), point by point:
/// pure functions for `uqnn compare --reference`.
///
/// Why: Izmailov et al. (2021, "What are Bayesian neural network posteriors really like?") and the
/// NeurIPS 2021 approximate-inference competition scored approximations by their agreement with
/// HMC's predictive: for classification, top-1 agreement and total variation between the class
/// probabilities; for regression the 1-Wasserstein distance between the predictive distributions.
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn {

/// The 1-Wasserstein distance between the empirical distributions of two samples (equal weights,
/// any sizes): the integral of |F_a(x) - F_b(x)| over x, as scipy.stats.wasserstein_distance.
/// Throws std::invalid_argument for an empty or non-finite sample.
double wasserstein1(std::vector<double> a, std::vector<double> b);

/// Total variation distance between two probability vectors over the same classes: 0.5 sum |p - q|.
double total_variation(const Vec& p, const Vec& q);

/// Per-column agreement of class probabilities [K, n] (K = 1: bernoulli P(y = 1), read as two
/// classes) with a reference's: top-1 agreement (1 when the most probable classes agree, ties to the
/// lower index) and total variation.
struct ClassAgreement {
  Vec top1;             ///< [n] 0/1
  Vec total_variation;  ///< [n]
};
ClassAgreement class_agreement(const Mat& probabilities, const Mat& reference);

}  // namespace uqnn
