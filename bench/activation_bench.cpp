// Element-wise activations (issue 19 item 2): the rate in G values/s of today's kernels ("new", on the
// build's widest packet and on the 256-bit half), the previous implementation ("old", copied below as
// the baseline), and Debian's SLEEF 3.5 at <= 1 ulp (u10, when libsleef-dev was found), for tanh,
// sigmoid, silu and sine in double (float keeps Eigen's kernels; commit 97193ce measured 2-ulp float
// versions at 0.32-0.52x their speed), on 100,000 values drawn N(0, 2^2) as pre-activations
// are, and on a 100 x 1000 matrix of 2 * Uniform(-1, 1) (gradient_bench's tanh_rate).
// Run: build/bench/activation_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// (medians in docs/performance.md, "Activations"). Rates are per CPU second (items_per_second).
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "host.hpp"
#include "uqnn/nn/activation.hpp"
#if defined(UQNN_BENCH_SLEEF) && defined(__AVX512F__)
#include <sleef.h>
#endif

namespace uqnn::bench {
namespace {

namespace ei = Eigen::internal;

/// The baseline: uqnn's activations before issue 19 (Eigen's exp with a division inside, a division
/// per value, a Taylor branch below 0.1; std::sin per element for double, Eigen's rational tanh and
/// its sin for float).
namespace old {
inline void tanh_kernel(const double* in, double* out, Index n) {
  using Packet = ei::packet_traits<double>::type;
  constexpr Index kWidth = ei::unpacket_traits<Packet>::size;
  const Packet one = ei::pset1<Packet>(1.0), minus_two = ei::pset1<Packet>(-2.0);
  const Packet threshold = ei::pset1<Packet>(0.1), sign_mask = ei::pset1<Packet>(-0.0);
  const Packet c3 = ei::pset1<Packet>(-1.0 / 3.0), c5 = ei::pset1<Packet>(2.0 / 15.0),
               c7 = ei::pset1<Packet>(-17.0 / 315.0), c9 = ei::pset1<Packet>(62.0 / 2835.0),
               c11 = ei::pset1<Packet>(-1382.0 / 155925.0), c13 = ei::pset1<Packet>(21844.0 / 6081075.0);
  const auto packet = [&](const Packet& x) {
    const Packet ax = ei::pabs(x);
    const Packet e = ei::pexp(ei::pmul(minus_two, ax));
    const Packet t = ei::pdiv(ei::psub(one, e), ei::padd(one, e));
    const Packet large = ei::por(t, ei::pand(x, sign_mask));
    const Packet x2 = ei::pmul(x, x);
    Packet s = ei::pmadd(x2, c13, c11);
    s = ei::pmadd(x2, s, c9);
    s = ei::pmadd(x2, s, c7);
    s = ei::pmadd(x2, s, c5);
    s = ei::pmadd(x2, s, c3);
    s = ei::pmadd(x2, s, one);
    const Packet small = ei::pmul(x, s);
    return ei::pselect(ei::pcmp_lt(ax, threshold), small, large);
  };
  Index i = 0;
  for (; i + kWidth <= n; i += kWidth) ei::pstoreu(out + i, packet(ei::ploadu<Packet>(in + i)));
  if (i < n) {
    alignas(64) double buffer[kWidth] = {};
    for (Index k = i; k < n; ++k) buffer[k - i] = in[k];
    ei::pstoreu(buffer, packet(ei::ploadu<Packet>(buffer)));
    for (Index k = i; k < n; ++k) out[k] = buffer[k - i];
  }
}
template <typename T>
void activate(Activation f, const MatT<T>& Z, MatT<T>& A) {
  const auto z = Z.array();
  switch (f) {
    case Activation::Tanh:
      A.resize(Z.rows(), Z.cols());
      tanh_kernel(Z.data(), A.data(), Z.size());
      return;
    case Activation::Sigmoid: A = (T(1) / (T(1) + (-z).exp())).matrix(); return;
    case Activation::Silu: A = (z / (T(1) + (-z).exp())).matrix(); return;
    case Activation::Sine: A = z.sin().matrix(); return;
    default: return;
  }
}
}  // namespace old

enum class Input { Normal100k, Matrix100x1000 };

template <typename T>
MatT<T> make_input(Input input) {
  if (input == Input::Matrix100x1000) return (2.0 * Mat::Random(100, 1000)).cast<T>();
  std::mt19937_64 rng(19);
  std::normal_distribution<double> normal(0.0, 2.0);
  MatT<T> z(100000, 1);
  for (Index i = 0; i < z.size(); ++i) z(i) = static_cast<T>(normal(rng));
  return z;
}

template <typename T, typename F>
void run(benchmark::State& state, Input input, F f) {
  const MatT<T> Z = make_input<T>(input);
  MatT<T> A(Z.rows(), Z.cols());
  for (auto _ : state) {
    f(Z, A);
    benchmark::DoNotOptimize(A.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * Z.size());
}

template <typename Packet>
void new_kernel(Activation f, const MatT<typename ei::unpacket_traits<Packet>::type>& Z,
                MatT<typename ei::unpacket_traits<Packet>::type>& A) {
  switch (f) {
    case Activation::Tanh: detail::tanh_array<Packet>(Z.data(), A.data(), Z.size()); return;
    case Activation::Sigmoid: detail::sigmoid_array<Packet>(Z.data(), A.data(), Z.size()); return;
    case Activation::Silu: detail::silu_array<Packet>(Z.data(), A.data(), Z.size()); return;
    case Activation::Sine: detail::sincos_array<Packet, false>(Z.data(), A.data(), Z.size()); return;
    default: return;
  }
}

#if defined(UQNN_BENCH_SLEEF) && defined(__AVX512F__)
/// SLEEF at the width of the packet, u10 (<= 1.0 ulp; u35 would break the 2-ulp bound). sigmoid and
/// silu through Sleef's exp: 1 / (1 + e^-x) and x / (1 + e^-x) in packets.
template <typename T>
void sleef_kernel(Activation f, const MatT<T>& Z, MatT<T>& A) {
  const Index n = Z.size();
  const T* in = Z.data();
  T* out = A.data();
  static_assert(std::is_same_v<T, double>, "the library's kernels are double only");
  {
    const __m512d one = _mm512_set1_pd(1.0);
    for (Index i = 0; i + 8 <= n; i += 8) {
      const __m512d x = _mm512_loadu_pd(in + i);
      __m512d y;
      switch (f) {
        case Activation::Tanh: y = Sleef_tanhd8_u10avx512f(x); break;
        case Activation::Sine: y = Sleef_sind8_u10avx512f(x); break;
        case Activation::Sigmoid: y = _mm512_div_pd(one, _mm512_add_pd(one, Sleef_expd8_u10avx512f(_mm512_sub_pd(_mm512_setzero_pd(), x)))); break;
        default: y = _mm512_div_pd(x, _mm512_add_pd(one, Sleef_expd8_u10avx512f(_mm512_sub_pd(_mm512_setzero_pd(), x)))); break;
      }
      _mm512_storeu_pd(out + i, y);
    }
  }
}
#endif

template <typename T>
void register_all() {
  const std::string precision = std::is_same_v<T, double> ? "double" : "float";
  for (Activation f : {Activation::Tanh, Activation::Sigmoid, Activation::Silu, Activation::Sine}) {
    for (Input input : {Input::Normal100k, Input::Matrix100x1000}) {
      const std::string suffix = "/" + to_string(f) + "/" + precision + (input == Input::Normal100k ? "/normal100k" : "/matrix100x1000");
      benchmark::RegisterBenchmark(("old" + suffix).c_str(), [f, input](benchmark::State& s) {
        run<T>(s, input, [f](const MatT<T>& Z, MatT<T>& A) { old::activate<T>(f, Z, A); });
      });
      benchmark::RegisterBenchmark(("new" + suffix).c_str(), [f, input](benchmark::State& s) {
        run<T>(s, input, [f](const MatT<T>& Z, MatT<T>& A) { activate<T>(f, Z, A); });
      });
      if constexpr (ei::unpacket_traits<typename ei::packet_traits<T>::type>::size * sizeof(T) == 64) {
        using Half = typename ei::packet_traits<T>::half;
        benchmark::RegisterBenchmark(("new256" + suffix).c_str(), [f, input](benchmark::State& s) {
          run<T>(s, input, [f](const MatT<T>& Z, MatT<T>& A) { new_kernel<Half>(f, Z, A); });
        });
#if defined(UQNN_BENCH_SLEEF) && defined(__AVX512F__)
        benchmark::RegisterBenchmark(("sleef_u10_512" + suffix).c_str(), [f, input](benchmark::State& s) {
          run<T>(s, input, [f](const MatT<T>& Z, MatT<T>& A) { sleef_kernel<T>(f, Z, A); });
        });
#endif
      }
    }
  }
}

}  // namespace
}  // namespace uqnn::bench

int main(int argc, char** argv) {
  benchmark::AddCustomContext("cpu_model", uqnn::bench::cpu_model());
  uqnn::bench::register_all<double>();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
