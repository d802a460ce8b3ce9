// The metrics estimated from draw/gradient pairs (adaptation/fisher_metric.hpp) and the
// low-rank-plus-diagonal metric's algebra (mcmc/metric.hpp), then NUTS at its defaults with them
// on targets where a diagonal metric struggles.
#include <gtest/gtest.h>

#include "test_models.hpp"
#include "uqnn/adaptation/fisher_metric.hpp"
#include "uqnn/core/state_archive.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/run/chain_samplers.hpp"

namespace uqnn {
namespace {

/// n exact draws of N(mean, covariance) (columns) and their scores -covariance^-1 (x - mean).
std::pair<Mat, Mat> gaussian_pairs(const Vec& mean, const Mat& covariance, Index n, std::uint64_t seed) {
  Rng rng(seed);
  const Mat factor = covariance.llt().matrixL();
  Mat draws(mean.size(), n);
  for (Index j = 0; j < n; ++j) {
    Vec z(mean.size());
    for (Index i = 0; i < z.size(); ++i) z[i] = rng.normal();
    draws.col(j) = mean + factor * z;
  }
  const Mat grads = -covariance.llt().solve(draws.colwise() - mean);
  return {draws, grads};
}

/// 5 dimensions: sds 100x apart, x0 and x1 correlated at -0.96, x2 and x3 at 0.9.
Mat hard_covariance() {
  Vec sd(5);
  sd << 100.0, 1.0, 5.0, 0.5, 20.0;
  Mat corr = Mat::Identity(5, 5);
  corr(0, 1) = corr(1, 0) = -0.96;
  corr(2, 3) = corr(3, 2) = 0.9;
  return sd.asDiagonal() * corr * sd.asDiagonal();
}

/// K dimensions with sds from 0.1 to 10 and `rank` directions whose variance is 100x the rest:
/// Sigma = D^1/2 (I + 99 V V^T) D^1/2, V orthonormal. Its condition number is about 1e6.
Mat spiked_covariance(Index dim, Index rank, std::uint64_t seed) {
  Rng rng(seed);
  Mat v(dim, rank);
  for (Index i = 0; i < v.size(); ++i) v.data()[i] = rng.normal();
  const Mat q = Eigen::HouseholderQR<Mat>(v).householderQ() * Mat::Identity(dim, rank);
  Vec sd(dim);
  for (Index i = 0; i < dim; ++i) sd[i] = std::pow(10.0, -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(dim - 1));
  Mat inner = Mat::Identity(dim, dim) + 99.0 * q * q.transpose();
  return sd.asDiagonal() * inner * sd.asDiagonal();
}

TEST(FisherMetric, TheDiagonalIsExactOnIndependentGaussians) {
  // For x ~ N(mu, diag(s^2)) the scores are -(x - mu) / s^2, so sqrt(var x / var g) = s^2 for any
  // sample: the estimate is exact however few draws there are (the draws' variance is not).
  Vec sd(4);
  sd << 100.0, 1.0, 0.01, 3.0;
  const Mat covariance = sd.array().square().matrix().asDiagonal();
  const auto [draws, grads] = gaussian_pairs(Vec::Zero(4), covariance, 5, 1);
  const Vec estimate = inverse_metric_diagonal(estimate_fisher_diagonal(draws, grads));
  for (Index i = 0; i < 4; ++i) EXPECT_NEAR(estimate[i], sd[i] * sd[i], 1e-10 * sd[i] * sd[i]) << i;
}

TEST(FisherMetric, LowRankWithoutCutoffIsTheExactCovarianceOfACorrelatedGaussian) {
  // With scores -Sigma^-1 (x - mu), C_g = Sigma^-1 C_x Sigma^-1, and the geometric mean of C_x and
  // C_g^-1 is Sigma exactly for any sample that spans the space (up to gamma's regularisation).
  const Mat covariance = hard_covariance();
  const auto [draws, grads] = gaussian_pairs(Vec::Constant(5, 3.0), covariance, 40, 2);
  LowRankMetricParams keep_all;
  keep_all.eigval_cutoff = 1.0;
  const Mat estimate = inverse_metric_matrix(estimate_low_rank_metric(draws, grads, keep_all));
  const Mat whitened = covariance.llt().solve(estimate);  // Sigma^-1 estimate: the identity when exact
  EXPECT_LT((whitened - Mat::Identity(5, 5)).cwiseAbs().maxCoeff(), 1e-3) << estimate;
}

TEST(FisherMetric, LowRankAtItsDefaultsWhitensWithinTheCutoff) {
  // nuts-rs' cutoff 2 resets eigenvalues in [1/2, 2] of the whitened covariance to 1, so the
  // eigenvalues of Sigma^-1 times the estimate lie in [1/2, 2]; the diagonal alone leaves ~25.
  const Mat covariance = hard_covariance();
  const auto [draws, grads] = gaussian_pairs(Vec::Zero(5), covariance, 40, 3);
  const Metric metric = estimate_low_rank_metric(draws, grads);
  ASSERT_TRUE(std::holds_alternative<LowRankMetric>(metric));
  EXPECT_GE(std::get<LowRankMetric>(metric).values.size(), 2) << "the two correlated pairs need a correction each";
  const auto condition = [&](const Mat& estimate) {
    const Eigen::GeneralizedSelfAdjointEigenSolver<Mat> eigen(estimate, covariance);
    return eigen.eigenvalues().maxCoeff() / eigen.eigenvalues().minCoeff();
  };
  EXPECT_LT(condition(inverse_metric_matrix(metric)), 4.0 + 1e-9);
  EXPECT_GT(condition(inverse_metric_matrix(estimate_fisher_diagonal(draws, grads))), 20.0);
}

TEST(FisherMetric, LowRankFindsStrongDirectionsFromFewerDrawsThanDimensions) {
  // K = 60, n = 20 draws: the draws' covariance has rank 19, but three directions with 100x the
  // variance lie in the span of the draws and scores; the estimate must find them.
  const Index dim = 60, rank = 3;
  const Mat covariance = spiked_covariance(dim, rank, 4);
  const auto [draws, grads] = gaussian_pairs(Vec::Zero(dim), covariance, 20, 5);
  const Metric metric = estimate_low_rank_metric(draws, grads);
  const auto& low_rank = std::get<LowRankMetric>(metric);
  EXPECT_LE(low_rank.vectors.cols(), 2 * 20);
  // The whitened target Sigma^-1/2 M^-1 Sigma^-1/2 should be near the identity in its extreme
  // eigenvalues: condition 1e6 for the unit metric, ~100 for the Fisher diagonal.
  const auto condition = [&](const Mat& estimate) {
    const Eigen::GeneralizedSelfAdjointEigenSolver<Mat> eigen(estimate, covariance);
    return eigen.eigenvalues().maxCoeff() / eigen.eigenvalues().minCoeff();
  };
  const double low_rank_condition = condition(inverse_metric_matrix(metric));
  const double diagonal_condition = condition(inverse_metric_matrix(estimate_fisher_diagonal(draws, grads)));
  std::printf("  condition number of the whitened target: fisher diagonal %.1f, low rank %.1f (rank %ld)\n",
              diagonal_condition, low_rank_condition, static_cast<long>(low_rank.values.size()));
  EXPECT_LT(low_rank_condition, 0.2 * diagonal_condition);
}

TEST(LowRankMetric, OperationsAgreeWithTheDenseMatrix) {
  const Index dim = 6;
  Rng rng(7);
  Mat v(dim, 2);
  for (Index i = 0; i < v.size(); ++i) v.data()[i] = rng.normal();
  const Mat u = Eigen::HouseholderQR<Mat>(v).householderQ() * Mat::Identity(dim, 2);
  Vec scale(dim), values(2);
  scale << 0.1, 1.0, 2.0, 5.0, 0.5, 30.0;
  values << 40.0, 0.05;
  const Metric metric = make_low_rank_metric(scale, u, values);
  const Mat inverse = inverse_metric_matrix(metric);
  Vec p(dim);
  for (Index i = 0; i < dim; ++i) p[i] = rng.normal();
  Vec out;
  velocity(metric, p, out);
  EXPECT_LT((out - inverse * p).norm(), 1e-10 * (inverse * p).norm());
  EXPECT_NEAR(kinetic_energy(metric, p), 0.5 * p.dot(inverse * p), 1e-10 * p.dot(inverse * p));
  EXPECT_LT((inverse_metric_diagonal(metric) - inverse.diagonal()).norm(), 1e-10 * inverse.diagonal().norm());
  // The factor L (L L^T = M^-1) and the norm r^T M r.
  Mat factor(dim, dim);
  for (Index j = 0; j < dim; ++j) factor.col(j) = inverse_metric_factor_times(metric, Vec::Unit(dim, j));
  EXPECT_LT((factor * factor.transpose() - inverse).cwiseAbs().maxCoeff(), 1e-10 * inverse.cwiseAbs().maxCoeff());
  EXPECT_NEAR(metric_norm2(metric, p), p.dot(inverse.llt().solve(p)), 1e-9 * p.dot(inverse.llt().solve(p)));
  // p ~ N(0, M): sample_momentum is S^-1 B^-1/2 z, so M^-1 p = S B^1/2 z = L z for the same z.
  Rng a(9), b(9);
  Vec momentum;
  sample_momentum(metric, a, momentum);
  Vec z(dim);
  for (Index i = 0; i < dim; ++i) z[i] = b.normal();
  EXPECT_LT((inverse * momentum - inverse_metric_factor_times(metric, z)).norm(), 1e-10 * z.norm());
  // Saved and restored bit for bit.
  StateArchive saving;
  Metric saved = metric;
  archive_metric(saving, saved);
  StateArchive loading(saving.take(), "test");
  Metric restored = make_unit_metric(1);
  archive_metric(loading, restored);
  EXPECT_EQ(inverse_metric_matrix(restored), inverse);
  EXPECT_STREQ(metric_name(restored), "low_rank_e");
}

TEST(LowRankMetric, RefusesVectorsThatAreNotOrthonormalAndAcceptsRankZero) {
  // Rank 0: every eigenvalue inside the cutoff, the diagonal alone (this crashed once).
  const Metric diagonal_only = make_low_rank_metric(Vec::Constant(3, 2.0), Mat(3, 0), Vec(0));
  EXPECT_EQ(inverse_metric_matrix(diagonal_only), Mat(Vec::Constant(3, 4.0).asDiagonal()));
  EXPECT_THROW(make_low_rank_metric(Vec::Ones(3), Mat::Ones(3, 1), Vec::Ones(1)), std::invalid_argument);
  EXPECT_THROW(make_low_rank_metric(Vec::Ones(3), Mat::Identity(3, 1), Vec::Zero(1)), std::invalid_argument);
  EXPECT_THROW(make_low_rank_metric(-Vec::Ones(3), Mat::Identity(3, 1), Vec::Ones(1)), std::invalid_argument);
}

TEST(NutsLowRankMetric, AtTheDefaultsSamplesTheHardGaussianAndTheIllConditionedRegression) {
  NutsConfig config;
  config.warmup.metric = MetricAdaptation::LowRank;
  const auto hard = testing::hard_gaussian();
  const RunResult gaussian = testing::run_at_defaults(hard, config, hard->mean(), 1.0, 21, "nuts");
  EXPECT_EQ(gaussian.num_divergent(), 0);
  testing::expect_matches_gaussian(gaussian, hard->mean(), hard->covariance());
  for (const std::string& tuned : gaussian.sampler_descriptions) EXPECT_NE(tuned.find("low_rank_e"), std::string::npos) << tuned;
  const testing::IllConditionedRegression regression = testing::ill_conditioned_regression();
  const RunResult blr = testing::run_at_defaults(regression.posterior, config, regression.mean, 0.1, 22, "nuts");
  EXPECT_EQ(blr.num_divergent(), 0);
  testing::expect_matches_gaussian(blr, regression.mean, regression.covariance);
}

/// Bulk ESS of the worst coordinate per gradient evaluation (warmup's included).
double min_ess_per_gradient(const RunResult& run, Index dim) {
  double ess = std::numeric_limits<double>::infinity();
  for (Index i = 0; i < dim; ++i) ess = std::min(ess, diagnostics::ess_bulk(run.coordinate(i)));
  double gradients = 0;
  for (const auto& chain : run.warmup_stats) for (const DrawStats& s : chain) gradients += s.n_leapfrog;
  for (const auto& chain : run.stats) for (const DrawStats& s : chain) gradients += s.n_leapfrog;
  return ess / gradients;
}

TEST(NutsLowRankMetric, BeatsTheDiagonalMetricOnASpikedGaussian) {
  // K = 40, three directions with 100x the variance of the rest, sds 100x apart: the diagonal
  // metric leaves a condition number near 100, so NUTS needs about 10x the leapfrog steps per
  // independent draw. Planted bug: estimating with eigval_cutoff 1e9 (no correction kept) makes the
  // two equal and fails the ratio.
  const Index dim = 40;
  const auto target = std::make_shared<testing::GaussianDensity>(Vec::Zero(dim), spiked_covariance(dim, 3, 31));
  NutsConfig diagonal, low_rank;
  low_rank.warmup.metric = MetricAdaptation::LowRank;
  const RunResult with_diagonal = testing::run_at_defaults(target, diagonal, target->mean(), 0.1, 32, "nuts");
  const RunResult with_low_rank = testing::run_at_defaults(target, low_rank, target->mean(), 0.1, 32, "nuts");
  testing::expect_matches_gaussian(with_low_rank, target->mean(), target->covariance());
  const double ratio = min_ess_per_gradient(with_low_rank, dim) / min_ess_per_gradient(with_diagonal, dim);
  std::printf("  min bulk ESS per gradient, low rank / diagonal: %.2f\n", ratio);
  EXPECT_GT(ratio, 2.0);
}

}  // namespace
}  // namespace uqnn
