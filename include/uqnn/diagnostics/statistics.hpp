#pragma once
/// @file Pooled summary statistics of MCMC draws: mean, standard deviation, quantiles, HDI.
///
/// Draws of one scalar quantity are a matrix `[draws, chains]`: column j holds chain j in draw
/// order. These functions pool all chains (the order of draws does not matter to them).
#include "uqnn/core/types.hpp"

namespace uqnn::diagnostics {

/// A closed interval [lower, upper].
struct Interval {
  double lower = 0.0;
  double upper = 0.0;
};

/// Mean of all draws, pooled over chains.
/// References: rstan 2.21 `monitor` (column `mean`).
double mean(const Mat& draws);

/// Sample standard deviation of all draws pooled over chains, divisor N - 1 (R's `sd`).
/// NaN when there is a single draw.
/// References: rstan 2.21 `monitor` (column `sd`).
double sd(const Mat& draws);

/// Quantile of all draws pooled, R's type 7 (Hyndman & Fan 1996): with the sorted draws
/// x_(1..N), h = 1 + (N - 1) p, the value (1 - (h - floor h)) x_(floor h) + (h - floor h) x_(ceil h).
/// Throws std::invalid_argument unless 0 <= prob <= 1 and draws is non-empty.
/// References: R `quantile(type = 7)`; Hyndman & Fan (1996), Am. Statist. 50, 361-365.
double quantile(const Mat& draws, double prob);

/// Median of all draws pooled (mean of the two middle values when N is even, as R's `median`).
/// References: R `median`.
double median(const Mat& draws);

/// Highest density interval: the shortest interval [x_(i), x_(i + floor(prob N))] over the sorted
/// pooled draws (ties go to the lowest i), ArviZ's definition; `hdi(draws, 0.94)` gives the
/// `hdi_3%` and `hdi_97%` columns of `az.summary`. NaN ends when a draw is NaN or infinite (no
/// interval of finite length is meaningful then). Throws std::invalid_argument unless
/// 0 < prob < 1 and floor(prob N) < N.
/// References: ArviZ `arviz.hdi` (`_hdi`); Hyndman (1996), "Computing and graphing highest
/// density regions", Am. Statist. 50, 120-126.
Interval hdi(const Mat& draws, double prob = 0.94);

}  // namespace uqnn::diagnostics
