// One minibatch gradient of a convolutional network (nn/cnn.hpp): the outputs, a loss with a fixed
// output cotangent and the gradient in theta, batch 125, one thread, in
// float64 and float32, for a LeNet-5-like network and a small ResNet on 1x28x28 inputs.
//
//   lenet5:   conv6k5p2,pool2,conv16k5,pool2,fc120,fc84 -> 10 (relu; 61,706 parameters)
//   resnet8:  resnet8w16 (GroupNorm, relu) -> 10 (77,754 parameters)
//
// Run: build/bench/cnn_gradient_bench [--benchmark_filter=lenet]. CPU time per gradient is the
// figure to read (robust when other processes share the core).
#include <benchmark/benchmark.h>

#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/cnn_layer_list.hpp"

namespace uqnn::bench {
namespace {

constexpr Index kBatch = 125;

Cnn network(const std::string& layers) {
  const ImageShape shape{1, 28, 28};
  return Cnn(shape, parse_cnn_layers(layers, shape, 10, Activation::Relu), InitScheme::He, layers);
}

void BM_CnnGradient(benchmark::State& state, const std::string& layers, Precision precision) {
  Cnn net = network(layers);
  net.set_precision(precision);
  Rng rng(1);
  const Vec theta = net.initial_params(rng);
  Mat X(net.input_dim(), kBatch);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
  const MatT<float> X_float = X.cast<float>();
  Mat C(net.output_dim(), kBatch);
  for (Index i = 0; i < C.size(); ++i) C.data()[i] = rng.normal();
  const OutputLoss<double> loss = [&C](const Mat& Y, Mat& dY) {
    dY = C;
    return C.cwiseProduct(Y).sum();
  };
  Vec grad(net.num_params());
  for (auto _ : state) {
    grad.setZero();
    benchmark::DoNotOptimize(net.value_and_gradient(theta, X, X_float, loss, grad));
  }
  state.counters["params"] = static_cast<double>(net.num_params());
  state.counters["batch"] = static_cast<double>(kBatch);
}

const std::string kLeNet = "conv6k5p2,pool2,conv16k5,pool2,fc120,fc84";
const std::string kResNet = "resnet8w16";

BENCHMARK_CAPTURE(BM_CnnGradient, lenet5_float64, kLeNet, Precision::Float64)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_CnnGradient, lenet5_float32, kLeNet, Precision::Float32)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_CnnGradient, resnet8_float64, kResNet, Precision::Float64)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_CnnGradient, resnet8_float32, kResNet, Precision::Float32)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace uqnn::bench

BENCHMARK_MAIN();
