#include "uqnn/data/burgers.hpp"

#include <unsupported/Eigen/FFT>

#include <cmath>
#include <complex>
#include <numbers>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {

void BurgersParams::validate() const {
  require(viscosity > 0, "burgers viscosity", "> 0");
  require(output_points >= 2 && output_times >= 2, "burgers output_points and output_times", ">= 2");
  require(num_points >= 4 && num_points % 2 == 0 && num_points % (output_points - 1) == 0, "burgers num_points",
          "even and a multiple of output_points - 1");
  require(final_time > 0 && time_step > 0, "burgers final_time and time_step", "> 0");
  const double steps = final_time / static_cast<double>(output_times - 1) / time_step;
  require(std::abs(steps - std::round(steps)) < 1e-9 && steps >= 1, "burgers time_step",
          "a divisor of final_time / (output_times - 1)");
}

Mat solve_burgers(const Vec& u0, const BurgersParams& p) {
  p.validate();
  const Index N = p.num_points;
  if (u0.size() != N) throw std::invalid_argument("burgers: u0 must have num_points values");
  using Complex = std::complex<double>;
  using CVec = Eigen::VectorXcd;
  Eigen::FFT<double> fft;
  // Wavenumbers 2 pi m; the Nyquist mode and the top third are zeroed (2/3 rule).
  Vec k(N), keep(N);
  for (Index j = 0; j < N; ++j) {
    const Index m = j <= N / 2 ? j : j - N;
    k[j] = 2 * std::numbers::pi * static_cast<double>(m);
    keep[j] = (3 * std::abs(m) < N && j != N / 2) ? 1.0 : 0.0;
  }
  const double dt = p.time_step;
  Vec E(N), E2(N);
  for (Index j = 0; j < N; ++j) {
    E[j] = std::exp(-p.viscosity * k[j] * k[j] * dt / 2);
    E2[j] = E[j] * E[j];
  }
  CVec u_hat(N), physical(N), square_hat(N);
  Vec u(N);
  const auto nonlinear = [&](const CVec& v) {  // -(i k / 2) FFT(u^2), u = IFFT(v)
    fft.inv(physical, v);
    u = physical.real();
    fft.fwd(square_hat, CVec(u.cwiseAbs2().cast<Complex>()));
    CVec out(N);
    for (Index j = 0; j < N; ++j) out[j] = Complex(0.0, -0.5 * k[j] * keep[j]) * square_hat[j];
    return out;
  };
  fft.fwd(u_hat, CVec(u0.cast<Complex>()));
  const Index stride = N / (p.output_points - 1);
  const auto steps_per_output = static_cast<Index>(std::llround(p.final_time / static_cast<double>(p.output_times - 1) / dt));
  Mat s(p.output_points, p.output_times);
  const auto record = [&](Index j) {
    fft.inv(physical, u_hat);
    for (Index i = 0; i < p.output_points; ++i) s(i, j) = physical[(i * stride) % N].real();
    if (!s.col(j).allFinite()) throw std::runtime_error("burgers: the solution blew up (reduce time_step)");
  };
  record(0);
  for (Index j = 1; j < p.output_times; ++j) {
    for (Index n = 0; n < steps_per_output; ++n) {
      // Integrating-factor RK4 for v_t = L v + N(v), L = -nu k^2 diagonal (Trefethen, p. 111).
      const CVec k1 = nonlinear(u_hat);
      const CVec k2 = nonlinear(E.cwiseProduct(u_hat + dt / 2 * k1));
      const CVec k3 = nonlinear(E.cwiseProduct(u_hat) + dt / 2 * k2);
      const CVec k4 = nonlinear(E2.cwiseProduct(u_hat) + dt * E.cwiseProduct(k3));
      u_hat = E2.cwiseProduct(u_hat) + dt / 6 * (E2.cwiseProduct(k1) + 2 * E.cwiseProduct(k2 + k3) + k4);
    }
    record(j);
  }
  return s;
}

Vec sample_periodic_grf(Index n, Rng& rng, double sigma, double tau, double alpha, Index max_mode) {
  require(n >= 2, "grf points", ">= 2");
  require(sigma > 0 && tau > 0 && alpha > 0 && max_mode >= 0, "grf sigma, tau, alpha, max_mode", "> 0 (max_mode >= 0)");
  const auto eigenvalue = [&](Index m) { return sigma * sigma * std::pow(std::pow(2 * std::numbers::pi * m, 2) + tau * tau, -alpha); };
  Vec u = Vec::Constant(n, std::sqrt(eigenvalue(0)) * rng.normal());
  for (Index m = 1; m <= max_mode; ++m) {
    // Orthonormal basis of L2(0, 1): sqrt(2) cos(2 pi m x), sqrt(2) sin(2 pi m x).
    const double a = std::sqrt(2 * eigenvalue(m)) * rng.normal(), b = std::sqrt(2 * eigenvalue(m)) * rng.normal();
    for (Index i = 0; i < n; ++i) {
      const double w = 2 * std::numbers::pi * static_cast<double>(m * i) / static_cast<double>(n);
      u[i] += a * std::cos(w) + b * std::sin(w);
    }
  }
  return u;
}

}  // namespace uqnn
