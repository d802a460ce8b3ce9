#pragma once
/// @file Slice sampling, one coordinate at a time (Neal 2003): for each coordinate, a level
/// log y = log p(x) - E with E ~ Exp(1), an interval of width w placed at random around x_i and
/// stepped out until both ends are outside the slice (Fig. 3), then shrunk towards x_i until a
/// point inside the slice is drawn (Fig. 5). Every update leaves p invariant and needs no gradient,
/// so the sampler suits densities without derivatives and is exact for any width; the width only
/// sets its cost. Warmup sets each coordinate's width to twice its mean absolute move, as PyMC's
/// Slice does.
///
/// References: R. M. Neal (2003), "Slice sampling", Annals of Statistics 31(3), 705-767,
/// sec. 4.1-4.2; PyMC `Slice`.
#include <memory>
#include <string>

#include "uqnn/core/rng.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/core/log_density.hpp"

namespace uqnn {

struct SliceParams {
  /// Interval width per coordinate; empty: initial_width for every coordinate.
  Vec widths;
  double initial_width = 1.0;  ///< > 0
  /// Neal's m: at most this many widths stepped out per coordinate (the interval stays finite on a
  /// density whose slices are unbounded); >= 1.
  int max_steps_out = 100;
  void validate(Index dim) const;
};

struct SliceState {
  Vec position;
  double log_density = 0.0;
};

struct SliceInfo {
  int num_evaluations = 0;  ///< log-density evaluations in this sweep
};

struct SliceStep {
  SliceState state;
  SliceInfo info;
};

/// The kernel: init / step over one sweep of all coordinates (in index order).
class SliceKernel {
 public:
  explicit SliceKernel(const LogDensity& density) : density_(&density) {}
  SliceState init(const Vec& position) const;
  SliceStep step(Rng& rng, const SliceState& state, const SliceParams& params) const;

 private:
  /// log p with any non-finite value as -inf (outside every slice).
  double log_density(const Vec& x) const;
  const LogDensity* density_;
};

/// One chain for the multi-chain driver: warmup adapts the widths (2 x mean |move| per coordinate).
class SliceChainSampler : public ChainSampler {
 public:
  SliceChainSampler(std::shared_ptr<const LogDensity> density, SliceParams params);
  void init(const Vec& position) override;
  DrawStats transition(Rng& rng, bool warmup) override;
  const Vec& position() const override { return state_.position; }
  Index dim() const override { return density_->dim(); }
  std::string describe() const override;
  void archive(StateArchive& archive) override;

 private:
  std::shared_ptr<const LogDensity> density_;
  SliceKernel kernel_;
  SliceParams params_;
  SliceState state_;
  Vec mean_move_;  ///< running mean of |x_i(t+1) - x_i(t)| over warmup
  long warmup_sweeps_ = 0;
};

}  // namespace uqnn
