// Normalizing-flow VI (issue 20, item 5): the RealNVP flow's reverse pass against finite
// differences, its inverse and log-determinant against the forward pass and a numerical Jacobian,
// and the fitted q at the defaults on targets mean field cannot represent: a correlated Gaussian
// with scales 100x apart, a banana, and the exact posterior of an ill-conditioned Bayesian linear
// regression.
#include <gtest/gtest.h>

#include <cmath>

#include "../mcmc/test_models.hpp"
#include "uqnn/approx/flow.hpp"

namespace uqnn {
namespace {

/// A flow with every parameter away from its identity start, so each path of the reverse pass counts.
Vec perturbed_params(const RealNvpFlow& flow, std::uint64_t seed) {
  Rng rng(seed);
  Vec phi = flow.initial_params(rng.normal_vector(flow.dim()), 0.7, rng);
  for (Index i = 2 * flow.dim(); i < phi.size(); ++i) phi[i] += 0.3 * rng.normal();
  return phi;
}

TEST(RealNvpFlow, ReverseGradientMatchesFiniteDifferences) {
  // A batch of 3 draws; L(phi) = sum_s [A(:, s) . x_s + w_s log|det_s|] with Z fixed.
  const RealNvpFlow flow(5, 4, 6, 3);
  const Vec phi = perturbed_params(flow, 1);
  Rng rng(2);
  Mat Z(5, 3), A(5, 3);
  for (Index s = 0; s < 3; ++s) Z.col(s) = rng.normal_vector(5), A.col(s) = rng.normal_vector(5);
  Vec w(3);
  w << 0.8, 1.0, 0.0;  // a left-out draw weighs 0
  const auto loss = [&](const Vec& p) {
    Mat X;
    const Vec log_det = flow.forward(p, Z, X);
    return (A.array() * X.array()).sum() + w.dot(log_det);
  };
  FlowTape tape;
  Mat X;
  flow.forward(phi, Z, X, &tape);
  Vec grad = Vec::Zero(phi.size());
  flow.backward(phi, tape, A, w, grad);
  const double h = 1e-6;
  for (Index i = 0; i < phi.size(); ++i) {
    Vec up = phi, down = phi;
    up[i] += h, down[i] -= h;
    EXPECT_NEAR(grad[i], (loss(up) - loss(down)) / (2 * h), 1e-6 * (1 + std::abs(grad[i]))) << "phi[" << i << "]";
  }
}

TEST(RealNvpFlow, InverseAndLogDeterminantMatchTheForwardPass) {
  const RealNvpFlow flow(3, 4, 5, 7);
  const Vec phi = perturbed_params(flow, 4);
  Rng rng(5);
  const Vec z = rng.normal_vector(3);
  Mat x, back;
  const double log_det = flow.forward(phi, z, x)[0];
  EXPECT_NEAR(flow.inverse(phi, x, back)[0], log_det, 1e-12);
  EXPECT_LT((back - z).norm(), 1e-12);
  Mat J(3, 3);
  for (Index j = 0; j < 3; ++j) {
    Vec up = z, down = z;
    up[j] += 1e-6, down[j] -= 1e-6;
    Mat xu, xd;
    flow.forward(phi, up, xu);
    flow.forward(phi, down, xd);
    J.col(j) = (xu - xd) / 2e-6;
  }
  EXPECT_NEAR(std::log(std::abs(J.determinant())), log_det, 1e-7);
  // q's density is N(z) / |det| at x = T(z); a batch gives each column what it gives alone.
  const FlowPosterior q(std::make_shared<const RealNvpFlow>(flow), phi);
  EXPECT_NEAR(q.log_prob(x.col(0)), -0.5 * z.squaredNorm() - 3 * kHalfLog2Pi - log_det, 1e-12);
  Mat Z(3, 2), X2;
  Z.col(0) = rng.normal_vector(3);
  Z.col(1) = z;
  const Vec both = flow.forward(phi, Z, X2);
  EXPECT_NEAR(both[1], log_det, 1e-13);
  EXPECT_LT((X2.col(1) - x.col(0)).norm(), 1e-13);
}

/// Mean and covariance of 20,000 draws of q.
std::pair<Vec, Mat> moments(const ApproximatePosterior& q) {
  Rng rng(99);
  const std::vector<Vec> draws = q.sample(rng, 20000);
  Vec mean = Vec::Zero(q.dim());
  for (const Vec& x : draws) mean += x;
  mean /= static_cast<double>(draws.size());
  Mat cov = Mat::Zero(q.dim(), q.dim());
  for (const Vec& x : draws) cov += (x - mean) * (x - mean).transpose();
  return {mean, cov / static_cast<double>(draws.size() - 1)};
}

double correlation(const Mat& cov, Index i, Index j) { return cov(i, j) / std::sqrt(cov(i, i) * cov(j, j)); }

TEST(FlowVi, RecoversACorrelationAcrossScales100xApartThatMeanFieldMisses) {
  // N(0, Sigma) with sds 1 and 100 and correlation 0.95; the flow at FlowViParams' defaults (the
  // CLI's: 2000 full-batch epochs, Adam 0.01, one draw per step) from mean 0 and sd 0.01.
  Vec sd(2);
  sd << 1.0, 100.0;
  Mat corr(2, 2);
  corr << 1.0, 0.95, 0.95, 1.0;
  const Mat cov = sd.asDiagonal() * corr * sd.asDiagonal();
  const auto target = std::make_shared<testing::GaussianDensity>(Vec::Zero(2), cov);
  Rng rng(1);
  const FlowViResult fit = fit_flow_vi(*target, Vec::Zero(2), FlowViParams{}, rng);
  const auto [mean, q_cov] = moments(*fit.approximation);
  std::printf("  flow: sds %.3f %.2f, correlation %.3f, means %.3f %.2f\n", std::sqrt(q_cov(0, 0)), std::sqrt(q_cov(1, 1)),
              correlation(q_cov, 0, 1), mean[0], mean[1]);
  EXPECT_NEAR(correlation(q_cov, 0, 1), 0.95, 0.03);
  EXPECT_NEAR(std::sqrt(q_cov(0, 0)), 1.0, 0.1);
  EXPECT_NEAR(std::sqrt(q_cov(1, 1)), 100.0, 10.0);
  EXPECT_LT(std::abs(mean[0]), 0.1);
  EXPECT_LT(std::abs(mean[1]), 10.0);
  EXPECT_EQ(fit.rejected_draws, 0);

  // Mean field (the same fit without coupling layers) has no correlation and the conditional sds.
  FlowViParams mean_field;
  mean_field.num_couplings = 0;
  Rng rng2(1);
  const auto [mf_mean, mf_cov] = moments(*fit_flow_vi(*target, Vec::Zero(2), mean_field, rng2).approximation);
  std::printf("  mean field: sds %.3f %.2f, correlation %.3f\n", std::sqrt(mf_cov(0, 0)), std::sqrt(mf_cov(1, 1)), correlation(mf_cov, 0, 1));
  EXPECT_LT(std::abs(correlation(mf_cov, 0, 1)), 0.05);
  EXPECT_LT(std::sqrt(mf_cov(0, 0)), 0.5);  // sqrt(1 - 0.95^2) = 0.31
}

/// x1 ~ N(0, 1), x2 | x1 ~ N(x1^2 - 1, 0.5^2): E x2 = 0, Cov(x1^2, x2) = Var(x1^2) = 2.
class Banana : public LogDensity {
 public:
  Index dim() const override { return 2; }
  double log_density_and_grad(const Vec& x, Vec& grad) const override {
    const double r = (x[1] - (x[0] * x[0] - 1.0)) / 0.25;  // residual / variance
    grad.resize(2);
    grad[0] = -x[0] + r * 2.0 * x[0];
    grad[1] = -r;
    const double d = x[1] - (x[0] * x[0] - 1.0);
    return -0.5 * x[0] * x[0] - 0.5 * d * d / 0.25;
  }
};

TEST(FlowVi, FollowsABananaThatMeanFieldCannot) {
  // Under p, E[x2 | x1] = x1^2 - 1: the slope of x2 on x1^2 is 1, and 0 under any product q. The
  // ELBO is log Z - KL(q || p) with log Z = log(2 pi 0.5) = log pi: the last tenth of the per-epoch
  // estimates gives KL. (Cov(x1^2, x2) itself rests on x1's fourth moment, i.e. on q's tails,
  // which reverse KL fits last: the flow reaches about half of its 2.)
  const Banana target;
  const auto fit_and_measure = [&](const FlowViParams& params, double& slope, double& kl) {
    Rng rng(2);
    const FlowViResult fit = fit_flow_vi(target, Vec::Zero(2), params, rng);
    Rng draws_rng(3);
    const std::vector<Vec> draws = fit.approximation->sample(draws_rng, 20000);
    double m1 = 0, m2 = 0, c = 0, v = 0;
    for (const Vec& x : draws) m1 += x[0] * x[0], m2 += x[1];
    m1 /= static_cast<double>(draws.size()), m2 /= static_cast<double>(draws.size());
    for (const Vec& x : draws) c += (x[0] * x[0] - m1) * (x[1] - m2), v += (x[0] * x[0] - m1) * (x[0] * x[0] - m1);
    slope = c / v;
    double tail = 0;
    const std::size_t first = fit.elbo.size() * 9 / 10;
    for (std::size_t i = first; i < fit.elbo.size(); ++i) tail += fit.elbo[i];
    kl = std::log(std::numbers::pi) - tail / static_cast<double>(fit.elbo.size() - first);
  };
  double slope = 0, kl = 0, mf_slope = 0, mf_kl = 0;
  fit_and_measure(FlowViParams{}, slope, kl);
  FlowViParams mean_field;
  mean_field.num_couplings = 0;
  fit_and_measure(mean_field, mf_slope, mf_kl);
  std::printf("  slope of x2 on x1^2: truth 1, flow %.3f, mean field %.3f; KL(q || p): flow %.3f, mean field %.3f nats\n", slope,
              mf_slope, kl, mf_kl);
  EXPECT_NEAR(slope, 1.0, 0.15);  // 0.89-1.00 over 6 seeds
  EXPECT_LT(std::abs(mf_slope), 0.05);
  EXPECT_LT(kl, 0.15);  // 0.02-0.09 over 6 seeds
  EXPECT_GT(mf_kl, 0.3);
}

TEST(FlowVi, CovarianceOfAnIllConditionedRegressionWithinTenPercent) {
  // The exact posterior of testing::ill_conditioned_regression: corr(w1, w2) < -0.9, sds 20x apart.
  const auto blr = testing::ill_conditioned_regression();
  Rng rng(4);
  const FlowViResult fit = fit_flow_vi(*blr.posterior, Vec::Zero(5), FlowViParams{}, rng);
  const auto [mean, cov] = moments(*fit.approximation);
  const double relative = (cov - blr.covariance).norm() / blr.covariance.norm();
  std::printf("  flow covariance: relative Frobenius error %.3f\n", relative);
  EXPECT_LT(relative, 0.1);
  for (Index k = 0; k < 5; ++k) {
    const double exact_sd = std::sqrt(blr.covariance(k, k));
    EXPECT_NEAR(std::sqrt(cov(k, k)), exact_sd, 0.1 * exact_sd) << "sd of coordinate " << k;
    EXPECT_NEAR(mean[k], blr.mean[k], 0.1 * exact_sd) << "mean of coordinate " << k;
  }
  EXPECT_NEAR(correlation(cov, 0, 1), correlation(blr.covariance, 0, 1), 0.05);
}

}  // namespace
}  // namespace uqnn
