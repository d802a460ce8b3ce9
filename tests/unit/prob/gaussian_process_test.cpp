// GaussianProcess: kernels, log marginal likelihood against a hand-computed two-point case, its
// gradient against central finite differences, jittered Cholesky, and the type-II ML fit.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "uqnn/optim/gaussian_process_fit.hpp"

namespace uqnn {
namespace {

Mat random_inputs(Index d, Index n, std::uint64_t seed) {
  Rng rng(seed);
  Mat X(d, n);
  for (Index j = 0; j < n; ++j)
    for (Index i = 0; i < d; ++i) X(i, j) = rng.normal();
  return X;
}

// x = (0, 1), y = (1, -1), rbf s^2 = 1, l = 1, s_n^2 = 0.1: K = [[1.1, c], [c, 1.1]], c = e^-1/2.
// y is the eigenvector of eigenvalue 1.1 - c, so y^T K^-1 y = 2 / (1.1 - c), |K| = 1.21 - c^2, and
// with dc/dlog l = c (r^2 = 1/l^2): d/dlog l = c (-1 / (1.1 - c)^2 + c / (1.21 - c^2)).
TEST(GaussianProcess, TwoPointCaseByHand) {
  GpHyperparameters h;
  h.signal_variance = 1.0;
  h.length_scales = Vec::Constant(1, 1.0);
  h.noise_variance = 0.1;
  const GaussianProcess gp(GpKernel::Rbf, h);
  const Mat X = (Mat(1, 2) << 0.0, 1.0).finished();
  const Vec y = (Vec(2) << 1.0, -1.0).finished();
  const double c = std::exp(-0.5);
  const double expected = -0.5 * 2.0 / (1.1 - c) - 0.5 * std::log(1.21 - c * c) - std::log(2.0 * std::numbers::pi);
  Vec grad;
  EXPECT_NEAR(gp.log_marginal_likelihood(X, y, &grad), expected, 1e-12);
  EXPECT_NEAR(grad[1], c * (-1.0 / ((1.1 - c) * (1.1 - c)) + c / (1.21 - c * c)), 1e-12);
  // d/dlog s^2 scales the whole K without noise: by hand with K = s^2 A + s_n^2 I at s^2 = 1,
  // 1/2 tr((a a^T - K^-1) A) with A = [[1, c], [c, 1]].
  const Mat K = (Mat(2, 2) << 1.1, c, c, 1.1).finished(), A = (Mat(2, 2) << 1.0, c, c, 1.0).finished();
  const Vec a = K.inverse() * y;
  EXPECT_NEAR(grad[0], 0.5 * ((a * a.transpose() - K.inverse()) * A).trace(), 1e-12);
  EXPECT_NEAR(grad[2], 0.5 * 0.1 * (a * a.transpose() - K.inverse()).trace(), 1e-12);
}

TEST(GaussianProcess, KernelValues) {
  GpHyperparameters h;
  h.signal_variance = 2.0;
  h.length_scales = (Vec(2) << 0.5, 2.0).finished();
  const Mat x = (Mat(2, 1) << 0.3, -1.0).finished(), z = (Mat(2, 1) << -0.2, 1.0).finished();
  const double r2 = std::pow(0.5 / 0.5, 2) + std::pow(2.0 / 2.0, 2), r = std::sqrt(r2);
  EXPECT_NEAR(GaussianProcess(GpKernel::Rbf, h).covariance(x, z)(0, 0), 2.0 * std::exp(-0.5 * r2), 1e-14);
  EXPECT_NEAR(GaussianProcess(GpKernel::Matern52, h).covariance(x, z)(0, 0),
              2.0 * (1 + std::sqrt(5.0) * r + 5.0 * r2 / 3.0) * std::exp(-std::sqrt(5.0) * r), 1e-14);
  EXPECT_NEAR(GaussianProcess(GpKernel::Linear, h).covariance(x, z)(0, 0),
              2.0 * (1.0 + 0.3 * -0.2 / 0.25 + -1.0 * 1.0 / 4.0), 1e-14);
}

// Central differences on the log parameters, every kernel, shared and per-input length scales.
TEST(GaussianProcess, GradientMatchesFiniteDifferences) {
  const Mat X = random_inputs(3, 9, 1);
  Rng rng(2);
  const Vec y = rng.normal_vector(9);
  for (GpKernel kernel : {GpKernel::Rbf, GpKernel::Matern52, GpKernel::Linear})
    for (bool ard : {false, true}) {
      GpHyperparameters h;
      h.signal_variance = 1.3;
      h.length_scales = ard ? Vec((Vec(3) << 0.7, 1.4, 2.1).finished()) : Vec::Constant(1, 0.9);
      h.noise_variance = 0.2;
      const GaussianProcess gp(kernel, h);
      Vec grad;
      gp.log_marginal_likelihood(X, y, &grad);
      const Vec p = gp.log_parameters();
      ASSERT_EQ(grad.size(), p.size());
      for (Index j = 0; j < p.size(); ++j) {
        const double step = 1e-5;
        Vec up = p, down = p;
        up[j] += step;
        down[j] -= step;
        const double fd = (GaussianProcess::from_log_parameters(kernel, up).log_marginal_likelihood(X, y) -
                           GaussianProcess::from_log_parameters(kernel, down).log_marginal_likelihood(X, y)) /
                          (2 * step);
        EXPECT_NEAR(grad[j], fd, 1e-6 * (1.0 + std::abs(fd))) << gp_kernel_name(kernel) << " ard=" << ard << " j=" << j;
      }
    }
}

TEST(GaussianProcess, CholeskyAddsJitterOnlyWhenNeeded) {
  GpHyperparameters h;
  const GaussianProcess gp(GpKernel::Rbf, h);
  const Mat X = (Mat(1, 3) << 0.0, 0.0, 1.0).finished();  // a repeated point: K is singular
  double used = -1;
  const auto llt = cholesky_with_jitter(gp.covariance(X), 0.0, &used);
  EXPECT_GT(used, 0.0);
  EXPECT_LE(used, 1e-2);
  EXPECT_EQ(llt.info(), Eigen::Success);
  cholesky_with_jitter(gp.covariance((Mat(1, 2) << 0.0, 1.0).finished()), 0.0, &used);
  EXPECT_EQ(used, 0.0);
  EXPECT_THROW(cholesky_with_jitter(-Mat::Identity(2, 2), 0.0), std::runtime_error);
}

// The fit raises the marginal likelihood and recovers a length scale of the right size on data
// drawn from a GP with l = 0.3.
TEST(GaussianProcess, FitIncreasesMarginalLikelihood) {
  Rng rng(5);
  const Index n = 60;
  Mat X(1, n);
  for (Index i = 0; i < n; ++i) X(0, i) = rng.uniform(-2, 2);
  GpHyperparameters truth;
  truth.length_scales = Vec::Constant(1, 0.3);
  truth.noise_variance = 0.01;
  Mat K = GaussianProcess(GpKernel::Rbf, truth).covariance(X);
  K.diagonal().array() += truth.noise_variance;
  const Vec y = cholesky_with_jitter(K, 0.0).matrixL() * rng.normal_vector(n);
  GpFitParams params;
  params.iterations = 200;
  Rng fit_rng(0);
  const GaussianProcess fitted = fit_gaussian_process(X, y, params, fit_rng);
  GpHyperparameters start;
  start.signal_variance = y.squaredNorm() / n;
  start.noise_variance = start.signal_variance / 10;
  EXPECT_GT(fitted.log_marginal_likelihood(X, y), GaussianProcess(GpKernel::Rbf, start).log_marginal_likelihood(X, y) + 10);
  EXPECT_GT(fitted.hyperparameters().length_scales[0], 0.15);
  EXPECT_LT(fitted.hyperparameters().length_scales[0], 0.6);
  EXPECT_LT(fitted.hyperparameters().noise_variance, 0.05);
}

TEST(GaussianProcess, ValidateNamesParameter) {
  GpHyperparameters h;
  h.signal_variance = -1;
  try {
    h.validate();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("signal_variance"), std::string::npos);
  }
  EXPECT_THROW(parse_gp_kernel("cubic"), std::exception);
}

}  // namespace
}  // namespace uqnn
