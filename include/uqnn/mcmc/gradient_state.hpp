#pragma once
/// @file The state shared by the gradient-based kernels (HMC, MALA, NUTS): a position with its
/// log density and gradient cached, so a rejected proposal costs no re-evaluation.
#include "uqnn/core/log_density.hpp"

namespace uqnn {

struct GradientState {
  Vec position;
  double log_density = 0.0;
  Vec grad;  ///< gradient of log p at position
};

/// Evaluates the density at `position`; throws uqnn::InputError naming the problem when the
/// log density or its gradient is not finite (a chain cannot start there).
GradientState make_gradient_state(const LogDensity& density, const Vec& position);

}  // namespace uqnn
