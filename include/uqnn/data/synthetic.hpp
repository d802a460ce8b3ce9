#pragma once
/// @file Synthetic data sets of the source papers (embedded so `uqnn demo` and tests need no files).
#include "uqnn/data/dataset.hpp"

namespace uqnn {

/// Seed 000 section 4.1.2 (sine case II): x uniform on [-1, -0.2] U [0.2, 1] (half the points in
/// each interval), y = 4 sin(4x) + 5 sin(-12x + pi/2) + N(0, noise^2).
Dataset sine_case_ii(Index n = 20, double noise = 0.05, std::uint64_t seed = 2024);
/// The noise-free curve of sine_case_ii.
double sine_case_ii_truth(double x);

/// Seed 000 section 4.1.1 (sine case I, Table 1 "True"): x as sine_case_ii,
/// y = 0.4 sin(4x) + 0.5 sin(-3x + 1.57) + N(0, noise^2) (eq. 21 with w1 = 4, w2 = -3, phi1 = 0,
/// phi2 = 1.57, a = 0.4, b = 0.5).
Dataset sine_case_i(Index n = 20, double noise = 1e-3, std::uint64_t seed = 2024);
double sine_case_i_truth(double x);

/// Seed 002 section 5.1: y = sin(3 pi x) + 0.3 cos(9 pi x) + 0.5 sin(7 pi x) + N(0, noise^2), half the
/// points from U(-0.75, -0.25) and half from U(0.25, 0.75).
Dataset extrapolation_curve(Index n = 20, double noise = 0.5, std::uint64_t seed = 2024);
double extrapolation_curve_truth(double x);

}  // namespace uqnn
