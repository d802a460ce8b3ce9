#pragma once
/// @file Per-layer (ParamLayout block) parameter-space diagnostics of seed 003 App. B.1 (Figs. 4,
/// 8, 9): for every block the mean and max over its parameters of the rank-normalised split
/// R-hat^(2) across chains, the chain-wise cR-hat^(4) (mean over parameters and chains), and the
/// mean bulk ESS. Built on diagnostics/rhat.hpp and ess.hpp.
#include <string>
#include <vector>

#include "uqnn/core/param_layout.hpp"

namespace uqnn::diagnostics {

struct LayerDiagnostics {
  std::string block;          ///< ParamLayout block name, e.g. "layer1.weight"
  Index size = 0;             ///< parameters in the block (the finite ones counted below)
  double rhat_mean = 0.0;     ///< mean over parameters of the rank-normalised split R-hat^(2) (max of bulk and tail)
  double rhat_max = 0.0;
  double chain_rhat_mean = 0.0;  ///< mean over parameters and chains of cR-hat^(kappa)
  double ess_bulk_mean = 0.0;    ///< mean over parameters of the bulk ESS
};

/// `chains`: per chain [draws, dim] (cut to the shortest chain). Needs >= 2 chains and >= 4 *
/// kappa draws; throws std::invalid_argument otherwise. Parameters whose R-hat is not finite
/// (constant draws) are skipped in the means.
std::vector<LayerDiagnostics> layerwise_diagnostics(const std::vector<Mat>& chains, const ParamLayout& layout,
                                                    int chain_kappa = 4);

/// R-hat^(2) (rank-normalised split, max of bulk and tail) across chains of every column of
/// `chains` (per chain [draws, columns], cut to the shortest chain): with parameters as columns the
/// parameter-space R-hat of seed 003 Fig. 10, with the predictive mean at test points as columns
/// the per-point function-space R-hat^(2)_psi of App. B.2. Constant columns give NaN. Needs >= 2
/// chains and >= 4 draws; throws std::invalid_argument otherwise.
Vec columnwise_rhat(const std::vector<Mat>& chains);

}  // namespace uqnn::diagnostics
