#include "uqnn/hybrid/sensitivity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "uqnn/core/error.hpp"

namespace uqnn {

Index SensitivityReport::num_kept(double tau) const {
  require(tau > 0 && tau <= 1, "sensitivity threshold tau", "(0, 1]");
  // Eq. 18; the 1e-12 absorbs rounding in the cumulative sum so that tau = 1 keeps everything.
  Index n = 0;
  while (n < cumulative_ratio.size() && cumulative_ratio[n] <= tau + 1e-12) ++n;
  return std::max<Index>(n, std::min<Index>(1, cumulative_ratio.size()));
}

IndexVec SensitivityReport::sensitive_subset(double tau) const {
  const Index n = num_kept(tau);
  IndexVec subset(ranking.begin(), ranking.begin() + n);
  std::sort(subset.begin(), subset.end());
  return subset;
}

SensitivityReport rank_sensitivities(Vec sensitivity) {
  SensitivityReport r;
  const Index P = sensitivity.size();
  r.ranking.resize(static_cast<std::size_t>(P));
  std::iota(r.ranking.begin(), r.ranking.end(), Index{0});
  std::stable_sort(r.ranking.begin(), r.ranking.end(), [&](Index a, Index b) { return sensitivity[a] > sensitivity[b]; });
  r.total = sensitivity.sum();
  r.cumulative_ratio.resize(P);
  double running = 0.0;
  for (Index k = 0; k < P; ++k) {
    running += sensitivity[r.ranking[static_cast<std::size_t>(k)]];
    r.cumulative_ratio[k] = r.total > 0 ? running / r.total : static_cast<double>(k + 1) / static_cast<double>(P);
  }
  r.sensitivity = std::move(sensitivity);
  return r;
}

SensitivityReport compute_sensitivities(const Model& model, const Vec& mean, const Vec& sd, const Mat& X, Index chunk) {
  const Index P = model.num_params();
  if (mean.size() != P || sd.size() != P)
    throw std::invalid_argument(fmt::format("sensitivities: mean and sd need {} entries (the network's parameters), got {} and {}",
                                            P, mean.size(), sd.size()));
  require(X.cols() >= 1, "sensitivity inputs", "at least one column");
  require(chunk >= 1, "sensitivity chunk", ">= 1");
  Vec sum_squares = Vec::Zero(P);
  for (Index start = 0; start < X.cols(); start += chunk) {
    const Index n = std::min(chunk, X.cols() - start);
    const Mat J = model.jacobian(mean, X.middleCols(start, n));  // [n * outputs, P]
    sum_squares += J.colwise().squaredNorm().transpose();
  }
  const double rows = static_cast<double>(X.cols()) * static_cast<double>(model.output_dim());
  return rank_sensitivities(sd.array().square().matrix().cwiseProduct(sum_squares) / rows);  // eq. 17
}

IndexVec random_subset(Index dim, Index size, Rng& rng) {
  require(size >= 0 && size <= dim, "random subset size", "[0, dim]");
  IndexVec perm = rng.permutation(dim);
  perm.resize(static_cast<std::size_t>(size));
  std::sort(perm.begin(), perm.end());
  return perm;
}

std::vector<BlockSensitivity> block_sensitivities(const ParamLayout& layout, const Vec& sensitivity) {
  std::vector<BlockSensitivity> out;
  for (const auto& b : layout.blocks()) {
    if (b.offset + b.size() > sensitivity.size()) break;  // extras beyond the network
    BlockSensitivity s{b.name, b.rows, b.cols, b.size(), 0.0, 0.0};
    const auto seg = sensitivity.segment(b.offset, b.size());
    s.sum = seg.sum();
    s.max = seg.maxCoeff();
    out.push_back(s);
  }
  return out;
}

}  // namespace uqnn
