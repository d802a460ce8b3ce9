#include "uqnn/mcmc/gradient_state.hpp"

#include <cmath>
#include <fmt/format.h>

#include "uqnn/core/error.hpp"

namespace uqnn {

GradientState make_gradient_state(const LogDensity& density, const Vec& position) {
  if (position.size() != density.dim())
    throw InputError(fmt::format("initial point has {} coordinates; the log density has dim {}", position.size(),
                                 density.dim()));
  if (!position.allFinite()) throw InputError("initial point has a non-finite coordinate");
  GradientState state{position, 0.0, Vec(density.dim())};
  state.log_density = density.log_density_and_grad(position, state.grad);
  if (!std::isfinite(state.log_density))
    throw InputError(fmt::format("log density at the initial point is not finite ({}); choose another initial point",
                                 state.log_density));
  if (!state.grad.allFinite())
    throw InputError("gradient of the log density at the initial point is not finite; choose another initial point");
  return state;
}

}  // namespace uqnn
