#pragma once
/// @file Metropolis-adjusted Langevin algorithm (seed 001): proposal
/// w' = w + eps^2/2 grad log p(w) + eps xi, xi ~ N(0, I), accepted with the full Metropolis-Hastings
/// ratio of the asymmetric proposal, log alpha = log p(w') - log p(w) + log q(w | w') - log q(w' | w),
/// log q(b | a) = -|b - a - eps^2/2 grad log p(a)|^2 / (2 eps^2).
///
/// References: seed 001 ("MALA"); Roberts & Tweedie (1996), Bernoulli 2(4), 341-363; BlackJAX `mala`.
#include "uqnn/mcmc/gradient_state.hpp"
#include "uqnn/core/rng.hpp"

namespace uqnn {

struct MalaParams {
  double step_size = 0.1;  ///< eps > 0
  void validate() const;
};

struct MalaInfo {
  double accept_prob = 0.0;  ///< min(1, exp(log alpha)); 0 for a non-finite proposal
  bool is_accepted = false;
  bool is_divergent = false; ///< the proposal's log density or gradient was not finite
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

/// log q(to | from) up to a constant for MALA with step size eps and gradient grad_from at `from`.
double mala_log_proposal(const Vec& to, const Vec& from, const Vec& grad_from, double step_size);

}  // namespace uqnn
