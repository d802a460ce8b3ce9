// The dense products of a wide network's gradient (issue 19 item 1: "for dgemm, compare Eigen,
// OpenBLAS and BLIS from Debian; use a library wherever it wins"), one thread: Eigen's GEMM, which
// uqnn uses, against Debian's OpenBLAS and BLIS (their serial builds, libopenblas0-serial and
// libblis4-serial), each called through its cblas_?gemm. The libraries are opened with dlopen, so
// this benchmark builds without them and skips a library that is not installed; uqnn itself links
// no BLAS.
//
// Shapes: B3's 100-wide hidden layer over N = 1000 examples, as DenseStack computes it: the forward
// product Z = W A (100x100 by 100x1000), the input gradient W^T dZ, and the weight gradient
// dZ A^T over a block of 256 examples (DenseStack sums it block by block); 256^3 as a square
// reference; Table 3's 16-wide layer over bike sharing's ~14,000 training rows, and its 2-output
// last layer (uqnn: few_rows_product) over airfoil's and bike sharing's rows.
// Run: build/bench/gemm_libraries_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// (figures in docs/performance.md, "Dense products: Eigen, OpenBLAS, BLIS").
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <Eigen/Dense>
#include <string>
#include <type_traits>
#include <vector>

#include "host.hpp"
#include "uqnn/nn/narrow_product.hpp"

namespace uqnn::bench {
namespace {

// CBLAS's enum values (cblas.h), fixed by the standard's reference implementation.
constexpr int kColMajor = 102, kNoTrans = 111, kTrans = 112;

template <typename T>
using CblasGemm = void (*)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int);

struct BlasLibrary {
  std::string name, debian_package;
  CblasGemm<double> dgemm = nullptr;
  CblasGemm<float> sgemm = nullptr;
  template <typename T>
  CblasGemm<T> gemm() const {
    if constexpr (std::is_same_v<T, double>) return dgemm;
    else return sgemm;
  }
};

/// Opens the first of `paths` that exists and sets it to one thread with `set_threads` (if it has it).
BlasLibrary open_library(const std::string& name, const std::string& debian_package, const std::vector<std::string>& paths,
                         const char* set_threads) {
  BlasLibrary lib{name, debian_package};
  for (const auto& path : paths) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) continue;
    lib.dgemm = reinterpret_cast<CblasGemm<double>>(dlsym(handle, "cblas_dgemm"));
    lib.sgemm = reinterpret_cast<CblasGemm<float>>(dlsym(handle, "cblas_sgemm"));
    if (auto* set = reinterpret_cast<void (*)(int)>(dlsym(handle, set_threads))) set(1);
    return lib;
  }
  return lib;
}

struct Shape {
  const char* label;
  int m, n, k;
  bool trans_a, trans_b;  // C[m, n] = op(A) op(B), op(A) [m, k], op(B) [k, n]
};

constexpr Shape kShapes[] = {
    // W is a row-major view of theta: column-major, the buffer holds W^T.
    {"B3_forward_W_A", 100, 1000, 100, true, false},
    {"B3_input_grad_Wt_dZ", 100, 1000, 100, false, false},
    // dW (row-major) += dZ A^T is, column-major, dW^T += A dZ^T.
    {"B3_weight_grad_dZ_At_256", 100, 100, 256, false, true},
    {"square_256", 256, 256, 256, false, false},
    {"table3_forward_16x14000", 16, 14000, 16, true, false},
    // Table 3's heteroscedastic output layer (2 x 16) over airfoil's and bike sharing's rows.
    {"table3_output_2x1202", 2, 1202, 16, true, false},
    {"table3_output_2x14000", 2, 14000, 16, true, false},
};

template <typename T>
struct Operands {
  MatT<T> A, B, C;
  explicit Operands(const Shape& s)
      : A(s.trans_a ? MatT<T>::Random(s.k, s.m) : MatT<T>::Random(s.m, s.k)),
        B(s.trans_b ? MatT<T>::Random(s.n, s.k) : MatT<T>::Random(s.k, s.n)),
        C(s.m, s.n) {}
};

void set_flops(benchmark::State& state, const Shape& s) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * s.m * s.n * s.k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <typename T>
void BM_Eigen(benchmark::State& state, Shape s) {
  Operands<T> o(s);
  for (auto _ : state) {
    if (s.trans_a) o.C.noalias() = o.A.transpose() * o.B;
    else if (s.trans_b) o.C.noalias() = o.A * o.B.transpose();
    else o.C.noalias() = o.A * o.B;
    benchmark::DoNotOptimize(o.C.data());
  }
  set_flops(state, s);
}

/// What uqnn's network runs for a forward product (W row-major, as in theta): NarrowKernel for
/// layers of up to four packets of outputs, Eigen's GEMM otherwise (detail::weight_product).
template <typename T>
void BM_UqnnForward(benchmark::State& state, Shape s) {
  Operands<T> o(s);
  MatT<T> C;
  for (auto _ : state) {
    detail::weight_product<T>(o.A.data(), s.m, s.k, o.B, nullptr, C);
    benchmark::DoNotOptimize(C.data());
  }
  set_flops(state, s);
}

template <typename T>
void BM_Cblas(benchmark::State& state, Shape s, CblasGemm<T> gemm) {
  Operands<T> o(s);
  const int lda = static_cast<int>(o.A.rows()), ldb = static_cast<int>(o.B.rows());
  for (auto _ : state) {
    gemm(kColMajor, s.trans_a ? kTrans : kNoTrans, s.trans_b ? kTrans : kNoTrans, s.m, s.n, s.k, T(1), o.A.data(), lda,
         o.B.data(), ldb, T(0), o.C.data(), s.m);
    benchmark::DoNotOptimize(o.C.data());
  }
  set_flops(state, s);
}

/// A forward layer product: the weight transposed in column-major terms (row-major W), as m x k.
bool forward(const Shape& s) { return s.trans_a && !s.trans_b; }

template <typename T>
void register_precision(const Shape& s, const std::vector<BlasLibrary>& libraries) {
  const std::string suffix = std::string(std::is_same_v<T, double> ? "/double/" : "/float/") + s.label;
  benchmark::RegisterBenchmark(("eigen" + suffix).c_str(), BM_Eigen<T>, s)->Unit(benchmark::kMicrosecond);
  if (forward(s)) benchmark::RegisterBenchmark(("uqnn_layer" + suffix).c_str(), BM_UqnnForward<T>, s)->Unit(benchmark::kMicrosecond);
  for (const auto& lib : libraries)
    if (auto gemm = lib.gemm<T>()) benchmark::RegisterBenchmark((lib.name + suffix).c_str(), BM_Cblas<T>, s, gemm)->Unit(benchmark::kMicrosecond);
}

void register_all() {
  const std::string lib_dir = "/usr/lib/x86_64-linux-gnu/";
  const std::vector<BlasLibrary> libraries = {
      open_library("openblas", "libopenblas0-serial", {lib_dir + "openblas-serial/libopenblas.so.0", "libopenblas.so.0"},
                   "openblas_set_num_threads"),
      open_library("blis", "libblis4-serial", {lib_dir + "blis-serial/libblis.so.4", "libblis.so.4"}, "bli_thread_set_num_threads"),
  };
  for (const Shape& s : kShapes) {
    register_precision<double>(s, libraries);
    register_precision<float>(s, libraries);
  }
  for (const auto& lib : libraries)
    if (!lib.dgemm) benchmark::AddCustomContext("skipped_" + lib.name, "not installed (Debian: " + lib.debian_package + ")");
}

}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("cpu_model", uqnn::bench::cpu_model());
  uqnn::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
