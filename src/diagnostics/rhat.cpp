#include "uqnn/diagnostics/rhat.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "detail.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"
#include "uqnn/diagnostics/statistics.hpp"

namespace uqnn::diagnostics {
namespace {

bool is_power_of_two(int k) { return k > 0 && (k & (k - 1)) == 0; }

/// rstan's split_chains: first floor(S/2) draws, then the last floor(S/2) draws of each chain.
Mat split_in_halves(const Mat& draws) {
  const Index s = draws.rows(), m = draws.cols(), half = s / 2;
  Mat out(half, 2 * m);
  out.leftCols(m) = draws.topRows(half);
  out.rightCols(m) = draws.bottomRows(half);
  return out;
}

/// Fewer than 2 draws per piece: no within-piece variance, R-hat undefined (posterior: NA).
bool too_short_to_split(const Mat& draws, int kappa) {
  require(kappa >= 1, "kappa", "an integer >= 1");
  return draws.rows() / kappa < 2;
}

}  // namespace

Mat split_chains(const Mat& draws, int kappa) {
  require(kappa >= 1, "kappa", "an integer >= 1");
  require(kappa <= draws.rows(), "kappa",
          "at most the number of draws per chain (" + std::to_string(draws.rows()) + ")");
  if (kappa == 1) return draws;
  if (is_power_of_two(kappa)) {
    Mat out = draws;
    for (int pieces = 1; pieces < kappa; pieces *= 2) out = split_in_halves(out);
    return out;
  }
  // General kappa: floor(kappa/2) pieces from the start, the rest from the end of each chain.
  const Index s = draws.rows(), m = draws.cols(), length = s / kappa, head = kappa / 2;
  Mat out(length, kappa * m);
  for (Index j = 0; j < m; ++j) {
    for (Index piece = 0; piece < kappa; ++piece) {
      const Index start = piece < head ? piece * length : s - (kappa - piece) * length;
      out.col(piece * m + j) = draws.col(j).segment(start, length);
    }
  }
  return out;
}

Mat rank_normalize(const Mat& draws, double fractional_offset) {
  require(fractional_offset >= 0.0 && fractional_offset <= 0.5, "fractional_offset", "in [0, 1/2]");
  // NaN has no rank (and would break the sort's ordering): no defined result, as in rstan.
  if (detail::has_non_finite(draws)) return Mat::Constant(draws.rows(), draws.cols(), detail::kNaN);
  const Index n = draws.size();
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](Index a, Index b) { return draws.data()[a] < draws.data()[b]; });
  Mat z(draws.rows(), draws.cols());
  for (Index i = 0; i < n;) {
    // Draws order[i..j) are tied; each gets the average of the 1-based ranks i+1 .. j.
    Index j = i + 1;
    while (j < n && draws.data()[order[j]] == draws.data()[order[i]]) ++j;
    const double average_rank = static_cast<double>(i + 1 + j) / 2.0;
    // Vehtari et al. (2021) eq. 14 with posterior's backtransform_ranks: (r - c) / (N - 2c + 1).
    const double value = inverse_normal_cdf((average_rank - fractional_offset) /
                                            (static_cast<double>(n) - 2.0 * fractional_offset + 1.0));
    for (Index k = i; k < j; ++k) z.data()[order[k]] = value;
    i = j;
  }
  return z;
}

Mat fold(const Mat& draws) { return (draws.array() - median(draws)).abs().matrix(); }

double rhat(const Mat& draws) {
  const Index s = draws.rows(), k = draws.cols();
  require(k >= 2, "draws", "at least 2 columns (chains or chain pieces)");
  // One draw per column has no within-chain variance: posterior's NA.
  if (s < 2 || detail::has_non_finite(draws) || detail::is_constant(draws)) return detail::kNaN;

  Vec chain_mean(k), chain_var(k);
  for (Index j = 0; j < k; ++j) {
    chain_mean(j) = draws.col(j).mean();
    chain_var(j) = detail::variance(draws.col(j));
  }
  const double sd = static_cast<double>(s);
  const double between = sd * detail::variance(chain_mean);  // seed 003 eq. 3
  const double within = chain_var.mean();                    // seed 003 eq. 4
  return std::sqrt(((sd - 1.0) / sd * within + between / sd) / within);  // seed 003 eq. 5
}

double split_rhat(const Mat& draws, int kappa) {
  if (too_short_to_split(draws, kappa)) return detail::kNaN;
  return rhat(split_chains(draws, kappa));
}

RankNormalizedRhat rank_normalized_rhat(const Mat& draws, int kappa) {
  RankNormalizedRhat out;
  if (detail::has_non_finite(draws) || too_short_to_split(draws, kappa)) {
    out.bulk = out.tail = out.max = detail::kNaN;
    return out;
  }
  out.bulk = rhat(rank_normalize(split_chains(draws, kappa)));
  out.tail = rhat(rank_normalize(split_chains(fold(draws), kappa)));
  out.max = (std::isnan(out.bulk) || std::isnan(out.tail)) ? detail::kNaN : std::max(out.bulk, out.tail);
  return out;
}

std::vector<RankNormalizedRhat> chainwise_rhat(const Mat& draws, int kappa) {
  require(kappa >= 2, "kappa", "an integer >= 2 (a single chain needs at least 2 pieces)");
  std::vector<RankNormalizedRhat> out;
  out.reserve(static_cast<std::size_t>(draws.cols()));
  for (Index j = 0; j < draws.cols(); ++j) out.push_back(rank_normalized_rhat(draws.col(j), kappa));
  return out;
}

}  // namespace uqnn::diagnostics
