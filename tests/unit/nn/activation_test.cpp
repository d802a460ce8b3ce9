// The activations' accuracy (issue 19): for tanh, sigmoid, silu, sine and the cosine of sine's
// derivative, in double (float uses Eigen's kernels, activation.hpp), the largest distance in ulps from a correctly rounded reference
// over (a) a dense sweep of [-20, 20], (b) magnitudes log-spaced from the smallest denormal to the
// largest finite value, both signs, (c) zeros, infinities, NaN and the named hard cases. References:
// x87 long double (64-bit significand, its libm within an ulp of that, 2^-11 of a double ulp) for
// double. Also every packet width (the tail through the padded
// buffer included) gives the same values as `activate`, and the derivatives match the formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "uqnn/nn/activation.hpp"

namespace uqnn {
namespace {

long double reference(Activation f, long double x) {
  switch (f) {
    case Activation::Tanh: return tanhl(x);
    case Activation::Sigmoid: return 1.0L / (1.0L + expl(-x));
    case Activation::Silu: return std::isinf(x) ? (x > 0 ? x : -0.0L) : x / (1.0L + expl(-x));
    case Activation::Sine: return sinl(x);
    default: return x;
  }
}

/// |y - ref| in units of the last place of T at ref (the smaller of the ulps at y and at ref, so
/// that a power of two is not judged by the coarser spacing above it). Specials must match exactly.
template <typename T>
long double ulp_error(T y, long double ref) {
  if (std::isnan(ref) || std::isnan(y)) return std::isnan(ref) && std::isnan(y) ? 0 : INFINITY;
  if (std::isinf(ref) || std::isinf(y)) return static_cast<long double>(y) == ref ? 0 : INFINITY;
  constexpr int digits = std::numeric_limits<T>::digits;
  constexpr int min_exponent = std::numeric_limits<T>::min_exponent - 1;
  const auto ulp = [&](long double v) {
    const int e = v == 0 ? min_exponent : std::max(ilogbl(v), min_exponent);
    return ldexpl(1.0L, e - (digits - 1));
  };
  return fabsl(static_cast<long double>(y) - ref) / std::min(ulp(ref), ulp(static_cast<long double>(y)));
}

template <typename T>
std::vector<T> dense_sweep() {
  std::vector<T> xs;
  for (int i = -400000; i <= 400000; ++i) xs.push_back(static_cast<T>(i * 5e-5L) + static_cast<T>(i % 13) * T(1e-9));
  return xs;
}

template <typename T>
std::vector<T> magnitude_sweep() {
  std::vector<T> xs;
  const T inf = std::numeric_limits<T>::infinity();
  for (T v = std::numeric_limits<T>::denorm_min(); std::isfinite(v);
       v = std::max(static_cast<T>(v * T(1.0007)), std::nextafter(v, inf))) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  xs.push_back(std::numeric_limits<T>::max());
  xs.push_back(-std::numeric_limits<T>::max());
  return xs;
}

template <typename T>
std::vector<T> special_values() {
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> xs = {T(0), -T(0), inf, -inf, std::numeric_limits<T>::quiet_NaN(),
                       std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min(),
                       std::numeric_limits<T>::min(), -std::numeric_limits<T>::min(), T(0.55), T(-0.55),
                       T(19.1), T(-19.1), T(9.01), T(-9.01), T(87), T(-87), T(-103.5), T(-108), T(-110)};
  if constexpr (std::is_same_v<T, double>) {
    for (double v : {1e300, -1e300, -708.5, -745.0, -745.2, -750.0, -752.0, -800.0, -1000.0, 1e5, -1e5, 1e5 + 1, 1e22})
      xs.push_back(v);
  } else {
    for (float v : {1e30f, -1e30f, 1e4f, -1e4f, 1e4f + 1, 3e38f}) xs.push_back(v);
  }
  return xs;
}

template <typename T>
struct Worst {
  long double ulps = 0;
  T at = 0;
};

/// The largest error of activate(f) (or of the cosine kernel, for `cosine`) over `xs`; the sign of
/// a zero result must match the reference's for tanh, silu and sine.
template <typename T>
Worst<T> worst_error(Activation f, const std::vector<T>& xs, bool cosine = false) {
  MatT<T> Z = Eigen::Map<const MatT<T>>(xs.data(), static_cast<Index>(xs.size()), 1), A;
  if (cosine) {  // through the backward pass: dA = 1 gives cos(Z)
    A = MatT<T>::Ones(Z.rows(), 1);
    activation_backward(Activation::Sine, Z, Z, A);
  } else {
    activate(f, Z, A);
  }
  Worst<T> worst;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const long double x = xs[i];
    long double ref = cosine ? cosl(x) : reference(f, x);
    if constexpr (std::is_same_v<T, float>) ref = static_cast<double>(ref);  // the float reference: via double
    long double e = ulp_error(A(static_cast<Index>(i)), ref);
    if (ref == 0 && A(static_cast<Index>(i)) == 0 && std::signbit(A(static_cast<Index>(i))) != std::signbit(ref) &&
        (f == Activation::Tanh || f == Activation::Silu || (f == Activation::Sine && !cosine)))
      e = INFINITY;
    if (!(e <= worst.ulps)) worst = {e, xs[i]};
  }
  return worst;
}

template <typename T>
void check_accuracy(Activation f, bool cosine = false) {
  const std::string name = cosine ? "cos" : to_string(f);
  for (const auto& [sweep, xs] : {std::pair{"dense", dense_sweep<T>()}, std::pair{"magnitudes", magnitude_sweep<T>()},
                                  std::pair{"specials", special_values<T>()}}) {
    const Worst<T> w = worst_error(f, xs, cosine);
    EXPECT_LE(w.ulps, 2.0L) << name << " (" << sizeof(T) * 8 << "-bit) over the " << sweep << " sweep: "
                            << static_cast<double>(w.ulps) << " ulp at x = " << static_cast<double>(w.at);
    std::printf("  %-8s %s %-10s max %.3f ulp at %.17g\n", name.c_str(), sizeof(T) == 8 ? "double" : "float ", sweep,
                static_cast<double>(w.ulps), static_cast<double>(w.at));
  }
}

TEST(ActivationAccuracy, DoubleWithinTwoUlp) {
  for (Activation f : {Activation::Tanh, Activation::Sigmoid, Activation::Silu, Activation::Sine}) check_accuracy<double>(f);
  check_accuracy<double>(Activation::Sine, /*cosine=*/true);
}

TEST(ActivationAccuracy, SpecialValuesExactly) {
  const double inf = INFINITY, nan = NAN;
  const auto one = [](Activation f, double x) {
    Mat Z(1, 1), A;
    Z(0, 0) = x;
    activate(f, Z, A);
    return A(0, 0);
  };
  EXPECT_EQ(one(Activation::Tanh, inf), 1.0);
  EXPECT_EQ(one(Activation::Tanh, -inf), -1.0);
  EXPECT_EQ(one(Activation::Tanh, -1e300), -1.0);
  EXPECT_TRUE(std::signbit(one(Activation::Tanh, -0.0)));
  EXPECT_EQ(one(Activation::Sigmoid, inf), 1.0);
  EXPECT_EQ(one(Activation::Sigmoid, -inf), 0.0);
  EXPECT_EQ(one(Activation::Sigmoid, -1000), 0.0);
  EXPECT_GT(one(Activation::Sigmoid, -745), 0.0);  // the denormal e^-745
  EXPECT_EQ(one(Activation::Silu, inf), inf);
  EXPECT_EQ(one(Activation::Silu, -inf), 0.0);  // -0: the sign of the underflowing x e^x
  EXPECT_TRUE(std::signbit(one(Activation::Silu, -inf)));
  EXPECT_TRUE(std::signbit(one(Activation::Silu, -800)));
  EXPECT_TRUE(std::signbit(one(Activation::Silu, -0.0)));
  EXPECT_TRUE(std::isnan(one(Activation::Sine, inf)));
  EXPECT_TRUE(std::isnan(one(Activation::Sine, -inf)));
  for (Activation f : {Activation::Tanh, Activation::Sigmoid, Activation::Silu, Activation::Sine})
    EXPECT_TRUE(std::isnan(one(f, nan))) << to_string(f);
}

/// Every width gives the same values, whole packets and the padded tail alike (n = 0..40).
template <typename Packet>
void check_width_agrees() {
  using T = typename Eigen::internal::unpacket_traits<Packet>::type;
  for (Index n = 0; n <= 40; ++n) {
    MatT<T> Z(n, 1);
    for (Index i = 0; i < n; ++i) Z(i) = static_cast<T>(std::sin(0.7 * i) * 3 * (i % 5));
    for (Activation f : {Activation::Tanh, Activation::Sigmoid, Activation::Silu}) {
      MatT<T> A, B(n, 1);
      activate(f, Z, A);
      if (f == Activation::Tanh) detail::tanh_array<Packet>(Z.data(), B.data(), n);
      if (f == Activation::Sigmoid) detail::sigmoid_array<Packet>(Z.data(), B.data(), n);
      if (f == Activation::Silu) detail::silu_array<Packet>(Z.data(), B.data(), n);
      EXPECT_EQ(A, B) << to_string(f) << " n = " << n;
      MatT<T> C = Z;  // in place
      activate(f, C, C);
      EXPECT_EQ(A, C) << to_string(f) << " in place, n = " << n;
    }
  }
}

TEST(ActivationKernels, EveryWidthAndTailAgree) {
  namespace ei = Eigen::internal;
  check_width_agrees<ei::packet_traits<double>::type>();
#ifdef EIGEN_VECTORIZE_AVX
  check_width_agrees<ei::Packet4d>();
#endif
}

TEST(ActivationKernels, DerivativesMatchTheirFormulas) {
  Mat Z(3, 7);
  for (Index i = 0; i < Z.size(); ++i) Z.data()[i] = -6 + 0.6 * i;
  for (Activation f : {Activation::Tanh, Activation::Sigmoid, Activation::Silu, Activation::Sine}) {
    Mat A, dZ = Mat::Ones(3, 7);
    activate(f, Z, A);
    activation_backward(f, Z, A, dZ);
    for (Index i = 0; i < Z.size(); ++i) {
      const double z = Z.data()[i], s = 1 / (1 + std::exp(-z));
      const double expected = f == Activation::Tanh      ? 1 - std::tanh(z) * std::tanh(z)
                              : f == Activation::Sigmoid ? s * (1 - s)
                              : f == Activation::Silu    ? s * (1 + z * (1 - s))
                                                         : std::cos(z);
      EXPECT_NEAR(dZ.data()[i], expected, 1e-14) << to_string(f) << " at " << z;
    }
  }
}

}  // namespace
}  // namespace uqnn
