#pragma once
/// @file Energy Bayesian fraction of missing information (E-BFMI) for Hamiltonian samplers.
#include "uqnn/core/types.hpp"

namespace uqnn::diagnostics {

/// E-BFMI of each chain from its Hamiltonian energies (Stan's `energy__`), given as a matrix
/// `[draws, chains]`: element j is sum_{t>=1} (E_t - E_{t-1})^2 / sum_t (E_t - mean E)^2 for
/// chain j. Values below 0.3 suggest the momentum resampling explores the energy levels poorly.
/// Stan's definition; ArviZ's `bfmi` divides mean squared differences (n - 1 terms) by the
/// variance (n terms), i.e. it is this value times n / (n - 1). NaN for a constant chain.
/// Throws std::invalid_argument when a chain has fewer than 2 draws.
/// References: Betancourt (2016), "Diagnosing suboptimal cotangent disintegrations in Hamiltonian
/// Monte Carlo", arXiv:1604.00695, eq. 5; Stan `check_energy` (CmdStan diagnose).
Vec e_bfmi(const Mat& energy);

}  // namespace uqnn::diagnostics
