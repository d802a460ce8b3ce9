// NarrowKernel's products against Eigen's on every path: whole packets of rows, packets ending in
// a partial one, fewer rows than a packet (few_rows_product for 1-3 rows; the weight gradient by
// B's packets when K fits the kernel), more than the kernel takes; column counts that do and do
// not fill the kernel's column steps; with and without a bias; the bias gradient's row sums; float
// and double. The sanitizer build runs this too: a partial packet must neither read nor write past
// its matrix.
#include <gtest/gtest.h>

#include <limits>
#include <type_traits>

#include "uqnn/core/rng.hpp"
#include "uqnn/nn/activation.hpp"
#include "uqnn/nn/narrow_product.hpp"

namespace uqnn {
namespace {

template <typename T>
MatT<T> random_matrix(Rng& rng, Index rows, Index cols) {
  MatT<T> m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(rng.uniform(-1, 1));
  return m;
}

template <typename A, typename B>
double max_abs_difference(const A& a, const B& b) {
  return a.size() == 0 ? 0.0 : static_cast<double>((a - b).cwiseAbs().maxCoeff());
}

template <typename T>
void check_products(double tolerance) {
  using Kernel = detail::NarrowKernel<T>;
  const Index P = Kernel::kPacket;
  Rng rng(5);
  int kernel_shapes = 0;
  for (Index rows : {Index(1), Index(2), Index(3), P - 1, P, P + 3, 2 * P, 3 * P + 1, 4 * P, 4 * P + 1, 6 * P})
    for (Index K : {Index(1), Index(2), Index(7), Index(16), Index(19), Index(40)})
      for (Index n : {Index(0), Index(1), Index(5), Index(8), Index(17), Index(130)}) {
        if (rows < 1) continue;
        SCOPED_TRACE(::testing::Message() << "rows " << rows << " K " << K << " n " << n);
        kernel_shapes += Kernel::applies(rows);
        const RowMajorMatT<T> W = random_matrix<T>(rng, rows, K);
        const MatT<T> B = random_matrix<T>(rng, K, n), D = random_matrix<T>(rng, rows, n);
        const VecT<T> bias = random_matrix<T>(rng, rows, 1);
        // A layer's forward product: W B + bias, W in PyTorch's row-major layout.
        MatT<T> C;
        detail::weight_product(W.data(), rows, K, B, bias.data(), C);
        MatT<T> expected = W * B;
        expected.colwise() += bias;
        ASSERT_EQ(C.rows(), rows);
        ASSERT_EQ(C.cols(), n);
        EXPECT_LE(max_abs_difference(C, expected), tolerance * K) << "forward";
        // The reverse pass's W^T D from W's row-major storage; C is reused with another shape.
        detail::narrow_product(W.data(), K, K, rows, D, static_cast<const T*>(nullptr), C);
        const MatT<T> expected_t = W.transpose() * D;
        ASSERT_EQ(C.rows(), K);
        EXPECT_LE(max_abs_difference(C, expected_t), tolerance * rows) << "transposed weight";
        // Weight gradient: G += D B^T into a row-major G that already holds values.
        const RowMajorMatT<T> G0 = random_matrix<T>(rng, rows, K);
        RowMajorMatT<T> G = G0;
        const bool by_kernel = Kernel::applies(rows) || Kernel::applies(K);
        EXPECT_EQ(detail::add_transposed_product<T>(G, D, B), by_kernel);
        if (!by_kernel) G.noalias() += D * B.transpose();
        const RowMajorMatT<T> expected_g = G0 + D * B.transpose();
        EXPECT_LE(max_abs_difference(G, expected_g), tolerance * (n + 1)) << "weight gradient";
        // Bias gradient: db += D 1 into a vector that already holds values.
        const VecT<T> db0 = random_matrix<T>(rng, rows, 1);
        VecT<T> db = db0;
        detail::add_row_sums<T>(db, D);
        // Summed a column at a time: Eigen's rowwise().sum() offsets D's null data when n is 0 (UBSan).
        VecT<T> expected_db = db0;
        for (Index j = 0; j < n; ++j) expected_db += D.col(j);
        EXPECT_LE(max_abs_difference(db, expected_db), tolerance * (n + 1)) << "bias gradient";
      }
  if (Kernel::kVectorised) {
    EXPECT_GT(kernel_shapes, 0) << "no shape went through the kernel";
  }
}

// few_rows_product reduces a packet's worth of dot products at once (transposed_predux, AVX-512):
// bit for bit what one predux per output and example gives, the sums the forward pass had before
// (so draws do not change). The reference is that per-element code, written out here.
template <typename T>
void check_few_rows_bitwise() {
  namespace ei = Eigen::internal;
  using Kernel = detail::NarrowKernel<T>;
  using Packet = typename Kernel::Packet;
  const Index P = Kernel::kPacket;
  if (!Kernel::kVectorised) GTEST_SKIP() << "no SIMD packets";
  Rng rng(11);
  for (Index rows : {Index(1), Index(2), Index(3), Index(4)})
    for (Index K : {P, 2 * P, 3 * P, P + 3})
      for (Index n : {Index(1), Index(7), Index(16), Index(33), Index(250)})
        for (bool with_bias : {true, false}) {
          if (rows >= P) continue;
          SCOPED_TRACE(::testing::Message() << "rows " << rows << " K " << K << " n " << n << " bias " << with_bias);
          // Values of mixed magnitude, so that a different order of the additions shows in the bits.
          RowMajorMatT<T> W = random_matrix<T>(rng, rows, K);
          MatT<T> B = random_matrix<T>(rng, K, n);
          for (Index i = 0; i < B.size(); i += 3) B.data()[i] *= T(1e4);
          const VecT<T> bias = random_matrix<T>(rng, rows, 1);
          MatT<T> C;
          detail::few_rows_product(W.data(), rows, K, B, with_bias ? bias.data() : nullptr, C);
          ASSERT_EQ(C.rows(), rows);
          ASSERT_EQ(C.cols(), n);
          const Index whole = K / P * P;
          for (Index j = 0; j < n; ++j)
            for (Index o = 0; o < rows; ++o) {
              const T* w = W.data() + o * K;
              const T* b = B.data() + j * K;
              Packet sum = ei::pmul(ei::ploadu<Packet>(w), ei::ploadu<Packet>(b));
              for (Index k = P; k < whole; k += P) sum = ei::pmadd(ei::ploadu<Packet>(w + k), ei::ploadu<Packet>(b + k), sum);
              T value = ei::predux(sum);
              for (Index k = whole; k < K; ++k) value += w[k] * b[k];
              if (with_bias) value += bias[o];
              ASSERT_EQ(C(o, j), value) << "output " << o << " example " << j;
            }
        }
}

TEST(NarrowProduct, FewRowsDoubleIsBitwiseOnePreduxPerOutput) { check_few_rows_bitwise<double>(); }
TEST(NarrowProduct, FewRowsFloatIsBitwiseOnePreduxPerOutput) { check_few_rows_bitwise<float>(); }

TEST(NarrowProduct, DoubleAgreesWithEigen) { check_products<double>(1e-15); }
TEST(NarrowProduct, FloatAgreesWithEigen) { check_products<float>(1e-6); }

// A layer's activation fused into the kernel's passes (dense_forward, dense_backward) against the
// separate passes it replaces: the forward product stores act(W B + b), bitwise what activate()
// makes of the plain product; the weight gradient's pass turns the cotangent of the outputs into
// that of the pre-activations in place (bitwise activation_backward's) and adds dW and db.
template <typename T, Activation Kind>
void check_activated(double tolerance) {
  using Kernel = detail::NarrowKernel<T>;
  using Fused = detail::PacketActivation<T, Kind>;
  const Index P = Kernel::kPacket;
  Rng rng(11);
  int fused_forward = 0, fused_backward = 0;
  for (Index rows : {Index(2), P - 1, P, P + 3, 2 * P, 4 * P, 6 * P})
    for (Index K : {Index(1), Index(7), Index(16), Index(19)})
      for (Index n : {Index(0), Index(1), Index(5), Index(17), Index(130)}) {
        if (rows < 1) continue;
        SCOPED_TRACE(::testing::Message() << to_string(Kind) << " rows " << rows << " K " << K << " n " << n);
        const RowMajorMatT<T> W = random_matrix<T>(rng, rows, K);
        const MatT<T> B = random_matrix<T>(rng, K, n);
        const VecT<T> bias = random_matrix<T>(rng, rows, 1);
        MatT<T> fused, plain;
        const bool applied = detail::weight_product<T, Fused>(W.data(), rows, K, B, bias.data(), fused);
        detail::weight_product(W.data(), rows, K, B, bias.data(), plain);
        EXPECT_EQ(applied, Kernel::applies(rows) && K <= Kernel::kMaxDepth);
        fused_forward += applied && n > 0;
        MatT<T> expected = plain;
        if (applied) activate(Kind, plain, expected);
        ASSERT_EQ(fused.rows(), rows);
        ASSERT_EQ(fused.cols(), n);
        if (Kind == Activation::Sigmoid && std::is_same_v<T, float>) {
          // Eigen's float sigmoid takes std::exp for the elements past the array's last whole
          // packet, the fused packet its pexp: the two differ by an ulp there.
          EXPECT_LE(max_abs_difference(fused, expected), 2 * std::numeric_limits<T>::epsilon()) << "forward";
        } else {
          EXPECT_TRUE(fused == expected) << "forward, largest difference " << max_abs_difference(fused, expected);
        }

        // Backward: the layer's outputs A = act(Z) and the cotangent D of A.
        const MatT<T> Z = 3 * random_matrix<T>(rng, rows, n);
        MatT<T> A;
        activate(Kind, Z, A);
        const MatT<T> D0 = random_matrix<T>(rng, rows, n);
        const RowMajorMatT<T> G0 = random_matrix<T>(rng, rows, K);
        const VecT<T> db0 = random_matrix<T>(rng, rows, 1);
        MatT<T> D = D0;
        RowMajorMatT<T> G = G0;
        VecT<T> db = db0;
        const bool one_pass = detail::add_activated_weight_gradient<T, Fused>(G, db, D, A, B);
        EXPECT_EQ(one_pass, Kernel::applies(rows) && rows % P == 0 && n > 0);
        fused_backward += one_pass;
        if (!one_pass) {
          EXPECT_TRUE(D == D0 && G == G0 && db == db0) << "a refused shape changed its operands";
          continue;
        }
        MatT<T> expected_d = D0;
        activation_backward(Kind, Z, A, expected_d);
        EXPECT_TRUE(D == expected_d) << "cotangent, largest difference " << max_abs_difference(D, expected_d);
        const RowMajorMatT<T> expected_g = G0 + expected_d * B.transpose();
        const VecT<T> expected_db = db0 + expected_d.rowwise().sum();
        EXPECT_LE(max_abs_difference(G, expected_g), tolerance * (n + 1)) << "weight gradient";
        EXPECT_LE(max_abs_difference(db, expected_db), tolerance * (n + 1)) << "bias gradient";
      }
  if (Kernel::kVectorised) {
    EXPECT_GT(fused_forward, 0) << "no forward product applied the activation";
    EXPECT_GT(fused_backward, 0) << "no weight gradient went through one pass";
  }
}

TEST(NarrowProduct, FusedActivationsAgreeWithTheirSeparatePasses) {
  check_activated<double, Activation::Relu>(1e-15);
  check_activated<double, Activation::Tanh>(1e-15);
  check_activated<double, Activation::Sigmoid>(1e-15);
  check_activated<float, Activation::Relu>(1e-6);
  check_activated<float, Activation::Tanh>(1e-6);
  check_activated<float, Activation::Sigmoid>(1e-6);
}

}  // namespace
}  // namespace uqnn
