#pragma once
/// @file The draws of a fit, chain by chain, with the sampler's statistics beside them: the one
/// shape in which every method hands its draws to every writer (draws.csv, posterior.nc, the
/// diagnostics, figures and predictions) and the Python module reads them.
#include <stdexcept>
#include <utility>
#include <vector>

#include "uqnn/core/draw_stats.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

/// One chain: an MCMC chain, an ensemble or SWAG member, or an approximation's independent samples.
struct DrawChain {
  Index id = 0;                  ///< its index in the whole run (a --part run or a merge keeps the run's ids)
  Mat values;                    ///< [draws, K]: row d is draw d (the run driver's layout, moved in whole)
  std::vector<DrawStats> stats;  ///< one per draw for MCMC, empty otherwise
  Index size() const { return values.rows(); }
};

/// Chains x draws x K, chains in increasing id, each holding its own draws; chains may differ in
/// length (members, a run stopped by a signal). Draw s counts chain-major: chain 0's draws, then
/// chain 1's (the row order of draws.csv).
class Draws {
 public:
  Draws() = default;
  /// One chain (id 0) of independent draws: an approximation's samples.
  static Draws independent(const std::vector<Vec>& draws);
  /// One chain per draw (chain j holds draw j): ensemble members, MAP's single point.
  static Draws one_per_chain(const std::vector<Vec>& draws);

  /// Appends a chain. Throws std::invalid_argument unless it has draws, its id exceeds the last
  /// chain's, it has the other chains' K, and one statistic per draw exactly when the others do.
  void add_chain(Index id, Mat values, std::vector<DrawStats> stats = {});

  bool empty() const { return size_ == 0; }
  Index size() const { return size_; }  ///< draws over all chains
  Index dim() const { return chains_.empty() ? 0 : chains_.front().values.cols(); }
  Index num_chains() const { return static_cast<Index>(chains_.size()); }
  const std::vector<DrawChain>& chains() const { return chains_; }
  const DrawChain& chain(Index c) const { return chains_.at(static_cast<std::size_t>(c)); }
  bool has_stats() const { return !chains_.empty() && !chains_.front().stats.empty(); }

  /// Draw s (chain-major) and its statistics.
  Vec draw(Index s) const;
  const DrawStats& stats(Index s) const;
  /// Calls f(s, theta) for every draw in order, theta a reused vector.
  template <typename F>
  void for_each(F&& f) const {
    Vec theta(dim());
    Index s = 0;
    for (const DrawChain& chain : chains_)
      for (Index d = 0; d < chain.size(); ++d, ++s) {
        theta = chain.values.row(d).transpose();
        f(s, static_cast<const Vec&>(theta));
      }
  }
  /// f(statistics) of every draw, in draw order; empty when the draws have no statistics.
  template <typename F>
  std::vector<double> stat_values(F&& f) const {
    std::vector<double> out;
    out.reserve(has_stats() ? static_cast<std::size_t>(size_) : 0);
    for (const DrawChain& chain : chains_)
      for (const DrawStats& s : chain.stats) out.push_back(static_cast<double>(f(s)));
    return out;
  }
  /// The id of every draw's chain, in draw order (draws.csv's chain column).
  std::vector<Index> chain_ids() const;

  /// Whether the chains are chains to compare (MCMC): equally long, with more than one draw each.
  /// Else ArviZ's files and the diagnostics treat the draws as one chain (ensemble members).
  bool comparable_chains() const;
  /// A per-draw quantity (in draw order) as [draws, chains], every chain cut to the shortest: the
  /// layout of the diagnostics (diagnostics/summary.hpp).
  Mat by_chain(const std::vector<double>& per_draw) const;
  /// Parameter k as [draws, chains], cut to the shortest chain.
  Mat parameter_by_chain(Index k) const;

 private:
  std::vector<DrawChain> chains_;
  Index size_ = 0;
};

}  // namespace uqnn
