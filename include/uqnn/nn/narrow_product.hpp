#pragma once
/// @file Matrix products of a dense layer whose output side is narrow (at most four SIMD packets of
/// rows: 64 floats or 32 doubles with AVX-512), as in the 2x16 to 2x50 networks of the seeds.
///
/// Eigen's GEMM packs both operands into blocks on every call. For a layer of 16 outputs over a
/// few hundred examples the packing costs as much as the arithmetic, and its micro-kernel is sized
/// for large matrices. Here the whole column of outputs for one example fits in one to four
/// registers, so the product runs without packing: each output column is a sum of weight columns
/// scaled by broadcast inputs (fused multiply-adds on Eigen's packets), several examples at a time
/// to reuse the loaded weight column. A row count that is not whole packets (the 10-wide layers of
/// BENCHMARKS.md's B1) ends in a partial packet: its weights and bias are read from zero-padded
/// copies and its stores follow `store_bounded`. Measured on the shapes of seed 003's networks
/// (16 x 6 and 16 x 16 times 6 / 16 x 246..1202; a micro-benchmark of each product): 1.5-4x faster
/// than Eigen's product in float and 2.3-4x in double; the whole gradient is timed by
/// bench/dei_gradient_vs_jax.sh. Larger layers keep Eigen's GEMM, which blocks for the cache.
#include <algorithm>
#include <type_traits>

#include "uqnn/core/types.hpp"
#include "uqnn/nn/dual.hpp"

namespace uqnn::detail {

/// A B for dual numbers as three double GEMMs: (Av + e At)(Bv + e Bt) = Av Bv + e (At Bv + Av Bt).
/// Eigen's GEMM on AutoDiffScalar runs scalar code with a heap-allocated derivative per element;
/// this is the product inside every Hessian-vector product (laplace's exact curvature, swag's
/// default rate, Newton's polish): about 10x faster on a 998 x 998 layer.
template <typename DerivedA, typename DerivedB>
MatT<Dual> dual_product(const Eigen::MatrixBase<DerivedA>& a, const Eigen::MatrixBase<DerivedB>& b) {
  const auto value = [](const Dual& x) { return x.value(); };
  const auto tangent = [](const Dual& x) { return dual_tangent(x); };
  const Mat av = a.unaryExpr(value), bv = b.unaryExpr(value);
  const Mat at = a.unaryExpr(tangent), bt = b.unaryExpr(tangent);
  const Mat cv = av * bv;
  Mat ct = at * bv;
  ct.noalias() += av * bt;
  MatT<Dual> c(cv.rows(), cv.cols());
  for (Index i = 0; i < c.size(); ++i) c(i) = make_dual(cv(i), ct(i));
  return c;
}

/// A linear layer's epilogue: the product's outputs as they are.
struct LinearEpilogue {
  template <typename Packet>
  static Packet value(const Packet& z) { return z; }
};

template <typename T>
struct NarrowKernel {
  using Packet = typename Eigen::internal::packet_traits<T>::type;
  static constexpr Index kPacket = Eigen::internal::unpacket_traits<Packet>::size;
  static constexpr Index kMaxPackets = 4;  ///< rows handled by the kernel: at most 4 packets
  static constexpr Index kRegisters = EIGEN_ARCH_DEFAULT_NUMBER_OF_REGISTERS;
  static constexpr bool kVectorised = kPacket > 1;
  /// Examples (columns) processed per step with R row packets: fill the registers left after R
  /// weight packets and a broadcast, at most 8.
  static constexpr Index columns_per_step(Index R) { return std::clamp<Index>((kRegisters - R - 2) / R, 1, 8); }

  /// Stores v at `to`, or only its lanes before `end` when a whole packet would pass it.
  static void store_bounded(T* to, const Packet& v, const T* end) {
    if (to + kPacket <= end) {
      Eigen::internal::pstoreu(to, v);
      return;
    }
    alignas(Packet) T lanes[kPacket];
    Eigen::internal::pstore(lanes, v);
    std::copy(lanes, lanes + (end - to), to);
  }
  /// Loads the packet at `from`, with zeros in the lanes at or past `end`.
  static Packet load_bounded(const T* from, const T* end) {
    if (from + kPacket <= end) return Eigen::internal::ploadu<Packet>(from);
    alignas(Packet) T lanes[kPacket] = {};
    std::copy(from, end, lanes);
    return Eigen::internal::pload<Packet>(lanes);
  }

  /// C = bias + A B for C [rows x n] column-major (leading dimension rows), rows in
  /// ((R - 1) kPacket, R kPacket]. A is column-major with leading dimension lda >= R kPacket (rows
  /// past `rows` are read, zero padding, and never stored), B column-major [K x n]; bias has
  /// R kPacket entries or is null.
  ///
  /// When rows is not whole packets, the last packet of a column also covers the next column's
  /// first rows. Columns are stored in increasing order, so the next column's own stores overwrite
  /// those lanes; only the last column's packet would pass the end of C, and store_bounded cuts it.
  ///
  /// Epilogue::value maps each packet of outputs before it is stored (a layer's activation, fused).
  template <int R, typename Epilogue>
  static void product(const T* A, Index lda, Index K, const T* B, Index n, const T* bias, T* C, Index rows) {
    namespace ei = Eigen::internal;
    constexpr Index NC = columns_per_step(R);
    const Index ldc = rows;
    const T* const end = C + n * ldc;
    // Each step's accumulators start from these registers. (Computed per step through a lambda,
    // GCC 12 built them in a stack array and reloaded them each step, stalling the float kernel.)
    Packet start_values[R];
    for (Index r = 0; r < R; ++r) start_values[r] = bias ? ei::ploadu<Packet>(bias + r * kPacket) : ei::pset1<Packet>(T(0));
    auto start = [&](Index r) { return start_values[r]; };
    // The steps store whole packets (a check per store costs B2's forward products 40%); the last
    // column, whose packet could pass C's end, goes through the one-column loop's bounded stores.
    const Index inner = n - 1;
    Index j = 0;
    for (; j + NC <= inner; j += NC) {
      Packet acc[NC][R];
      for (Index c = 0; c < NC; ++c)
        for (Index r = 0; r < R; ++r) acc[c][r] = start(r);
      for (Index k = 0; k < K; ++k) {
        Packet a[R];
        for (Index r = 0; r < R; ++r) a[r] = ei::ploadu<Packet>(A + k * lda + r * kPacket);
        for (Index c = 0; c < NC; ++c) {
          const Packet b = ei::pset1<Packet>(B[k + (j + c) * K]);
          for (Index r = 0; r < R; ++r) acc[c][r] = ei::pmadd(a[r], b, acc[c][r]);
        }
      }
      for (Index c = 0; c < NC; ++c)
        for (Index r = 0; r < R; ++r) ei::pstoreu(C + (j + c) * ldc + r * kPacket, Epilogue::value(acc[c][r]));
    }
    auto one_column = [&](Index column, auto last_column) {
      Packet acc[R];
      for (Index r = 0; r < R; ++r) acc[r] = start(r);
      for (Index k = 0; k < K; ++k) {
        const Packet b = ei::pset1<Packet>(B[k + column * K]);
        for (Index r = 0; r < R; ++r) acc[r] = ei::pmadd(ei::ploadu<Packet>(A + k * lda + r * kPacket), b, acc[r]);
      }
      for (Index r = 0; r < R; ++r) {
        T* to = C + column * ldc + r * kPacket;
        if constexpr (last_column) store_bounded(to, Epilogue::value(acc[r]), end);
        else ei::pstoreu(to, Epilogue::value(acc[r]));
      }
    };
    for (; j < inner; ++j) one_column(j, std::false_type{});
    if (n > 0) one_column(n - 1, std::true_type{});
  }

  /// G[:, k0 + k] += sum_j D[:, j] B(k0 + k, j), k < KC, for D [rows x n] column-major (leading
  /// dimension rows, rows in ((R - 1) kPacket, R kPacket]) and B column-major [K x n]; G
  /// column-major with leading dimension ldg >= R kPacket. When rows is not whole packets, the
  /// last packet of D's column j also holds column j + 1's first rows: they add only to G's rows
  /// past `rows`, which the caller drops (and the last column's load stops at D's end).
  /// The KC accumulators stay in registers only when KC is a compile-time constant. Narrow chunks
  /// take U examples per step into separate accumulators: at least 8 independent multiply-add
  /// chains, else each step waits for the previous one's latency (4 cycles).
  ///
  /// With a Derivative (not void) the pass first turns each column of D, the cotangent of a layer's
  /// outputs, into that of its pre-activations: D <- Derivative::derivative(D, A) in place, summed
  /// into db (R packets) as well. Only for whole packets of rows (no column's packet overlaps the
  /// next column, which a second application would change).
  template <int R, int KC, typename Derivative = void>
  static void transposed_product_chunk(const T* D, Index rows, const T* B, Index K, Index k0, Index n, T* G, Index ldg,
                                       T* D_out = nullptr, const T* A = nullptr, T* db = nullptr) {
    namespace ei = Eigen::internal;
    constexpr bool kThroughActivation = !std::is_void_v<Derivative>;
    const Index ldd = rows;
    const T* const end = D + n * ldd;
    constexpr Index U = std::max<Index>(1, 8 / (KC * R));
    Packet acc[U][KC][R];
    Packet bias_sums[R];
    for (Index r = 0; r < R; ++r) bias_sums[r] = ei::pset1<Packet>(T(0));
    for (Index u = 0; u < U; ++u)
      for (Index k = 0; k < KC; ++k)
        for (Index r = 0; r < R; ++r) acc[u][k][r] = ei::pset1<Packet>(T(0));
    auto step = [&](Index j, Packet(&sums)[KC][R], auto last_column) {
      Packet d[R];
      for (Index r = 0; r < R; ++r) {
        const T* column = D + j * ldd + r * kPacket;
        if constexpr (last_column) d[r] = r == R - 1 ? load_bounded(column, end) : ei::ploadu<Packet>(column);
        else d[r] = ei::ploadu<Packet>(column);
        if constexpr (kThroughActivation) {
          d[r] = Derivative::derivative(d[r], ei::ploadu<Packet>(A + j * ldd + r * kPacket));
          ei::pstoreu(D_out + j * ldd + r * kPacket, d[r]);
          bias_sums[r] = ei::padd(bias_sums[r], d[r]);
        }
      }
      const T* b = B + j * K + k0;
      for (Index k = 0; k < KC; ++k) {
        const Packet bk = ei::pset1<Packet>(b[k]);
        for (Index r = 0; r < R; ++r) sums[k][r] = ei::pmadd(d[r], bk, sums[k][r]);
      }
    };
    // Only the last column's partial packet could read past D's end: it alone loads bounded.
    const Index inner = n - 1;
    Index j = 0;
    for (; j + U <= inner; j += U)
      for (Index u = 0; u < U; ++u) step(j + u, acc[u], std::false_type{});
    for (; j < inner; ++j) step(j, acc[0], std::false_type{});
    if (n > 0) step(n - 1, acc[0], std::true_type{});
    for (Index k = 0; k < KC; ++k)
      for (Index r = 0; r < R; ++r) {
        Packet sum = acc[0][k][r];
        for (Index u = 1; u < U; ++u) sum = ei::padd(sum, acc[u][k][r]);
        T* g = G + (k0 + k) * ldg + r * kPacket;
        ei::pstoreu(g, ei::padd(ei::ploadu<Packet>(g), sum));
      }
    if constexpr (kThroughActivation)
      for (Index r = 0; r < R; ++r) ei::pstoreu(db + r * kPacket, ei::padd(ei::ploadu<Packet>(db + r * kPacket), bias_sums[r]));
  }

  /// G += D B^T (D [rows x n] as in transposed_product_chunk) in chunks of 16, 8, 4, 2 and 1
  /// columns of G (as many accumulators as registers allow: R * 16 + R <= 32 for R = 1, fewer per
  /// chunk beyond).
  /// With a Derivative, the first chunk's pass also applies it to D (transposed_product_chunk).
  template <int R, typename Derivative = void>
  static void transposed_product(const T* D, Index rows, const T* B, Index K, Index n, T* G, Index ldg,
                                 T* D_out = nullptr, const T* A = nullptr, T* db = nullptr) {
    constexpr Index kWidest = std::clamp<Index>((kRegisters - R - 2) / R, 1, 16);
    Index k0 = 0;
    auto chunks = [&](auto width) {
      constexpr int KC = decltype(width)::value;
      if constexpr (KC <= kWidest)
        for (; k0 + KC <= K; k0 += KC) {
          if (k0 == 0) transposed_product_chunk<R, KC, Derivative>(D, rows, B, K, k0, n, G, ldg, D_out, A, db);
          else transposed_product_chunk<R, KC>(D, rows, B, K, k0, n, G, ldg);
        }
    };
    chunks(std::integral_constant<int, 16>{});
    chunks(std::integral_constant<int, 8>{});
    chunks(std::integral_constant<int, 4>{});
    chunks(std::integral_constant<int, 2>{});
    chunks(std::integral_constant<int, 1>{});
  }

  /// Whether a product with `rows` outputs goes through the kernel: at least one packet of rows
  /// and at most kMaxPackets (the last one possibly partial).
  static bool applies(Index rows) { return kVectorised && rows >= kPacket && rows <= kMaxPackets * kPacket; }
  static Index packets(Index rows) { return (rows + kPacket - 1) / kPacket; }
  /// Sums over more inputs than this keep Eigen's GEMM, which blocks A for the cache.
  static constexpr Index kMaxDepth = 256;

  template <typename Kernel>
  static void dispatch(Index packets, Kernel&& kernel) {
    switch (packets) {
      case 1: kernel(std::integral_constant<int, 1>{}); break;
      case 2: kernel(std::integral_constant<int, 2>{}); break;
      case 3: kernel(std::integral_constant<int, 3>{}); break;
      default: kernel(std::integral_constant<int, 4>{}); break;
    }
  }
};

/// C = A B (+ bias on every column); A is [rows x K] column-major with leading dimension lda (a
/// PyTorch-layout weight's transpose is its storage as is), B and C column-major. Narrow A goes
/// through NarrowKernel, every other shape through Eigen.
///
/// With an Epilogue other than Linear, returns whether it was applied (NarrowKernel's shapes, where
/// the outputs' packets pass through Epilogue::value before they are stored); otherwise C = A B +
/// bias and the caller applies it.
template <typename T, typename Epilogue = LinearEpilogue>
bool narrow_product(const T* A, Index rows, Index lda, Index K, const MatT<T>& B, const T* bias, MatT<T>& C) {
  using Kernel = NarrowKernel<T>;
  const Index n = B.cols();
  C.resize(rows, n);
  if (rows == 0 || n == 0) return true;  // an empty C has no data pointer to offset (UBSan)
  if (Kernel::applies(rows) && K <= Kernel::kMaxDepth) {
    const Index packets = Kernel::packets(rows), padded = packets * Kernel::kPacket;
    if (padded != rows) {
      // The kernel loads whole packets: a partial last packet reads zero-padded copies (a narrow,
      // shallow layer's weights: a few hundred values).
      thread_local MatT<T> padded_a;
      thread_local VecT<T> padded_bias;
      if (lda < padded) {
        padded_a.setZero(padded, K);
        padded_a.topRows(rows) = Eigen::Map<const MatT<T>, 0, Eigen::OuterStride<>>(A, rows, K, Eigen::OuterStride<>(lda));
        A = padded_a.data();
        lda = padded;
      }
      if (bias) {
        padded_bias.setZero(padded);
        padded_bias.head(rows) = Eigen::Map<const VecT<T>>(bias, rows);
        bias = padded_bias.data();
      }
    }
    Kernel::dispatch(packets, [&](auto R) { Kernel::template product<R, Epilogue>(A, lda, K, B.data(), n, bias, C.data(), rows); });
    return true;
  }
  const Eigen::Map<const MatT<T>, 0, Eigen::OuterStride<>> a(A, rows, K, Eigen::OuterStride<>(lda));
  if constexpr (std::is_same_v<T, Dual>) C = dual_product(a, B);
  else C.noalias() = a * B;
  if (bias) C.colwise() += Eigen::Map<const VecT<T>>(bias, rows);
  return false;
}

/// The packet of w[0, whole) .* b[0, whole) summed packet by packet (whole: a multiple of the
/// packet size); few_rows_product reduces it across its lanes.
template <typename T>
inline typename NarrowKernel<T>::Packet dot_packet(const T* w, const T* b, Index whole) {
  namespace ei = Eigen::internal;
  using Packet = typename NarrowKernel<T>::Packet;
  constexpr Index P = NarrowKernel<T>::kPacket;
  Packet sum = ei::pmul(ei::ploadu<Packet>(w), ei::ploadu<Packet>(b));
  for (Index k = P; k < whole; k += P) sum = ei::pmadd(ei::ploadu<Packet>(w + k), ei::ploadu<Packet>(b + k), sum);
  return sum;
}

#ifdef EIGEN_VECTORIZE_AVX512
/// Lane t of the result is predux(leaf(t)) for t < 16 float packets, bit for bit, 16 sums at once:
/// the same pairs are added in the same tree as Eigen's predux<Packet16f> (lanes i and i+8, then
/// i+4, i+2, i+1), two packets' halves brought together by one shuffle each per level. 45
/// operations for 16 sums against about 8 per predux. The leaves are made as the first level takes
/// them, so at most 10 packets are live.
template <typename Leaf>
inline __m512 transposed_predux_16(const Leaf& leaf) {
  // The tree leaves input slot s's sum in lane (s % 4) 4 + s / 4 (a 4 x 4 transpose, its own inverse).
  const auto slot = [&leaf](int s) { return leaf((s % 4) * 4 + s / 4); };
  __m512 halves[8], quarters[4], eighths[2];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // [a_lo8 + a_hi8 | b_lo8 + b_hi8]
    const __m512 a = slot(2 * i), b = slot(2 * i + 1);
    halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)  // 128-bit chunks: each 8-sum's first four plus its last four
    quarters[i] = _mm512_add_ps(_mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0x88),
                                _mm512_shuffle_f32x4(halves[2 * i], halves[2 * i + 1], 0xDD));
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {  // within 128-bit lanes: elements 0, 1 plus 2, 3
    const __m512d a = _mm512_castps_pd(quarters[2 * i]), b = _mm512_castps_pd(quarters[2 * i + 1]);
    eighths[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(eighths[0], eighths[1], 0x88), _mm512_shuffle_ps(eighths[0], eighths[1], 0xDD));
}

/// The same for 8 double packets and predux<Packet8d>'s tree (lanes i and i+4, then i+1, then i+2).
template <typename Leaf>
inline __m512d transposed_predux_8(const Leaf& leaf) {
  constexpr int kSlot[8] = {0, 2, 1, 3, 4, 6, 5, 7};  // input slot s's sum lands in lane kSlot[s]
  __m512d halves[4], quarters[2];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512d a = leaf(kSlot[2 * i]), b = leaf(kSlot[2 * i + 1]);
    halves[i] = _mm512_add_pd(_mm512_shuffle_f64x2(a, b, 0x44), _mm512_shuffle_f64x2(a, b, 0xEE));
  }
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i)
    quarters[i] = _mm512_add_pd(_mm512_unpacklo_pd(halves[2 * i], halves[2 * i + 1]),
                                _mm512_unpackhi_pd(halves[2 * i], halves[2 * i + 1]));
  return _mm512_add_pd(_mm512_shuffle_f64x2(quarters[0], quarters[1], 0x88),
                       _mm512_shuffle_f64x2(quarters[0], quarters[1], 0xDD));
}

/// few_rows_product's columns [0, n - n % (P / Rows)) by transposed_predux: each packet of C in
/// storage order (P / Rows examples of Rows outputs) is one reduction. Returns the first column left.
template <int Rows, typename T>
Index few_rows_by_transposed_predux(const T* W, Index K, const MatT<T>& B, const T* bias, MatT<T>& C) {
  namespace ei = Eigen::internal;
  using Packet = typename NarrowKernel<T>::Packet;
  constexpr Index P = NarrowKernel<T>::kPacket, kExamples = P / Rows;
  alignas(64) T pattern[P] = {};
  if (bias)
    for (Index t = 0; t < P; ++t) pattern[t] = bias[t % Rows];
  const Packet bias_packet = ei::pload<Packet>(pattern);
  const Index n = B.cols();
  Index j = 0;
  for (; j + kExamples <= n; j += kExamples) {
    const T* columns = B.data() + j * K;
    // Output t % Rows of example t / Rows: the packet one predux would reduce.
    const auto leaf = [&](int t) { return dot_packet(W + (t % Rows) * K, columns + (t / Rows) * K, K); };
    Packet out;
    if constexpr (P == 16) out = transposed_predux_16(leaf);
    else out = transposed_predux_8(leaf);
    ei::pstoreu(C.data() + j * Rows, bias ? ei::padd(out, bias_packet) : out);
  }
  return j;
}
#endif

/// C = W B + bias for W [rows x K] row-major with fewer rows than a packet (a network's 1-4
/// outputs) and at least a packet of inputs: one dot product per output and example along the
/// contiguous K, reduced across the packet at the end. 1.7x faster than Eigen's GEMM, which spends
/// a 48-row micro-kernel on 2 rows (2 x 16 by 16 x 246..1202 floats). With AVX-512, whole packets of
/// K and a row count dividing the packet, the dot products of a packet's worth of C (P / rows
/// examples, C's storage order) are reduced together by transposed_predux, bit for bit as one
/// predux each, and stored as one packet.
template <typename T>
void few_rows_product(const T* W, Index rows, Index K, const MatT<T>& B, const T* bias, MatT<T>& C) {
  namespace ei = Eigen::internal;
  using Packet = typename NarrowKernel<T>::Packet;
  constexpr Index P = NarrowKernel<T>::kPacket;
  const Index n = B.cols(), whole = K / P * P;
  C.resize(rows, n);
  Index j = 0;
#ifdef EIGEN_VECTORIZE_AVX512
  if constexpr (sizeof(Packet) == 64 && (P == 16 || P == 8)) {  // float or double in 512-bit packets
    if (whole == K) {
      if (rows == 1) j = few_rows_by_transposed_predux<1>(W, K, B, bias, C);
      else if (rows == 2) j = few_rows_by_transposed_predux<2>(W, K, B, bias, C);
      else if (rows == 4) j = few_rows_by_transposed_predux<4>(W, K, B, bias, C);
    }
  }
#endif
  for (; j < n; ++j) {
    const T* b = B.data() + j * K;
    for (Index o = 0; o < rows; ++o) {
      const T* w = W + o * K;
      T value = ei::predux(dot_packet(w, b, whole));
      for (Index k = whole; k < K; ++k) value += w[k] * b[k];
      C(o, j) = bias ? value + bias[o] : value;
    }
  }
}

/// C = W B + bias for a weight W stored row-major [rows x K] (PyTorch's nn.Linear layout). Returns
/// whether the Epilogue (an activation, as in narrow_product) was applied to C.
template <typename T, typename Epilogue = LinearEpilogue>
bool weight_product(const T* W, Index rows, Index K, const MatT<T>& B, const T* bias, MatT<T>& C) {
  using Kernel = NarrowKernel<T>;
  if (Kernel::kVectorised && rows < Kernel::kPacket && rows <= 4 && K >= Kernel::kPacket) {
    few_rows_product(W, rows, K, B, bias, C);
    return false;
  }
  if (!Kernel::applies(rows) || K > Kernel::kMaxDepth) {
    const Eigen::Map<const RowMajorMatT<T>> w(W, rows, K);
    if constexpr (std::is_same_v<T, Dual>) {
      C = dual_product(w, B);
      if (bias) C.colwise() += Eigen::Map<const VecT<T>>(bias, rows);
    } else if (bias) {
      // Eigen's GEMM accumulates into C either way (C = W B zeroes it first): starting every column
      // at the bias saves the zeroing pass and a second pass to add the bias (B3's 100 x 1000 layer:
      // 237 -> 227 us). Column copies, not bias.replicate(), which divides per coefficient (385 us).
      C.resize(rows, B.cols());
      for (Index j = 0; j < C.cols(); ++j) std::copy_n(bias, rows, C.col(j).data());
      C.noalias() += w * B;
    } else {
      C.noalias() = w * B;
    }
    return false;
  }
  // The kernel reads weight columns: transpose once (rows*K values), zero-padded to whole packets.
  thread_local MatT<T> column_major;
  const Index padded = Kernel::packets(rows) * Kernel::kPacket;
  if (padded != rows) column_major.setZero(padded, K);
  else column_major.resize(rows, K);
  column_major.topRows(rows) = Eigen::Map<const RowMajorMatT<T>>(W, rows, K);
  return narrow_product<T, Epilogue>(column_major.data(), rows, padded, K, B, bias, C);
}

/// G += D B^T with G row-major [rows x K] (a weight gradient: a sum over the n examples of D's
/// and B's columns), D [rows x n], B [K x n], through NarrowKernel when either side's rows fit it:
/// D's, or B's (then the kernel forms G^T = B D^T); whole packets first. Returns false, doing
/// nothing, for other shapes.
template <typename T, typename RowMajorGradient>
bool add_transposed_product(RowMajorGradient&& G, const MatT<T>& D, const MatT<T>& B) {
  using Kernel = NarrowKernel<T>;
  auto whole_packets = [](Index rows) { return Kernel::applies(rows) && rows % Kernel::kPacket == 0; };
  const bool by_rows = whole_packets(D.rows()) || (!whole_packets(B.rows()) && Kernel::applies(D.rows()));
  if (!by_rows && !Kernel::applies(B.rows())) return false;
  const MatT<T>& left = by_rows ? D : B;  // the operand whose rows the kernel's packets take
  const MatT<T>& right = by_rows ? B : D;
  if (right.rows() == 0) return true;
  const Index packets = Kernel::packets(left.rows());
  thread_local MatT<T> column_major;  // G or G^T, with rows padded to whole packets
  column_major.setZero(packets * Kernel::kPacket, right.rows());
  Kernel::dispatch(packets, [&](auto R) {
    Kernel::template transposed_product<R>(left.data(), left.rows(), right.data(), right.rows(), right.cols(),
                                           column_major.data(), column_major.rows());
  });
  if (by_rows) {
    G += column_major.topRows(left.rows());
  } else {
    G += column_major.topRows(left.rows()).transpose();
  }
  return true;
}

/// db += D 1, a layer's bias gradient: the row sums of D [rows x n] (column-major) over the n
/// examples. Eigen's rowwise().sum() runs each row as one chain of scalar adds, each waiting for
/// the last (seed 003's 2-output layer over airfoil's 1,202 examples: 5% of a float32 gradient on
/// a Zen 4 host). Here D's storage is added a packet at a time into four accumulators when a packet
/// holds whole columns (rows divides the packet size: lane t sums row t % rows), else a column at
/// a time. The order of the additions differs from a row's left-to-right one; it is fixed, so every
/// run gives the same sums.
template <typename T, typename BiasGradient>
void add_row_sums(BiasGradient&& db, const MatT<T>& D) {
  using Kernel = NarrowKernel<T>;
  const Index rows = D.rows(), size = D.size();
  if (rows == 0 || D.cols() == 0) return;
  if constexpr (!Kernel::kVectorised) {
    db.noalias() += D.rowwise().sum();
  } else if (Kernel::kPacket % rows == 0) {
    namespace ei = Eigen::internal;
    using Packet = typename Kernel::Packet;
    constexpr Index P = Kernel::kPacket;
    const T* d = D.data();
    Packet acc[4];
    for (Packet& a : acc) a = ei::pset1<Packet>(T(0));
    Index i = 0;
    for (; i + 4 * P <= size; i += 4 * P)
      for (Index u = 0; u < 4; ++u) acc[u] = ei::padd(acc[u], ei::ploadu<Packet>(d + i + u * P));
    for (; i + P <= size; i += P) acc[0] = ei::padd(acc[0], ei::ploadu<Packet>(d + i));
    alignas(Packet) T lanes[P];
    ei::pstore(lanes, ei::padd(ei::padd(acc[0], acc[1]), ei::padd(acc[2], acc[3])));
    for (Index k = i; k < size; ++k) lanes[k - i] += d[k];  // the tail: whole columns, from lane 0
    for (Index t = 0; t < P; ++t) db[t % rows] += lanes[t];
  } else {
    thread_local VecT<T> sums;
    sums.setZero(rows);
    for (Index j = 0; j < D.cols(); ++j) sums += D.col(j);
    db += sums;
  }
}

/// An activated layer's weight and bias gradients in one pass over its cotangent D [rows x n]:
/// on entry D is the cotangent of the layer's outputs A = act(Z), on return that of Z (D .* act'(Z),
/// through Activation::derivative(D, A)); db += D 1 and G += D B^T (G row-major [rows x K], B
/// [K x n]), as activation_backward, a row sum and add_transposed_product do in three passes.
/// Returns false, doing nothing, unless rows are whole packets of NarrowKernel and K >= 1.
template <typename T, typename Activation, typename RowMajorGradient, typename BiasGradient>
bool add_activated_weight_gradient(RowMajorGradient&& G, BiasGradient&& db, MatT<T>& D, const MatT<T>& A, const MatT<T>& B) {
  using Kernel = NarrowKernel<T>;
  if (!Kernel::applies(D.rows()) || D.rows() % Kernel::kPacket != 0 || B.rows() == 0 || D.cols() == 0) return false;
  thread_local MatT<T> column_major;  // G as the kernel accumulates it: column-major
  thread_local VecT<T> bias_sums;
  column_major.setZero(D.rows(), B.rows());
  bias_sums.setZero(D.rows());
  Kernel::dispatch(Kernel::packets(D.rows()), [&](auto R) {
    Kernel::template transposed_product<R, Activation>(D.data(), D.rows(), B.data(), B.rows(), B.cols(), column_major.data(),
                                                       column_major.rows(), D.data(), A.data(), bias_sums.data());
  });
  G += column_major;
  db += bias_sums;
  return true;
}

}  // namespace uqnn::detail
