#pragma once
/// @file Hamiltonian Monte Carlo with a fixed number of leapfrog steps (seed 001), a diagonal or
/// dense inverse metric, and optional jitter of the step size and of the path length.
///
/// References: seed 001 ("Hamiltonian Monte Carlo"); Neal (2011), "MCMC using Hamiltonian
/// dynamics", sec. 5.3 and 5.4.2.2 (jitter); BlackJAX `hmc`.
#include "uqnn/mcmc/gradient_state.hpp"
#include "uqnn/mcmc/metric.hpp"

namespace uqnn {

struct HmcParams {
  double step_size = 0.1;          ///< eps > 0
  int num_leapfrog_steps = 10;     ///< L >= 1
  /// Inverse metric; an empty optional-like default (dim 0 diagonal) means the unit metric.
  Metric metric = DiagonalMetric{};
  /// Each transition uses eps * (1 + u), u ~ U(-jitter, jitter); in [0, 1). 0 = off.
  double step_size_jitter = 0.0;
  /// When true each transition uses L' ~ U{1, ..., L} leapfrog steps.
  bool jitter_path_length = false;
  double divergence_threshold = 1000.0;  ///< divergent when H - H0 > this; > 0
  /// Throws std::invalid_argument naming the parameter and its valid range. `dim` checks the metric.
  void validate(Index dim) const;
};

struct HmcInfo {
  double accept_prob = 0.0;   ///< min(1, exp(H0 - H')); 0 for a non-finite proposal
  bool is_accepted = false;
  bool is_divergent = false;  ///< non-finite trajectory or H' - H0 > divergence_threshold
  double energy = 0.0;        ///< H at the returned state
  int num_leapfrog_steps = 0;
  double step_size = 0.0;     ///< the (jittered) step size used
};

struct HmcStep {
  GradientState state;
  HmcInfo info;
};

/// The HMC kernel: a const object over a log density; step() is a pure function of its arguments
/// (all randomness from `rng`).
class Hmc {
 public:
  explicit Hmc(const LogDensity& density) : density_(&density) {}
  GradientState init(const Vec& position) const { return make_gradient_state(*density_, position); }
  /// One HMC transition (seed 001): p ~ N(0, M), L leapfrog steps, accept with min(1, e^{H0-H'}).
  HmcStep step(Rng& rng, const GradientState& state, const HmcParams& params) const;
  const LogDensity& density() const { return *density_; }

 private:
  const LogDensity* density_;
};

/// The metric to use: params.metric, or the unit metric when it is empty.
Metric resolve_metric(const Metric& metric, Index dim);

}  // namespace uqnn
