#pragma once
/// @file StepSizeSchedule: the step size eps_t of stochastic-gradient MCMC as a function of the
/// gradient-step counter t = 0, 1, 2, ...
///
/// Why: SG-MCMC has no Metropolis correction, so its bias is controlled only by the step size;
/// Welling & Teh (2011) let eps_t decrease under the Robbins-Monro conditions
/// (sum eps_t = inf, sum eps_t^2 < inf, satisfied by the polynomial schedule with 0.5 < gamma <= 1),
/// while seed 002 (App. E) uses a step decay (eps0 = 1e-3, factor 0.9 every 5000 iterations).
/// References: Welling & Teh (2011), ICML, sec. 3; Robbins & Monro (1951); seed 002 App. E;
/// seed 004 ("SGLD ... Robbins-Monro conditions").
#include <string>

#include "uqnn/core/types.hpp"

namespace uqnn::sgmcmc {

/// eps_t for t = 0, 1, ... (t counts gradient steps since the chain was initialised).
struct StepSizeSchedule {
  enum class Kind {
    Constant,    ///< eps_t = step_size
    Polynomial,  ///< eps_t = a (b + t)^(-gamma)  (Welling & Teh 2011)
    StepDecay,   ///< eps_t = step_size * factor^floor(t / every)  (seed 002 App. E)
  };

  Kind kind = Kind::Constant;
  double step_size = 1e-4;  ///< Constant: eps; StepDecay: eps0. Valid: > 0, finite.
  double a = 1e-4;          ///< Polynomial: scale a > 0.
  double b = 1.0;           ///< Polynomial: offset b > 0 (so eps_0 = a b^-gamma is finite).
  double gamma = 0.55;      ///< Polynomial: decay exponent in [0, 1] (Robbins-Monro needs (0.5, 1]).
  double factor = 0.9;      ///< StepDecay: factor in (0, 1].
  Index every = 5000;       ///< StepDecay: period in gradient steps, >= 1.

  static StepSizeSchedule constant(double step_size);
  static StepSizeSchedule polynomial(double a, double b, double gamma);
  static StepSizeSchedule step_decay(double initial_step_size, double factor, Index every);

  /// eps_t; t >= 0 (throws std::invalid_argument for t < 0).
  double operator()(Index t) const;
  /// The largest step size over all t (every schedule here is non-increasing, so eps_0).
  double max_step_size() const { return (*this)(0); }
  /// Throws std::invalid_argument naming the parameter and its valid range.
  void validate() const;
  /// e.g. "polynomial(a=0.001, b=1, gamma=0.55)".
  std::string describe() const;
};

}  // namespace uqnn::sgmcmc
