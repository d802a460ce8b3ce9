#include "uqnn/data/synthetic.hpp"

#include <cmath>
#include <numbers>

#include "uqnn/core/rng.hpp"

namespace uqnn {

namespace {
Dataset two_interval_data(Index n, double noise, std::uint64_t seed, double a, double b, double (*truth)(double),
                          const std::string& source) {
  Rng rng(seed, 0x5e11);
  Dataset d;
  d.inputs.resize(1, n);
  d.targets.resize(1, n);
  for (Index i = 0; i < n; ++i) {
    const double u = rng.uniform(a, b);
    const double x = i < n / 2 ? -u : u;
    d.inputs(0, i) = x;
    d.targets(0, i) = truth(x) + noise * rng.normal();
  }
  d.input_names = {"x"};
  d.target_names = {"y"};
  d.source = source;
  return d;
}
}  // namespace

double sine_case_ii_truth(double x) { return 4 * std::sin(4 * x) + 5 * std::sin(-12 * x + std::numbers::pi / 2); }

Dataset sine_case_ii(Index n, double noise, std::uint64_t seed) {
  return two_interval_data(n, noise, seed, 0.2, 1.0, &sine_case_ii_truth,
                           "sine case II (Thiagarajan et al. 2025, section 4.1.2)");
}

double sine_case_i_truth(double x) { return 0.4 * std::sin(4 * x) + 0.5 * std::sin(-3 * x + 1.57); }

Dataset sine_case_i(Index n, double noise, std::uint64_t seed) {
  return two_interval_data(n, noise, seed, 0.2, 1.0, &sine_case_i_truth,
                           "sine case I (Thiagarajan et al. 2025, section 4.1.1)");
}

double extrapolation_curve_truth(double x) {
  const double pi = std::numbers::pi;
  return std::sin(3 * pi * x) + 0.3 * std::cos(9 * pi * x) + 0.5 * std::sin(7 * pi * x);
}

Dataset extrapolation_curve(Index n, double noise, std::uint64_t seed) {
  return two_interval_data(n, noise, seed, 0.25, 0.75, &extrapolation_curve_truth,
                           "1-D extrapolation curve (Wu et al. 2024, section 5.1)");
}

}  // namespace uqnn
