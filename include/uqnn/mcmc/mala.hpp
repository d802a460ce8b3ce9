#pragma once
/// @file Metropolis-adjusted Langevin algorithm (seed 001), preconditioned by an inverse metric D,
/// diagonal or dense (unit when empty): proposal
/// w' = w + eps^2/2 D grad log p(w) + eps D^(1/2) xi, xi ~ N(0, I), accepted with the full
/// Metropolis-Hastings ratio of the asymmetric proposal,
/// log alpha = log p(w') - log p(w) + log q(w | w') - log q(w' | w),
/// log q(b | a) = -r^T D^-1 r / (2 eps^2), r = b - a - eps^2/2 D grad log p(a)
/// (D^(1/2) is the Cholesky factor L of D = L L^T when D is dense).
/// With D = I it is seed 001's MALA; D is what Stan's warmup learns for HMC (MALA is HMC with one
/// leapfrog step, Neal 2011 sec. 5.2), so badly scaled posteriors do not force eps down to the
/// smallest scale.
///
/// References: seed 001 ("MALA"); Roberts & Tweedie (1996), Bernoulli 2(4), 341-363; Girolami &
/// Calderhead (2011) for preconditioned MALA; BlackJAX `mala`.
#include "uqnn/core/rng.hpp"
#include "uqnn/mcmc/gradient_state.hpp"
#include "uqnn/mcmc/metric.hpp"

namespace uqnn {

struct MalaParams {
  double step_size = 0.1;           ///< eps > 0
  Metric metric = DiagonalMetric{};  ///< diagonal or dense; dimension 0 means the unit metric
  /// Throws std::invalid_argument naming the parameter and its valid range; `dim` checks the metric.
  void validate(Index dim) const;
};

struct MalaInfo {
  double accept_prob = 0.0;  ///< min(1, exp(log alpha)); 0 for a non-finite proposal
  bool is_accepted = false;
  bool is_divergent = false; ///< the proposal's log density or gradient was not finite
  double step_size = 0.0;    ///< the eps used
};

struct MalaStep {
  GradientState state;
  MalaInfo info;
};

class Mala {
 public:
  explicit Mala(const LogDensity& density) : density_(&density) {}
  GradientState init(const Vec& position) const { return make_gradient_state(*density_, position); }
  MalaStep step(Rng& rng, const GradientState& state, const MalaParams& params) const;
  const LogDensity& density() const { return *density_; }

 private:
  const LogDensity* density_;
};

/// log q(to | from) up to a constant for MALA with step size eps, gradient grad_from at `from` and
/// inverse metric `metric` (of dimension 0: unit).
double mala_log_proposal(const Vec& to, const Vec& from, const Vec& grad_from, double step_size,
                         const Metric& metric = DiagonalMetric{});

}  // namespace uqnn
