#pragma once
/// @file Random numbers with one independent stream per (seed, stream id).
///
/// Why: chains and ensemble members each draw from their own stream derived from
/// (seed, chain), so results do not depend on which thread runs which chain.
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>

#include <boost/random/normal_distribution.hpp>

#include "uqnn/core/types.hpp"

namespace uqnn {

class Rng {
 public:
  /// Stream `stream` of the generator family seeded by `seed`.
  explicit Rng(std::uint64_t seed = 0, std::uint64_t stream = 0) {
    std::seed_seq sequence{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                           static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32),
                           0x75716e6eU /* "uqnn" */};
    engine_.seed(sequence);
  }

  /// Uniform on [0, 1) with 53 random bits (same values on every platform).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// Uniform on [lower, upper).
  double uniform(double lower, double upper) { return lower + (upper - lower) * uniform(); }
  /// Uniform integer in [0, n).
  std::uint64_t uniform_index(std::uint64_t n) {
    // Rejection sampling: unbiased and platform independent (unlike std::uniform_int_distribution).
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t r;
    do { r = engine_(); } while (r >= limit);
    return r % n;
  }
  /// Standard normal by the Marsaglia polar method (platform independent, unlike std::normal_distribution).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double factor = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * factor;
    has_spare_ = true;
    return u * factor;
  }
  double normal(double mean, double sd) { return mean + sd * normal(); }
  /// Fills `z` with standard normals by the ziggurat method (Marsaglia & Tsang 2000; Boost.Random's
  /// normal_distribution, 128 layers with an exact tail): one engine call for most variates against
  /// the polar method's 2.5 plus a log and a square root per pair; 3.9 against 8.5 ns a variate on
  /// an Intel Xeon host (2026-11-29). For the K-vectors a kernel draws every step (MCLMC's refresh). A separate stream of values from
  /// normal(): it uses the engine alone, so a checkpoint of the engine restores it.
  void fill_normal(Vec& z) {
    boost::random::normal_distribution<double> standard_normal;
    for (Index i = 0; i < z.size(); ++i) z[i] = standard_normal(engine_);
  }
  Vec normal_vector(Index n) {
    Vec z(n);
    for (Index i = 0; i < n; ++i) z[i] = normal();
    return z;
  }
  /// Exponential(1) variate.
  double exponential() { return -std::log1p(-uniform()); }
  /// A random permutation of 0..n-1 (Fisher-Yates).
  IndexVec permutation(Index n) {
    IndexVec p(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
    for (Index i = n - 1; i > 0; --i) std::swap(p[static_cast<std::size_t>(i)], p[uniform_index(static_cast<std::uint64_t>(i + 1))]);
    return p;
  }
  std::mt19937_64& engine() { return engine_; }
  /// The normal variate kept from the last polar pair, if any (checkpoints save it with the engine).
  std::pair<double, bool> spare() const { return {spare_, has_spare_}; }
  void set_spare(double spare, bool has_spare) { spare_ = spare, has_spare_ = has_spare; }

 private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace uqnn
