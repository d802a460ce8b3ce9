#include "uqnn/diagnostics/layerwise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/rhat.hpp"

namespace uqnn::diagnostics {

std::vector<LayerDiagnostics> layerwise_diagnostics(const std::vector<Mat>& chains, const ParamLayout& layout,
                                                    int chain_kappa) {
  require(chains.size() >= 2, "chains", "at least 2 chains");
  Index draws = chains.front().rows();
  for (const auto& c : chains) {
    require(c.cols() == layout.size(), "chains", fmt::format("[draws, {}] matrices (the layout's size)", layout.size()));
    draws = std::min(draws, c.rows());
  }
  require(chain_kappa >= 2, "chain_kappa", ">= 2");
  require(draws >= 4 * chain_kappa, "draws per chain", fmt::format(">= {} (4 kappa)", 4 * chain_kappa));
  const auto num_chains = static_cast<Index>(chains.size());
  std::vector<LayerDiagnostics> out;
  for (const ParamBlock& block : layout.blocks()) {
    LayerDiagnostics d;
    d.block = block.name;
    d.size = block.size();
    double rhat_sum = 0, crhat_sum = 0, ess_sum = 0;
    Index n_rhat = 0, n_crhat = 0, n_ess = 0;
    for (Index k = block.offset; k < block.offset + block.size(); ++k) {
      Mat x(draws, num_chains);  // [draws, chains], the diagnostics' shape
      for (Index c = 0; c < num_chains; ++c) x.col(c) = chains[static_cast<std::size_t>(c)].col(k).head(draws);
      const double r = rank_normalized_rhat(x, 2).max;  // seed 003 R-hat^(2)
      if (std::isfinite(r)) {
        rhat_sum += r;
        d.rhat_max = std::max(d.rhat_max, r);
        ++n_rhat;
      }
      for (const auto& cr : chainwise_rhat(x, chain_kappa))  // seed 003 cR-hat^(kappa)
        if (std::isfinite(cr.max)) {
          crhat_sum += cr.max;
          ++n_crhat;
        }
      const double e = ess_bulk(x);
      if (std::isfinite(e)) {
        ess_sum += e;
        ++n_ess;
      }
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    d.rhat_mean = n_rhat ? rhat_sum / static_cast<double>(n_rhat) : nan;
    if (!n_rhat) d.rhat_max = nan;
    d.chain_rhat_mean = n_crhat ? crhat_sum / static_cast<double>(n_crhat) : nan;
    d.ess_bulk_mean = n_ess ? ess_sum / static_cast<double>(n_ess) : nan;
    out.push_back(d);
  }
  return out;
}

Vec columnwise_rhat(const std::vector<Mat>& chains) {
  require(chains.size() >= 2, "chains", "at least 2 chains");
  Index draws = chains.front().rows();
  for (const auto& c : chains) {
    require(c.cols() == chains.front().cols(), "chains", "matrices with the same number of columns");
    draws = std::min(draws, c.rows());
  }
  require(draws >= 4, "draws per chain", ">= 4");
  const auto num_chains = static_cast<Index>(chains.size());
  Vec out(chains.front().cols());
  Mat x(draws, num_chains);  // [draws, chains], the diagnostics' shape
  for (Index k = 0; k < out.size(); ++k) {
    for (Index c = 0; c < num_chains; ++c) x.col(c) = chains[static_cast<std::size_t>(c)].col(k).head(draws);
    out(k) = rank_normalized_rhat(x, 2).max;
  }
  return out;
}

}  // namespace uqnn::diagnostics
