#pragma once
/// @file The data set of `uqnn demo`: Thiagarajan et al.'s sine case II, embedded so the demo needs no
/// input files.
#include "uqnn/data/dataset.hpp"
#include "uqnn/data/synthetic.hpp"

namespace uqnn {

/// `n` points x uniform on [-1, -0.2] U [0.2, 1], y = 4 sin(4x) + 5 sin(-12x + pi/2) + N(0, noise^2).
inline Dataset demo_dataset(Index n, double noise) { return sine_case_ii(n, noise); }

}  // namespace uqnn
