#pragma once
/// @file Potential scale reduction factors (R-hat): classic, split, rank-normalised, chain-wise.
///
/// Draws of one scalar quantity are a matrix `[draws, chains]`: column j holds chain j in draw
/// order (S draws per chain, M chains). All functions are pure. Like rstan they return NaN
/// (rstan: NA / NaN) when a draw is not finite or all draws are equal (within machine epsilon).
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn::diagnostics {

/// Cuts every chain into `kappa` consecutive pieces of equal length and returns them as
/// `kappa * M` columns. For kappa = 2 this is rstan's `split_chains` (an odd chain loses its
/// middle draw); for kappa = 2^j it is `split_chains` applied j times ("halves of halves"), so
/// leftover draws are dropped in the middle of each piece; for any other kappa each chain is cut
/// into pieces of floor(S / kappa) draws and the S mod kappa leftover draws are dropped from its
/// middle. kappa = 1 returns the draws unchanged. Throws std::invalid_argument unless
/// 1 <= kappa <= S.
/// References: Vehtari et al. (2021), Bayesian Analysis 16(2), sec. 4.1; seed 003 App. B.1
/// ("Split-R^(kappa)": K = kappa M chains from M Markov chains).
Mat split_chains(const Mat& draws, int kappa = 2);

/// Blom's fractional offset c = 3/8 for rank normalisation: what posterior (R) and ArviZ use.
inline constexpr double kBlomOffset = 3.0 / 8.0;

/// Rank normalisation: ranks r over all N entries (average ranks for ties), then
/// z = Phi^-1((r - c) / (N - 2c + 1)) with the fractional offset c; the shape is kept. All NaN
/// when a draw is not finite. The default c = 3/8 (Blom 1958) is posterior's and ArviZ's
/// `z_scale`; c = 1/2 gives (r - 1/2) / N, rstan 2.21's `z_scale` (R-hats differ by 1e-7 to
/// 1e-4 relative).
/// Throws std::invalid_argument unless 0 <= c <= 1/2.
/// References: Vehtari et al. (2021), eq. 14; Blom (1958), Statistical Estimates and Transformed
/// Beta-Variables; posterior 1.4 `z_scale` and `backtransform_ranks`.
Mat rank_normalize(const Mat& draws, double fractional_offset = kBlomOffset);

/// Folded draws |x - median(x)| (median of all draws pooled), used by the tail R-hat.
/// References: Vehtari et al. (2021), sec. 4.3.
Mat fold(const Mat& draws);

/// R-hat of the columns as given, without splitting (seed 003 eqs. 3-5): with S rows and K
/// columns, B = S/(K-1) sum_k (mean_k - mean)^2, W = mean of the column variances (divisor S-1),
/// R = sqrt(((S-1)/S W + B/S) / W). Needs K >= 2 (std::invalid_argument otherwise); NaN for S < 2.
/// References: Gelman et al. (2013), BDA3 sec. 11.4; seed 003 App. B eqs. 3-5; rstan `rhat_rfun`.
double rhat(const Mat& draws);

/// Classic split R-hat: rhat(split_chains(draws, kappa)). kappa = 2 is Stan's split R-hat, seed
/// 003's R^(2); kappa = 4 is seed 003's R^(4). NaN (posterior: NA) when the pieces would hold
/// fewer than 2 draws.
/// References: seed 003 App. B.1 eq. 5 and "Split-R^(kappa)"; Vehtari et al. (2021), sec. 4.1.
double split_rhat(const Mat& draws, int kappa = 2);

/// The three rank-normalised split R-hats of Vehtari et al. (2021).
struct RankNormalizedRhat {
  double bulk = 0.0;  ///< R-hat of rank-normalised split draws.
  double tail = 0.0;  ///< R-hat of rank-normalised split folded draws |x - median|.
  double max = 0.0;   ///< max(bulk, tail): what Stan and ArviZ report as R-hat.
};

/// Rank-normalised split R-hat with every chain cut into kappa pieces: bulk = rhat of
/// rank_normalize(split_chains(x, kappa)), tail = the same on fold(x), max = max(bulk, tail)
/// (NaN if either is NaN, or when the pieces would hold fewer than 2 draws). kappa = 2 gives
/// Stan's `Rhat`; kappa = 4 seed 003's R^(4).
/// Matches posterior 1.4's `rhat` to 1e-13 relative (tests/reference/diagnostics).
/// References: Vehtari et al. (2021), sec. 4.3 (posterior `rhat`); seed 003 App. B.1
/// ("Rank normalized split-R^(kappa)").
RankNormalizedRhat rank_normalized_rhat(const Mat& draws, int kappa = 2);

/// Chain-wise cR-hat of seed 003: the rank-normalised split R-hat^(kappa) applied to each chain
/// alone (M = 1, so its kappa pieces are the "chains"). Element j is chain j's value. It does not
/// penalise chains that sit in different modes, only a chain that is not stationary.
/// References: seed 003 App. B.1, "Rank normalized split-cR^(kappa)" (kappa = 4 recommended).
std::vector<RankNormalizedRhat> chainwise_rhat(const Mat& draws, int kappa = 4);

}  // namespace uqnn::diagnostics
