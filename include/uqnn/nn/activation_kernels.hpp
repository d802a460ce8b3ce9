#pragma once
/// @file Vectorised tanh, sigmoid, silu, sin and cos for arrays of doubles (issue 19).
///
/// Every kernel is a template over an Eigen packet type (Packet8d / Packet4d / Packet2d), so one
/// source serves AVX-512, AVX2 and SSE, and `activate` picks the width that measured faster on the
/// host (docs/performance.md, "Activations"). Accuracy: at most 2 ulp from the correctly rounded
/// result over the whole range, denormals, infinities and NaN included
/// (tests/unit/nn/activation_test.cpp measures it against long double references).
///
/// Why double only: float versions of these kernels within 2 ulp ran at 0.32-0.52x the speed of
/// Eigen's float tanh and exp (commit 97193ce, bench/activation_bench), which float networks are
/// chosen for; float keeps Eigen's kernels (tanh within 4.2 ulp, the sigmoid 0 below -87 where
/// the result is denormal).
///
/// Why our own: Eigen 3.4's exp<double> divides (a Pade form) and it has no vectorised double sin;
/// Debian's SLEEF 3.5 measured slower than these kernels at the same width (bench/activation_bench).
///
/// The common piece is e^y - 1 = 2^n (e^r - 1) + (2^n - 1) with y = n ln2 + r, |r| <= ln2/2
/// (Cody & Waite, "Software Manual for the Elementary Functions", 1980, ch. 6 and 7; Tang, "Table-
/// driven implementation of the expm1 function", ACM TOMS 18(2), 1992): n by the round-to-nearest
/// "shifter" addition (x + 1.5 2^52 leaves n in the low mantissa bits, Muller, "Elementary Functions",
/// 3rd ed., sec. 11.3), r = y - n ln2 with ln2 in two parts (fused multiply-adds, so the first step
/// is exact), e^r - 1 = r + r^2 g(r) with g a degree-9 near-minimax polynomial (Chebyshev fit,
/// mpmath: relative error 1.7e-17), and 2^n built from its exponent
/// bits. No division inside exp; each activation then needs one division.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <Eigen/Core>

namespace uqnn::detail {

namespace ei = Eigen::internal;

/// Constants per scalar type.
template <typename Scalar>
struct KernelConstants;

template <>
struct KernelConstants<double> {
  using Int = std::int64_t;
  static constexpr int kMantissaBits = 52;
  static constexpr Int kExponentBias = 1023;
  static constexpr double kShifter = 0x1.8p52;          // 1.5 2^52: x + kShifter rounds x to an integer
  static constexpr double kLog2e = 1.4426950408889634;  // 1/ln2
  static constexpr double kLn2Hi = 0.693147180559945286226764, kLn2Lo = 2.319046813846299558417771e-17;
  // (e^r - 1 - r) / r^2 on |r| <= ln2/2, highest degree first (coefs.py in the commit note).
  static constexpr double kExpm1Tail[] = {
      2.51003854955103190776e-8,  2.7620088445409748161e-7,  0.00000275572684599970647717,
      0.0000248015212959543751312, 0.000198412698630536168779, 0.00138888889172137169014,
      0.00833333333333006183252,  0.041666666666624127873,   0.166666666666666674527,
      0.500000000000000102211};
  // (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4 as polynomials in u = r^2 on |r| <= pi/4.
  static constexpr double kSinTail[] = {
      -7.58668507009126715961e-13, 1.60585314145890107574e-10, -2.50521062311579054867e-8,
      0.00000275573192193354534288, -0.00019841269841265060174, 0.00833333333333333148988,
      -0.166666666666666666655};
  static constexpr double kCosTail[] = {
      -1.13826148685563245757e-11, 2.08761460246897466009e-9, -2.75573172705603240655e-7,
      0.0000248015872987634331639, -0.00138888888888873957462, 0.0416666666666666653872};
  // pi/2 = kPio2[0] + kPio2[1] + kPio2[2] (each the nearest double to what is left).
  static constexpr double kPio2[] = {1.570796326794896557998982, 6.12323399573676603586882e-17,
                                     -1.497384904859169832943508e-33};
  static constexpr double k2OverPi = 0.63661977236758134308;
  /// Beyond this |x| sin/cos fall back to std::sin / std::cos lane by lane: n = x 2/pi < 2^17 keeps
  /// the three-part reduction within 1 ulp of r (its last part's error, n 5.6e-50, stays far below r
  /// 2^-53 for the closest doubles to multiples of pi/2).
  static constexpr double kTrigReductionLimit = 1e5;
  /// tanh(x) rounds to 1 for x > 19.06; e^{-2x} is computed no further than this.
  static constexpr double kTanhSaturation = 20.0;
  /// x e^x (silu) rounds to 0 below -751.8, e^x (sigmoid) below -745.13; 2^n stays two normal factors.
  static constexpr double kExpUnderflow = -760.0;
};

/// The integer vector with the packet's size and lane count, for exponent-bit arithmetic (GCC/Clang
/// vector extensions, which work on any Eigen packet that is a compiler vector type).
template <typename Packet>
struct PacketInt {
  using Scalar = typename ei::unpacket_traits<Packet>::type;
  using Int = typename KernelConstants<Scalar>::Int;
  typedef Int Type __attribute__((vector_size(sizeof(Packet))));
};

template <typename Packet>
inline typename PacketInt<Packet>::Type to_bits(const Packet& p) {
  typename PacketInt<Packet>::Type b;
  std::memcpy(&b, &p, sizeof(Packet));
  return b;
}
template <typename Packet>
inline Packet from_bits(const typename PacketInt<Packet>::Type& b) {
  Packet p;
  std::memcpy(&p, &b, sizeof(Packet));
  return p;
}

template <typename Packet, std::size_t N>
inline Packet horner(const Packet& x, const typename ei::unpacket_traits<Packet>::type (&c)[N]) {
  Packet s = ei::pset1<Packet>(c[0]);
  for (std::size_t k = 1; k < N; ++k) s = ei::pmadd(x, s, ei::pset1<Packet>(c[k]));
  return s;
}

/// y where y >= lo, lo elsewhere; a NaN y stays NaN (a compare with NaN is false).
template <typename Packet>
inline Packet clamp_below(const Packet& y, const Packet& lo) {
  return ei::pmax(y, lo);  // Eigen's pmax(a, b) returns a when either is NaN (std::max's rule)
}

/// The reduction y = n ln2 + r with r = r1 + c: r1 = y - n ln2hi is exact (a fused multiply-add
/// whose result needs no more bits than y has), c = -n ln2lo is kept apart and enters e^r - 1 as the
/// small term it is (see expm1_reduced). Returns r1; n sits in the low mantissa bits of `shifted`
/// (the bits of n + 1.5 2^p).
template <typename Packet>
inline Packet exp_reduce(const Packet& y, Packet& shifted, Packet& c) {
  using K = KernelConstants<typename ei::unpacket_traits<Packet>::type>;
  const Packet shifter = ei::pset1<Packet>(K::kShifter);
  shifted = ei::pmadd(y, ei::pset1<Packet>(K::kLog2e), shifter);
  const Packet n = ei::psub(shifted, shifter);
  c = ei::pmul(n, ei::pset1<Packet>(-K::kLn2Lo));
  return ei::pmadd(n, ei::pset1<Packet>(-K::kLn2Hi), y);
}

/// 2^(n + offset) from `shifted` (exponent bits; valid while n + offset is a normal exponent).
template <typename Packet>
inline Packet exp2_from_shifted(const Packet& shifted, typename PacketInt<Packet>::Int offset = 0) {
  using K = KernelConstants<typename ei::unpacket_traits<Packet>::type>;
  // The shifter's own bits vanish in the shift: its low (exponent-width) bits are zero.
  return from_bits<Packet>((to_bits(shifted) + (K::kExponentBias + offset)) << K::kMantissaBits);
}

/// e^r - 1 for r = r1 + c, |r| <= ln2/2: r1 + (c + r^2 g(r)), one rounding at the end (rounding
/// r1 + c first and then adding would cost up to 0.3 ulp more, which tanh cannot spare).
template <typename Packet>
inline Packet expm1_reduced(const Packet& r1, const Packet& c) {
  using K = KernelConstants<typename ei::unpacket_traits<Packet>::type>;
  const Packet r = ei::padd(r1, c);
  return ei::padd(r1, ei::pmadd(ei::pmul(r, r), horner(r, K::kExpm1Tail), c));
}

/// e^y for y in [kExpUnderflow, 0] (NaN stays NaN), denormal results included: 2^n is applied in two
/// factors so that each is a normal number down to n = -1076, and e^r = 1 + (e^r - 1) is folded into
/// the first scaling by one fused multiply-add (one rounding instead of two: sigmoid's error budget).
/// e^y = 2^a (1 + m) 2^b with m = e^r - 1: the parts, for callers that scale something else first.
template <typename Packet>
struct ExpParts {
  Packet expm1_r, scale_a, scale_b;
};

template <typename Packet>
inline ExpParts<Packet> exp_nonpositive_parts(const Packet& y) {
  using K = KernelConstants<typename ei::unpacket_traits<Packet>::type>;
  Packet shifted, c;
  const Packet r1 = exp_reduce(y, shifted, c);
  // n = bits(shifted) - bits(shifter); half of it (rounded towards -inf) goes in each factor.
  const Packet shifter = ei::pset1<Packet>(K::kShifter);
  const auto n = to_bits(shifted) - to_bits(shifter);
  const auto half = n >> 1;
  return {expm1_reduced(r1, c), from_bits<Packet>((half + K::kExponentBias) << K::kMantissaBits),
          from_bits<Packet>((n - half + K::kExponentBias) << K::kMantissaBits)};
}

template <typename Packet>
inline Packet exp_nonpositive(const Packet& y) {
  const ExpParts<Packet> e = exp_nonpositive_parts(y);
  return ei::pmul(ei::pmadd(e.scale_a, e.expm1_r, e.scale_a), e.scale_b);
}

/// num / (1 + e) for 0 <= e <= 1 with one rounding in effect: 1 + e is rounded to d with the exact
/// remainder lo = (1 - d) + e (Fast2Sum, Dekker 1971); after q = num / d, the residual
/// q d + q lo - num (fused, so q d - num is exact) over d, with 1 / d to a few bits (the linear
/// 1.5 - d/2, within 12% on [1, 2]), corrects q by at most an ulp. Without it the rounding of d and
/// of the quotient could cost 1.5 ulp. Signs are kept (-0 / d = -0) and q = inf stays inf: q enters
/// the products capped at the largest finite value.
template <typename Packet>
inline Packet divide_by_one_plus(const Packet& num, const Packet& e) {
  using Scalar = typename ei::unpacket_traits<Packet>::type;
  const Packet one = ei::pset1<Packet>(Scalar(1));
  const Packet d = ei::padd(one, e);
  const Packet lo = ei::padd(ei::psub(one, d), e);
  const Packet q = ei::pdiv(num, d);
  const Packet capped = ei::pmin(q, ei::pset1<Packet>(Eigen::NumTraits<Scalar>::highest()));
  const Packet residual = ei::pmadd(capped, lo, ei::pmadd(capped, d, ei::psub(ei::pzero(num), num)));
  const Packet inverse = ei::pmadd(d, ei::pset1<Packet>(Scalar(-0.5)), ei::pset1<Packet>(Scalar(1.5)));
  return ei::psub(q, ei::pmul(residual, inverse));
}

/// tanh: with t = |x|, e = e^{-2t} and u = e - 1 (computed as expm1, without cancellation near 0),
/// tanh t = -u / (2 + u) below 0.55 and 1 - 2e / (1 + e) above (there the rounding of 2 + u ~ 1 would
/// cost a full ulp of a result near 1; the quotient 2e / (1 + e) <= 0.5 carries only a fraction of
/// its error into the result). One division serves both. The sign of x is put back by bits, so
/// tanh(-0) = -0. Above 20 the argument is clamped: the result rounds to 1 there.
template <typename Packet>
inline Packet tanh_packet(const Packet& x) {
  using Scalar = typename ei::unpacket_traits<Packet>::type;
  using K = KernelConstants<Scalar>;
  const Packet sign_mask = ei::pset1<Packet>(Scalar(-0.0));
  const Packet one = ei::pset1<Packet>(Scalar(1));
  const Packet t = ei::pandnot(x, sign_mask);  // |x|
  const Packet y = clamp_below(ei::pmul(t, ei::pset1<Packet>(Scalar(-2))), ei::pset1<Packet>(-2 * K::kTanhSaturation));
  Packet shifted, c;
  const Packet r1 = exp_reduce(y, shifted, c);
  const Packet scale = exp2_from_shifted(shifted);  // 2^n, n in [-58, 0]
  const Packet p = expm1_reduced(r1, c);
  const Packet u = ei::pmadd(scale, p, ei::psub(scale, one));  // e^{-2t} - 1
  const Packet e = ei::pmadd(scale, p, scale);                 // e^{-2t}
  const Packet small = ei::pcmp_lt(t, ei::pset1<Packet>(Scalar(0.55)));
  const Packet numerator = ei::pselect(small, ei::psub(ei::pzero(u), u), ei::padd(e, e));
  const Packet q = divide_by_one_plus(numerator, e);
  const Packet tanh_t = ei::pselect(small, q, ei::psub(one, q));  // >= +0
  return ei::por(tanh_t, ei::pand(x, sign_mask));
}

/// sigmoid(x) = 1 / (1 + e^{-x}) computed as {1 or e} / (1 + e) with e = e^{-|x|} <= 1, so nothing
/// overflows and sigmoid(x) for x < -708 comes out as the denormal e^x (0 below -745.1).
template <typename Packet>
inline Packet sigmoid_packet(const Packet& x) {
  using K = KernelConstants<typename ei::unpacket_traits<Packet>::type>;
  const Packet one = ei::pset1<Packet>(1);
  const Packet neg_t = ei::por(x, ei::pset1<Packet>(-0.0));  // -|x|
  const Packet e = exp_nonpositive(clamp_below(neg_t, ei::pset1<Packet>(K::kExpUnderflow)));
  const Packet numerator = ei::pselect(ei::pcmp_lt(x, ei::pzero(x)), e, one);
  return divide_by_one_plus(numerator, e);
}

/// silu(x) = x sigmoid(x) = {x or x e} / (1 + e), e = e^{-|x|}. For x < -746 (and -inf) e is 0 and
/// x is clamped first, so silu gives -0 there (the sign of the true, underflowing value).
template <typename Packet>
inline Packet silu_packet(const Packet& x) {
  using K = KernelConstants<typename ei::unpacket_traits<Packet>::type>;
  const Packet underflow = ei::pset1<Packet>(K::kExpUnderflow);
  const Packet neg_t = ei::por(x, ei::pset1<Packet>(-0.0));
  const Packet clamped = clamp_below(neg_t, underflow);
  // x e = (x 2^a + x 2^a m) 2^b: x 2^a is exact and the fused multiply-add rounds once (x times a
  // rounded e would round twice), and 2^b comes last: e alone may be denormal (x < -708), and x
  // times a denormal would carry its lost bits into a result that may be normal.
  const ExpParts<Packet> parts = exp_nonpositive_parts(clamped);
  const Packet e = ei::pmul(ei::pmadd(parts.scale_a, parts.expm1_r, parts.scale_a), parts.scale_b);
  const Packet x_scaled = ei::pmul(clamped, parts.scale_a);
  const Packet x_e = ei::pmul(ei::pmadd(x_scaled, parts.expm1_r, x_scaled), parts.scale_b);
  const Packet numerator = ei::pselect(ei::pcmp_lt(x, ei::pzero(x)), x_e, x);
  return divide_by_one_plus(numerator, e);
}

/// sin (Cosine = false) or cos (true): n = round(x 2/pi), r = x - n pi/2 in three parts (the first
/// fused step is exact), then sin r or cos r by the quadrant n mod 4 (Cody & Waite ch. 8). cos r is
/// 1 - r^2/2 + r^4 C(r^2) with the rounding of 1 - r^2/2 carried separately (fdlibm's __kernel_cos).
/// Lanes with |x| > kTrigReductionLimit (or inf, NaN) are redone with std::sin / std::cos.
template <typename Packet, bool Cosine>
inline Packet sincos_packet(const Packet& x, bool& needs_fallback) {
  using Scalar = typename ei::unpacket_traits<Packet>::type;
  using K = KernelConstants<Scalar>;
  const Packet shifter = ei::pset1<Packet>(K::kShifter);
  const Packet sign_mask = ei::pset1<Packet>(Scalar(-0.0));
  const Packet ax = ei::pandnot(x, sign_mask);  // |x|: sin is odd, cos even; sin(-0) = -0 this way
  const Packet shifted = ei::pmadd(ax, ei::pset1<Packet>(K::k2OverPi), shifter);
  const Packet n = ei::psub(shifted, shifter);
  Packet r = ei::pmadd(n, ei::pset1<Packet>(-K::kPio2[0]), ax);
  r = ei::pmadd(n, ei::pset1<Packet>(-K::kPio2[1]), r);
  r = ei::pmadd(n, ei::pset1<Packet>(-K::kPio2[2]), r);
  const Packet u = ei::pmul(r, r);
  const Packet sin_r = ei::pmadd(ei::pmul(u, r), horner(u, K::kSinTail), r);
  const Packet half_u = ei::pmul(u, ei::pset1<Packet>(Scalar(0.5)));
  const Packet one = ei::pset1<Packet>(1);
  const Packet w = ei::psub(one, half_u);
  const Packet cos_r = ei::padd(w, ei::pmadd(ei::pmul(u, u), horner(u, K::kCosTail), ei::psub(ei::psub(one, w), half_u)));
  // Quadrant q = n mod 4 from the low bits (cos x = sin(x + pi/2): q + 1).
  using Int = typename PacketInt<Packet>::Int;
  const auto q = to_bits(shifted) + Int(Cosine ? 1 : 0);
  const auto odd = (q & Int(1)) - Int(1);  // all ones where q is even
  const Packet even_mask = from_bits<Packet>(odd);
  const Packet value = ei::pselect(even_mask, sin_r, cos_r);
  const auto sign_bit = (q & Int(2)) << (sizeof(Int) * 8 - 2);
  Packet out = ei::pxor(value, from_bits<Packet>(sign_bit));
  if constexpr (!Cosine) out = ei::pxor(out, ei::pand(x, sign_mask));
  const Packet within = ei::pcmp_le(ax, ei::pset1<Packet>(K::kTrigReductionLimit));  // false for NaN
  needs_fallback = ei::predux_any(ei::pandnot(ei::ptrue(x), within));
  return out;
}

/// out[i] = f(in[i]) for n values by packets of `Packet`; the tail (n not a multiple of the width)
/// goes through a padded buffer so every element takes the same arithmetic. `out` may equal `in`.
template <typename Packet, typename F>
inline void map_packets(const typename ei::unpacket_traits<Packet>::type* in,
                        typename ei::unpacket_traits<Packet>::type* out, Eigen::Index n, F f) {
  using Scalar = typename ei::unpacket_traits<Packet>::type;
  constexpr Eigen::Index kWidth = ei::unpacket_traits<Packet>::size;
  Eigen::Index i = 0;
  for (; i + kWidth <= n; i += kWidth) ei::pstoreu(out + i, f(ei::ploadu<Packet>(in + i), in + i));
  if (i < n) {
    alignas(64) Scalar buffer[kWidth] = {};
    for (Eigen::Index k = i; k < n; ++k) buffer[k - i] = in[k];
    ei::pstoreu(buffer, f(ei::ploadu<Packet>(buffer), static_cast<const Scalar*>(buffer)));
    for (Eigen::Index k = i; k < n; ++k) out[k] = buffer[k - i];
  }
}

template <typename Packet>
inline void tanh_array(const typename ei::unpacket_traits<Packet>::type* in,
                       typename ei::unpacket_traits<Packet>::type* out, Eigen::Index n) {
  map_packets<Packet>(in, out, n, [](const Packet& x, const auto*) { return tanh_packet(x); });
}
template <typename Packet>
inline void sigmoid_array(const typename ei::unpacket_traits<Packet>::type* in,
                          typename ei::unpacket_traits<Packet>::type* out, Eigen::Index n) {
  map_packets<Packet>(in, out, n, [](const Packet& x, const auto*) { return sigmoid_packet(x); });
}
template <typename Packet>
inline void silu_array(const typename ei::unpacket_traits<Packet>::type* in,
                       typename ei::unpacket_traits<Packet>::type* out, Eigen::Index n) {
  map_packets<Packet>(in, out, n, [](const Packet& x, const auto*) { return silu_packet(x); });
}
/// sin (Cosine = false) or cos over an array, with the per-lane std::sin / std::cos fallback.
template <typename Packet, bool Cosine>
inline void sincos_array(const typename ei::unpacket_traits<Packet>::type* in,
                         typename ei::unpacket_traits<Packet>::type* out, Eigen::Index n) {
  using Scalar = typename ei::unpacket_traits<Packet>::type;
  using K = KernelConstants<Scalar>;
  constexpr int kWidth = ei::unpacket_traits<Packet>::size;
  map_packets<Packet>(in, out, n, [](const Packet& x, const Scalar* source) {
    bool needs_fallback = false;
    Packet y = sincos_packet<Packet, Cosine>(x, needs_fallback);
    if (needs_fallback) {  // rare: huge |x|, inf or NaN in this packet
      alignas(64) Scalar lanes[kWidth];
      ei::pstoreu(lanes, y);
      for (int k = 0; k < kWidth; ++k) {
        const Scalar v = source[k];
        if (!(v <= K::kTrigReductionLimit && v >= -K::kTrigReductionLimit))
          lanes[k] = Cosine ? std::cos(v) : std::sin(v);
      }
      y = ei::ploadu<Packet>(lanes);
    }
    return y;
  });
}

}  // namespace uqnn::detail
