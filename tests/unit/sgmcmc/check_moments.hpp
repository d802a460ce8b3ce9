#pragma once
// Moment check shared by the SG-MCMC statistical tests.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/statistics.hpp"

namespace uqnn::testing {

/// Tolerances: |mean - truth| < z mcse_mean (the drift is linear, so the discretised chain's
/// stationary mean is exact); |sd - sd_true| < 1.5 |sd_chain - sd_true| + z mcse_sd, where
/// sd_chain is the exact stationary sd of the discretised chain (the O(eps) bias, derived from
/// the linear recursion; factor 1.5 covers the gradient-noise covariance varying with theta).
/// z = 4: with the ~10 checks per test a false alarm has probability < 1e-3.
inline void expect_moments(const std::vector<Mat>& draws, const Vec& mean, const Vec& sd, const Vec& chain_sd,
                           const std::string& label, double z = 4.0) {
  for (std::size_t k = 0; k < draws.size(); ++k) {
    const double m = diagnostics::mean(draws[k]), s = diagnostics::sd(draws[k]);
    const double mcse_m = diagnostics::mcse_mean(draws[k]), mcse_s = diagnostics::mcse_sd(draws[k]);
    const auto i = static_cast<Index>(k);
    const double bias = std::abs(chain_sd[i] - sd[i]);
    SCOPED_TRACE(label + " coordinate " + std::to_string(k));
    std::printf("[%s] k=%zu mean %.5f (truth %.5f, mcse %.5f)  sd %.5f (truth %.5f, chain %.5f, mcse %.5f)\n",
                label.c_str(), k, m, mean[i], mcse_m, s, sd[i], chain_sd[i], mcse_s);
    EXPECT_LT(std::abs(m - mean[i]), z * mcse_m);
    EXPECT_LT(std::abs(s - sd[i]), 1.5 * bias + z * mcse_s);
    // The tolerance must be meaningful: well below a factor-sqrt(2) error in the sd.
    EXPECT_LT(1.5 * bias + z * mcse_s, 0.15 * sd[i]);
  }
}

}  // namespace uqnn::testing
