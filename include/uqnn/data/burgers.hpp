#pragma once
/// @file Viscous Burgers' equation on (0, 1) with periodic boundaries (seed 000 section 4.2.1,
/// eqs. 22-24): s_t + s s_x = nu s_xx, s(x, 0) = u(x), the data of the Bayesian DeepONet example.
///
/// Solver: Fourier pseudo-spectral in x on `num_points` equispaced points, the 2/3 rule against
/// aliasing of s s_x = (s^2 / 2)_x, and fourth-order Runge-Kutta with an integrating factor for the
/// stiff viscous term (Trefethen, "Spectral Methods in MATLAB", 2000, ch. 10; the "split-step"
/// family the paper's data code belongs to). Checked against the Cole-Hopf solution in
/// tests/unit/data/burgers_test.cpp.
#include "uqnn/core/rng.hpp"

namespace uqnn {

struct BurgersParams {
  double viscosity = 0.01;        ///< nu > 0 (seed 000: 0.01)
  Index num_points = 500;         ///< solver grid, even, a multiple of output_points - 1
  double time_step = 5e-4;        ///< dt > 0; (final_time / (output_times - 1)) / dt must be an integer
  double final_time = 1.0;        ///< > 0
  Index output_points = 101;      ///< x_i = i / (output_points - 1), i = 0 .. output_points - 1 (x = 1 repeats x = 0)
  Index output_times = 101;       ///< t_j = j final_time / (output_times - 1)
  void validate() const;
};

/// s(x_i, t_j) as [output_points, output_times] from the initial values `u0` on the solver grid
/// x_k = k / num_points (k < num_points). Throws std::runtime_error when the solution blows up
/// (non-finite values: time step too large for the data).
Mat solve_burgers(const Vec& u0, const BurgersParams& params);

/// A draw of a periodic Gaussian random field on x_k = k / n (k < n) with covariance operator
/// sigma^2 (-Laplacian + tau^2 I)^(-alpha) on (0, 1): Karhunen-Loeve sum over the Fourier modes
/// |m| <= max_mode with eigenvalues sigma^2 ((2 pi m)^2 + tau^2)^(-alpha).
Vec sample_periodic_grf(Index n, Rng& rng, double sigma = 25.0, double tau = 5.0, double alpha = 2.0, Index max_mode = 64);

}  // namespace uqnn
