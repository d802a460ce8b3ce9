#pragma once
/// @file Parameter sensitivities of a network under a mean-field Gaussian posterior (seed 000,
/// section 3.1): S_i^2 = sigma_i^2 / N_d sum_j (dF_mu(x_j) / dtheta_i)^2 (eq. 17), the ranking,
/// and the number N-hat of parameters that captures a proportion tau of the first-order output
/// variance (eq. 18).
///
/// Why first order: eq. 14 approximates Var[F(x)] by sum_i sigma_i^2 (dF/dtheta_i)^2 (a linearised
/// network with independent parameters), so S_i^2 is parameter i's share of the average
/// predictive variance over the training inputs.
#include <string>
#include <vector>

#include "uqnn/core/rng.hpp"
#include "uqnn/nn/model.hpp"

namespace uqnn {

/// S_i^2 per network parameter and the ranking derived from it.
struct SensitivityReport {
  Vec sensitivity;        ///< S_i^2 (eq. 17), one per network parameter
  IndexVec ranking;       ///< parameter indices from most to least sensitive (ties: lower index first)
  Vec cumulative_ratio;   ///< [k] = (sum of the k + 1 largest S^2) / (sum of all S^2)
  double total = 0.0;     ///< sum_i S_i^2: the average first-order predictive variance (eq. 15)

  /// N-hat of eq. 18: the largest N_T whose top-N_T ratio is <= tau (tau in (0, 1]), but at least
  /// 1 (eq. 18 gives 0 when one parameter alone holds more than tau of the variance).
  Index num_kept(double tau) const;
  /// The N-hat most sensitive parameters (eq. 19's Theta_s), in increasing index order.
  IndexVec sensitive_subset(double tau) const;
};

/// Eq. 17 at the posterior mean `mean` with standard deviations `sd` (network parameters only)
/// over the inputs X [input_dim, N_d]. For several outputs (a DeepONet on a grid) the squared
/// derivatives are also averaged over the outputs. The Jacobian is formed `chunk` examples at a
/// time, so memory stays O(chunk * outputs * P).
SensitivityReport compute_sensitivities(const Model& model, const Vec& mean, const Vec& sd, const Mat& X,
                                        Index chunk = 64);

/// The report from given S_i^2 (ranking, cumulative ratios, total).
SensitivityReport rank_sensitivities(Vec sensitivity);

/// `size` distinct indices of 0 .. dim - 1 drawn uniformly, increasing: the random control subset
/// of seed 000 Appendix E.
IndexVec random_subset(Index dim, Index size, Rng& rng);

/// Per-block sums and counts of S^2 (one row per ParamLayout block, e.g. "layer2.weight").
struct BlockSensitivity {
  std::string name;
  Index rows = 0, cols = 0, count = 0;
  double sum = 0.0, max = 0.0;
};
std::vector<BlockSensitivity> block_sensitivities(const ParamLayout& layout, const Vec& sensitivity);

}  // namespace uqnn
