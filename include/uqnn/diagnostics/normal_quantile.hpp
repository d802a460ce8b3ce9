#pragma once
/// @file Quantile function (inverse CDF) of the standard normal distribution.

namespace uqnn::diagnostics {

/// Inverse of the standard normal CDF, Phi^-1(p), accurate to about 1 part in 1e16 on (0, 1).
/// Returns -inf at p = 0, +inf at p = 1 and NaN outside [0, 1]. It is the same algorithm as R's
/// `qnorm`, which is why rank normalisation reproduces rstan's `z_scale` to the last bits.
/// References: M. J. Wichura (1988), "Algorithm AS 241: The percentage points of the normal
/// distribution", Applied Statistics 37(3), 477-484 (PPND16).
double inverse_normal_cdf(double p);

}  // namespace uqnn::diagnostics
