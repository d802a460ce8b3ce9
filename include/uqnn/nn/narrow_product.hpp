#pragma once
/// @file Matrix products of a dense layer whose output side is narrow (at most four SIMD packets of
/// rows: 64 floats or 32 doubles with AVX-512), as in the 2x16 to 2x50 networks of the seeds.
///
/// Eigen's GEMM packs both operands into blocks on every call. For a layer of 16 outputs over a
/// few hundred examples the packing costs as much as the arithmetic, and its micro-kernel is sized
/// for large matrices. Here the whole column of outputs for one example fits in one to four
/// registers, so the product runs without packing: each output column is a sum of weight columns
/// scaled by broadcast inputs (fused multiply-adds on Eigen's packets), several examples at a time
/// to reuse the loaded weight column. Measured on the shapes of seed 003's networks
/// (16 x 6 and 16 x 16 times 6 / 16 x 246..1202, /work/scratch/mb11.cpp): 1.5-4x faster than
/// Eigen's product in float and 2.3-4x in double. Larger layers keep Eigen's GEMM, which
/// blocks for the cache.
#include <algorithm>
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn::detail {

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

  /// C[:rows, j] = bias + sum_k A[:, k] B(k, j) for the first `full_rows` = R * kPacket rows.
  /// A is column-major with leading dimension lda, B column-major [K x n], C column-major with
  /// leading dimension ldc; bias may be null.
  template <int R>
  static void product(const T* A, Index lda, Index K, const T* B, Index n, const T* bias, T* C, Index ldc) {
    namespace ei = Eigen::internal;
    constexpr Index NC = columns_per_step(R);
    auto start = [&](Index r) { return bias ? ei::ploadu<Packet>(bias + r * kPacket) : ei::pset1<Packet>(T(0)); };
    Index j = 0;
    for (; j + NC <= n; j += NC) {
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
        for (Index r = 0; r < R; ++r) ei::pstoreu(C + (j + c) * ldc + r * kPacket, acc[c][r]);
    }
    for (; j < n; ++j) {
      Packet acc[R];
      for (Index r = 0; r < R; ++r) acc[r] = start(r);
      for (Index k = 0; k < K; ++k) {
        const Packet b = ei::pset1<Packet>(B[k + j * K]);
        for (Index r = 0; r < R; ++r) acc[r] = ei::pmadd(ei::ploadu<Packet>(A + k * lda + r * kPacket), b, acc[r]);
      }
      for (Index r = 0; r < R; ++r) ei::pstoreu(C + j * ldc + r * kPacket, acc[r]);
    }
  }

  /// G[:, k] += sum_j D[:rows, j] B(k, j) for the first R * kPacket rows of D (leading dimension
  /// ldd) and B column-major [K x n]; G column-major [rows x K] with leading dimension ldg. The
  /// K columns are done in chunks that keep their accumulators in registers.
  template <int R>
  static void transposed_product(const T* D, Index ldd, const T* B, Index K, Index n, T* G, Index ldg) {
    namespace ei = Eigen::internal;
    constexpr Index KC = std::clamp<Index>((kRegisters - R - 2) / R, 1, 16);
    for (Index k0 = 0; k0 < K; k0 += KC) {
      const Index kc = std::min(KC, K - k0);
      Packet acc[KC][R];
      for (Index k = 0; k < KC; ++k)
        for (Index r = 0; r < R; ++r) acc[k][r] = ei::pset1<Packet>(T(0));
      for (Index j = 0; j < n; ++j) {
        Packet d[R];
        for (Index r = 0; r < R; ++r) d[r] = ei::ploadu<Packet>(D + j * ldd + r * kPacket);
        const T* b = B + j * K + k0;
        for (Index k = 0; k < KC; ++k) {
          if (k == kc) break;
          const Packet bk = ei::pset1<Packet>(b[k]);
          for (Index r = 0; r < R; ++r) acc[k][r] = ei::pmadd(d[r], bk, acc[k][r]);
        }
      }
      for (Index k = 0; k < kc; ++k)
        for (Index r = 0; r < R; ++r) {
          T* g = G + (k0 + k) * ldg + r * kPacket;
          ei::pstoreu(g, ei::padd(ei::ploadu<Packet>(g), acc[k][r]));
        }
    }
  }

  /// Whether a product with `rows` outputs goes through the kernel: at least one packet of rows
  /// and at most kMaxPackets.
  static bool applies(Index rows) { return kVectorised && rows >= kPacket && rows <= kMaxPackets * kPacket; }
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
/// through NarrowKernel; the rows beyond its last whole packet and every other shape through Eigen.
template <typename T>
void narrow_product(const T* A, Index rows, Index lda, Index K, const MatT<T>& B, const T* bias, MatT<T>& C) {
  using Kernel = NarrowKernel<T>;
  const Index n = B.cols();
  C.resize(rows, n);
  const Eigen::Map<const MatT<T>, 0, Eigen::OuterStride<>> a(A, rows, K, Eigen::OuterStride<>(lda));
  Index done = 0;
  if (Kernel::applies(rows) && K <= Kernel::kMaxDepth) {
    const Index packets = rows / Kernel::kPacket;
    done = packets * Kernel::kPacket;
    Kernel::dispatch(packets, [&](auto R) { Kernel::template product<R>(A, lda, K, B.data(), n, bias, C.data(), rows); });
    if (done == rows) return;
  }
  auto rest = C.bottomRows(rows - done);
  rest.noalias() = a.bottomRows(rows - done) * B;
  if (bias) rest.colwise() += Eigen::Map<const VecT<T>>(bias + done, rows - done);
}

/// C = W B + bias for a weight W stored row-major [rows x K] (PyTorch's nn.Linear layout).
template <typename T>
void weight_product(const T* W, Index rows, Index K, const MatT<T>& B, const T* bias, MatT<T>& C) {
  if (!NarrowKernel<T>::applies(rows) || K > NarrowKernel<T>::kMaxDepth) {
    const Eigen::Map<const RowMajorMatT<T>> w(W, rows, K);
    C.noalias() = w * B;
    if (bias) C.colwise() += Eigen::Map<const VecT<T>>(bias, rows);
    return;
  }
  thread_local MatT<T> column_major;  // the kernel reads weight columns: transpose once (rows*K values)
  column_major = Eigen::Map<const RowMajorMatT<T>>(W, rows, K);
  narrow_product(column_major.data(), rows, rows, K, B, bias, C);
}

/// G += D B^T with G row-major [rows x K] (a weight gradient: a sum over the n examples of D's
/// and B's columns), D [rows x n], B [K x n].
template <typename T, typename RowMajorGradient>
void add_transposed_product(RowMajorGradient&& G, const MatT<T>& D, const MatT<T>& B) {
  using Kernel = NarrowKernel<T>;
  const Index rows = D.rows(), K = B.rows();
  if (!Kernel::applies(rows) || rows % Kernel::kPacket != 0) {
    G.noalias() += D * B.transpose();
    return;
  }
  thread_local MatT<T> column_major;
  column_major.setZero(rows, K);
  Kernel::dispatch(rows / Kernel::kPacket, [&](auto R) {
    Kernel::template transposed_product<R>(D.data(), rows, B.data(), K, B.cols(), column_major.data(), rows);
  });
  G += column_major;
}

}  // namespace uqnn::detail
