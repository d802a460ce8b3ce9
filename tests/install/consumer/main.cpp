// Samples a correlated 2-D Gaussian with the installed library's NUTS (uqnn::sample, the service
// behind the Python module's uqnn.sample) and checks the draws' moments: exit 0 only when the
// installed headers, library and its dependencies work together.
#include <cmath>
#include <cstdio>
#include <memory>

#include "uqnn/services/sample.hpp"

namespace {

/// N(0, Sigma) with sds 1 and 10 and correlation 0.9.
class CorrelatedGaussian : public uqnn::LogDensity {
 public:
  CorrelatedGaussian() {
    uqnn::Mat sigma(2, 2);
    sigma << 1.0, 9.0, 9.0, 100.0;
    precision_ = sigma.inverse();
  }
  uqnn::Index dim() const override { return 2; }
  double log_density_and_grad(const uqnn::Vec& theta, uqnn::Vec& grad) const override {
    grad = -precision_ * theta;
    return 0.5 * theta.dot(grad);
  }

 private:
  uqnn::Mat precision_;
};

}  // namespace

int main() {
  const auto result = uqnn::sample(std::make_shared<CorrelatedGaussian>(), uqnn::Vec(uqnn::Vec::Zero(2)), "nuts",
                                   {{"chains", 2, "consumer"}, {"seed", 1, "consumer"}});
  double n = 0, mean1 = 0, square1 = 0;
  for (const auto& chain : result.run.draws)
    for (uqnn::Index i = 0; i < chain.rows(); ++i) {
      ++n;
      mean1 += chain(i, 1);
      square1 += chain(i, 1) * chain(i, 1);
    }
  mean1 /= n;
  const double sd1 = std::sqrt(square1 / n - mean1 * mean1);
  std::printf("consumer: %g draws, mean %.3f (exact 0), sd %.3f (exact 10)\n", n, mean1, sd1);
  // Loose bounds: this checks the installation, not the sampler (the suite tests NUTS itself).
  return (n == 2000 && std::abs(mean1) < 2.0 && std::abs(sd1 - 10.0) < 2.0) ? 0 : 1;
}
