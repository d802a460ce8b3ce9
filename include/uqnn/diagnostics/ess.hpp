#pragma once
/// @file Effective sample sizes and Monte Carlo standard errors (Stan's definitions).
///
/// Draws of one scalar quantity are a matrix `[draws, chains]`: column j holds chain j in draw
/// order. Like rstan, ESS is NaN when a draw is not finite, all draws are equal, or a chain (or
/// chain piece) has fewer than 3 draws.
#include "uqnn/core/types.hpp"

namespace uqnn::diagnostics {

/// Autocovariances of one chain for lags 0..max_lag: gamma_k = (1/n) sum_{t<n-k} (x_t - m)(x_{t+k} - m)
/// (the biased estimate Geyer recommends): direct sums for lags below 64, an FFT of the zero-padded
/// chain for the rest (equal to rounding, O(n log n) for all lags). Throws std::invalid_argument
/// unless 0 <= max_lag < n.
/// References: Geyer (1992), Statist. Sci. 7(4), 473-483; rstan 2.21 `autocovariance`.
Vec autocovariance(const Eigen::Ref<const Vec>& chain, Index max_lag);

/// ESS of the columns as given (no splitting): Geyer's initial monotone sequence on the
/// multi-chain autocorrelation rho_t = 1 - (W - mean_chains gamma_t) / var_plus, with
/// var_plus = (S-1)/S W + var(chain means) (M >= 2), Stan's "improved" truncation
/// tau = -1 + 2 sum_{t<T} rho_t + rho_T, and tau >= 1/log10(M S), ESS = M S / tau (seed 003 eq. 6).
/// This is Stan's `ess_rfun` and the `ess_basic` column.
/// References: Vehtari et al. (2021), sec. 3.2 and App. A; Geyer (1992); rstan 2.21 `ess_rfun`;
/// seed 003 App. B eq. 6.
double ess_basic(const Mat& draws);

/// ESS of the split draws, not rank-normalised: ess_basic(split_chains(draws, 2)) (rstan's
/// `ess_mean`, the ESS behind mcse_mean).
/// References: rstan 2.21 `ess_mean`.
double ess_mean(const Mat& draws);

/// Bulk ESS: ess_basic(rank_normalize(split_chains(draws, 2))), with Blom's offset 3/8 as
/// posterior and ArviZ (rstan 2.21 used 1/2; the ESSs differ by ~1e-4 relative).
/// References: Vehtari et al. (2021), sec. 4.3; posterior 1.4 `ess_bulk`.
double ess_bulk(const Mat& draws);

/// Tail ESS: min over p in {0.05, 0.95} of the split ESS of the indicators x <= q_p (q_p R's type-7
/// quantile of all draws).
/// References: Vehtari et al. (2021), sec. 4.3; rstan 2.21 `ess_tail`.
double ess_tail(const Mat& draws);

/// ESS of the split indicator draws x <= q_prob (q_prob R's type-7 quantile of all draws).
/// References: Vehtari et al. (2021), sec. 4.3; rstan 2.21 `ess_quantile`.
double ess_quantile(const Mat& draws, double prob);

/// Monte Carlo standard error of the mean: sd(x) / sqrt(ess_mean(x)).
/// References: rstan 2.21 `mcse_mean`; Vehtari et al. (2021), sec. 3.
double mcse_mean(const Mat& draws);

/// Monte Carlo standard error of the standard deviation by the delta method, without assuming
/// normal draws: with c = x - mean(x), v = mean(c^2) and E = ess_mean(c^2),
/// mcse_sd = sqrt((mean(c^4) - v^2) / E / (4 v)). This is posterior's `mcse_sd` (since 1.4.0)
/// and ArviZ's. rstan 2.21's older sd(x) sqrt(e (1 - 1/E)^(E-1) - 1), E = min(ess_mean(x),
/// ess_mean(x^2)), assumed normal draws: on rstan's reference sets it is up to 11x this value, and
/// 44x below it on Cauchy draws.
/// References: posterior 1.4+ `mcse_sd` (stan-dev/posterior PR #233); Kenney and Keeping (1951),
/// Mathematics of Statistics II, p. 141; Vehtari et al. (2021), sec. 3.
double mcse_sd(const Mat& draws);

}  // namespace uqnn::diagnostics
