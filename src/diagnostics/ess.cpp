#include "uqnn/diagnostics/ess.hpp"

#include <unsupported/Eigen/FFT>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "detail.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/diagnostics/statistics.hpp"

namespace uqnn::diagnostics {
namespace {

/// Lag-k autocovariance (1/n) sum_{t<n-k} (x_t - m)(x_{t+k} - m) of a centred chain.
double autocovariance_at(const Vec& centred, Index lag) {
  const Index n = centred.size();
  return centred.head(n - lag).dot(centred.tail(n - lag)) / static_cast<double>(n);
}

/// Lags below this are direct sums, exact and cheap; at this lag, where Geyer's sequence of a slowly
/// mixing chain goes on towards the chain's length and direct sums would cost O(S^2) (hours for the
/// 10^5-draw chains of a long SG-MCMC run), every lag of every chain comes from one FFT per chain.
constexpr Index kDirectLags = 64;

/// gamma_k = (1/n) sum_{t<n-k} x_t x_{t+k} for every lag k < n of the centred chain x (Wiener-Khinchin:
/// the inverse transform of |FFT(x)|^2, x zero-padded to a power of two >= 2n so that no product wraps
/// around), as ArviZ and Stan compute it; Eigen's FFT module (kissfft).
Vec autocovariance_by_fft(const Vec& centred) {
  const Index n = centred.size();
  Index size = 1;
  while (size < 2 * n) size *= 2;
  Vec padded = Vec::Zero(size);
  padded.head(n) = centred;
  // One FFT object per thread: it keeps its plans (twiddle factors) by transform size, which MCLMC's
  // tuning, with an ESS per coordinate of the same chain length, would otherwise rebuild every call.
  thread_local Eigen::FFT<double> fft;
  Eigen::VectorXcd spectrum;
  fft.fwd(spectrum, padded);
  spectrum = spectrum.cwiseAbs2().cast<std::complex<double>>();
  Vec products;
  fft.inv(products, spectrum);
  return products.head(n) / static_cast<double>(n);
}

/// ESS of split chains needs pieces of at least 3 draws (ess_basic's rule; posterior: NA). Checked
/// before splitting so that a chain of one draw gives NaN rather than a split error.
bool too_short_to_split(const Mat& draws) { return draws.rows() / 2 < 3; }

}  // namespace

Vec autocovariance(const Eigen::Ref<const Vec>& chain, Index max_lag) {
  require(max_lag >= 0 && max_lag < chain.size(), "max_lag", "in [0, chain length)");
  const Vec centred = chain.array() - chain.mean();
  Vec out(max_lag + 1);
  for (Index k = 0; k <= std::min(max_lag, kDirectLags - 1); ++k) out(k) = autocovariance_at(centred, k);
  if (max_lag >= kDirectLags) out.tail(max_lag + 1 - kDirectLags) = autocovariance_by_fft(centred).segment(kDirectLags, max_lag + 1 - kDirectLags);
  return out;
}

double ess_basic(const Mat& draws) {
  const Index s = draws.rows(), m = draws.cols();
  require(m >= 1, "draws", "at least one chain");
  if (s < 3 || detail::has_non_finite(draws) || detail::is_constant(draws)) return detail::kNaN;

  // Chains are centred once; autocovariances are computed lazily, only up to the lag where
  // Geyer's initial positive sequence stops: direct sums (exact, O(S) each) up to kDirectLags, then
  // all lags at once by FFT (O(S log S) per chain).
  Mat centred(s, m);
  Vec chain_mean(m);
  for (Index j = 0; j < m; ++j) {
    chain_mean(j) = draws.col(j).mean();
    centred.col(j) = draws.col(j).array() - chain_mean(j);
  }
  std::vector<Vec> all_lags;  // per chain, filled at the first lag >= kDirectLags
  auto mean_autocovariance = [&](Index lag) {
    if (lag >= kDirectLags && all_lags.empty())
      for (Index j = 0; j < m; ++j) all_lags.push_back(autocovariance_by_fft(centred.col(j)));
    double total = 0.0;
    for (Index j = 0; j < m; ++j)
      total += lag < kDirectLags ? autocovariance_at(centred.col(j), lag) : all_lags[static_cast<std::size_t>(j)](lag);
    return total / static_cast<double>(m);
  };

  const double sd = static_cast<double>(s);
  const double mean_var = mean_autocovariance(0) * sd / (sd - 1.0);  // W: mean chain variance
  double var_plus = mean_var * (sd - 1.0) / sd;                       // Vehtari et al. eq. 3
  if (m > 1) var_plus += detail::variance(chain_mean);
  // Vehtari et al. eq. 10: rho_t = 1 - (W - mean_chains gamma_t) / var_plus.
  auto rho = [&](Index lag) { return 1.0 - (mean_var - mean_autocovariance(lag)) / var_plus; };

  // Geyer's initial positive sequence: sum pairs (rho_{2k}, rho_{2k+1}) while the sum is > 0.
  std::vector<double> rho_hat(static_cast<std::size_t>(s), 0.0);
  Index t = 0;
  double rho_even = 1.0, rho_odd = rho(1);
  rho_hat[0] = rho_even;
  rho_hat[1] = rho_odd;
  while (t < s - 5 && !std::isnan(rho_even + rho_odd) && rho_even + rho_odd > 0.0) {
    t += 2;
    rho_even = rho(t);
    rho_odd = rho(t + 1);
    if (rho_even + rho_odd >= 0.0) {
      rho_hat[t] = rho_even;
      rho_hat[t + 1] = rho_odd;
    }
  }
  const Index max_t = t;
  if (rho_even > 0.0) rho_hat[max_t] = rho_even;  // used by the improved estimate below

  // Geyer's initial monotone sequence: pair sums may not increase.
  t = 0;
  while (t <= max_t - 4) {
    t += 2;
    if (rho_hat[t] + rho_hat[t + 1] > rho_hat[t - 2] + rho_hat[t - 1]) {
      rho_hat[t] = (rho_hat[t - 2] + rho_hat[t - 1]) / 2.0;
      rho_hat[t + 1] = rho_hat[t];
    }
  }

  // Improved truncated estimate tau = -1 + 2 sum_{k<max_t} rho_k + rho_{max_t} (seed 003 eq. 6 with
  // Geyer's truncation). rstan sums rho_hat[1:max_t] in R, which for max_t = 0 is rho_0 alone.
  double sum = 0.0;
  for (Index k = 0; k < std::max<Index>(max_t, 1); ++k) sum += rho_hat[k];
  const double nominal = static_cast<double>(m) * sd;
  double tau = -1.0 + 2.0 * sum + rho_hat[max_t];
  tau = std::max(tau, 1.0 / std::log10(nominal));  // caps ESS at M S log10(M S)
  return nominal / tau;
}

double ess_mean(const Mat& draws) {
  if (too_short_to_split(draws)) return detail::kNaN;
  return ess_basic(split_chains(draws, 2));
}

double ess_bulk(const Mat& draws) {
  if (detail::has_non_finite(draws) || too_short_to_split(draws)) return detail::kNaN;
  return ess_basic(rank_normalize(split_chains(draws, 2)));
}

double ess_quantile(const Mat& draws, double prob) {
  if (detail::has_non_finite(draws) || too_short_to_split(draws)) return detail::kNaN;
  const double q = quantile(draws, prob);
  const Mat indicator = (draws.array() <= q).cast<double>().matrix();
  return ess_basic(split_chains(indicator, 2));
}

double ess_tail(const Mat& draws) {
  const double q05 = ess_quantile(draws, 0.05), q95 = ess_quantile(draws, 0.95);
  if (std::isnan(q05) || std::isnan(q95)) return detail::kNaN;
  return std::min(q05, q95);
}

double mcse_mean(const Mat& draws) { return sd(draws) / std::sqrt(ess_mean(draws)); }

double mcse_sd(const Mat& draws) {
  // posterior >= 1.4 `mcse_sd` and ArviZ (arviz 0.14+, arviz-stats after PR #429): the delta
  // method on the variance, without assuming normal draws. With c = x - mean(x):
  // Var(var) ~ (mean(c^4) - mean(c^2)^2) / ESS(c^2) (Kenney and Keeping 1951, p. 141) and
  // Var(sd) ~ Var(var) / (4 var) (first-order Taylor). ESS(c^2) is the split ESS of the squared
  // deviations, the quantity the variance is an expectation of.
  const Mat squared_deviation = (draws.array() - draws.mean()).square().matrix();
  const double ess = ess_mean(squared_deviation);
  const double variance = squared_deviation.mean();
  const double variance_of_variance = (squared_deviation.array().square().mean() - variance * variance) / ess;
  return std::sqrt(variance_of_variance / variance / 4.0);
}

}  // namespace uqnn::diagnostics
