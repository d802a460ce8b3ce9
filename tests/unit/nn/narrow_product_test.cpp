// NarrowKernel's products against Eigen's on every path: whole packets of rows, packets ending in
// a partial one, fewer rows than a packet (few_rows_product for 1-3 rows; the weight gradient by
// B's packets when K fits the kernel), more than the kernel takes; column counts that do and do
// not fill the kernel's column steps; with and without a bias; float and double. The sanitizer
// build runs this too: a partial packet must neither read nor write past its matrix.
#include <gtest/gtest.h>

#include "uqnn/core/rng.hpp"
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
      }
  if (Kernel::kVectorised) EXPECT_GT(kernel_shapes, 0) << "no shape went through the kernel";
}

TEST(NarrowProduct, DoubleAgreesWithEigen) { check_products<double>(1e-15); }
TEST(NarrowProduct, FloatAgreesWithEigen) { check_products<float>(1e-6); }

}  // namespace
}  // namespace uqnn
