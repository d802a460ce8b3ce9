// VI-HMC (seed 000): sensitivities (eq. 17) vs finite differences and vs the analytic derivatives
// of eq. 21 (case I), N-hat (eq. 18), the path-length rule (Appendix C), and subspace sampling of a
// linear-Gaussian model reproducing the exact conditional posterior (eq. 20).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "../../../examples/vi_hmc/sine_network.hpp"
#include "uqnn/data/synthetic.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/statistics.hpp"
#include "uqnn/hybrid/vi_hmc.hpp"
#include "uqnn/nn/mlp.hpp"

namespace uqnn {
namespace {

TEST(Sensitivity, MatchesFiniteDifferencesWithSeveralOutputs) {
  const Mlp mlp(MlpSpec{2, {3, 4}, 2, Activation::Tanh, InitScheme::Glorot});
  Rng rng(1, 0);
  const Vec mu = mlp.initial_params(rng) + 0.2 * rng.normal_vector(mlp.num_params());
  Vec sd(mlp.num_params());
  for (Index i = 0; i < sd.size(); ++i) sd[i] = rng.uniform(0.01, 0.5);
  const Mat X = Mat::NullaryExpr(2, 9, [&] { return rng.normal(); });
  const SensitivityReport r = compute_sensitivities(mlp, mu, sd, X, /*chunk=*/4);  // chunks 4 + 4 + 1
  const double h = 1e-5;
  for (Index i = 0; i < mlp.num_params(); ++i) {
    Vec up = mu, down = mu;
    up[i] += h;
    down[i] -= h;
    const Mat d = (mlp.forward(up, X) - mlp.forward(down, X)) / (2 * h);
    // eq. 17, averaged over the N_d inputs and the 2 outputs
    const double fd = sd[i] * sd[i] * d.squaredNorm() / static_cast<double>(X.cols() * 2);
    EXPECT_NEAR(r.sensitivity[i], fd, 1e-6 * fd + 1e-14) << mlp.layout().name_of(i);
  }
  EXPECT_NEAR(r.total, r.sensitivity.sum(), 1e-15);
  for (std::size_t k = 1; k < r.ranking.size(); ++k) EXPECT_GE(r.sensitivity[r.ranking[k - 1]], r.sensitivity[r.ranking[k]]);
  EXPECT_NEAR(r.cumulative_ratio[r.cumulative_ratio.size() - 1], 1.0, 1e-12);
}

TEST(Sensitivity, NumKeptFollowsEquation18) {
  Vec s(5);
  s << 1.0, 4.0, 0.5, 2.0, 2.5;  // sorted: 4, 2.5, 2, 1, 0.5 of 10 -> ratios .4 .65 .85 .95 1
  const SensitivityReport r = rank_sensitivities(s);
  EXPECT_EQ(r.ranking, (IndexVec{1, 4, 3, 0, 2}));
  EXPECT_EQ(r.num_kept(0.9), 3);   // 0.85 <= 0.9 < 0.95
  EXPECT_EQ(r.num_kept(0.95), 4);  // equality counts
  EXPECT_EQ(r.num_kept(1.0), 5);
  EXPECT_EQ(r.num_kept(0.3), 1);   // eq. 18 gives 0; at least one parameter is sampled
  EXPECT_EQ(r.sensitive_subset(0.9), (IndexVec{1, 3, 4}));
  EXPECT_THROW(r.num_kept(0.0), std::invalid_argument);
  EXPECT_THROW(r.num_kept(1.5), std::invalid_argument);
  Rng rng(3, 0);
  const IndexVec random = random_subset(100, 30, rng);
  ASSERT_EQ(random.size(), 30u);
  for (std::size_t k = 1; k < random.size(); ++k) EXPECT_LT(random[k - 1], random[k]);
}

TEST(ViHmc, PathLengthRuleOfAppendixC) {
  Vec sd(3);
  sd << 0.1, 0.2, 0.05;
  EXPECT_EQ(paper_path_length(sd, 0.01, SpreadStatistic::Max, SpreadMeasure::StandardDeviation, 1000), 32);  // pi 0.2 / 0.02 = 31.4
  EXPECT_EQ(paper_path_length(sd, 0.01, SpreadStatistic::Max, SpreadMeasure::Variance, 1000), 7);             // pi 0.04 / 0.02 = 6.28
  EXPECT_EQ(paper_path_length(sd, 0.01, SpreadStatistic::Median, SpreadMeasure::StandardDeviation, 1000), 16);
  EXPECT_EQ(paper_path_length(sd, 0.01, SpreadStatistic::Max, SpreadMeasure::StandardDeviation, 20), 20);
  EXPECT_EQ(paper_path_length(sd, 10.0, SpreadStatistic::Max, SpreadMeasure::StandardDeviation, 20), 1);
}

/// Case I (section 4.1.1): the ranking from our backprop Jacobian equals the ranking from the
/// analytic derivatives of eq. 21 (the paper's check), at the VI means and sds of Table 1.
TEST(ViHmc, CaseOneRankingMatchesAnalyticDerivatives) {
  const examples::SineNetwork net;
  Vec mu(6), sd(6);  // [w1, w2, phi1, phi2, a, b], Table 1 "VI"
  mu << -4.05, 2.94, -0.072, -1.61, -0.39, -0.48;
  sd << 0.068, 0.059, 0.030, 0.035, 0.019, 0.020;
  const Dataset data = sine_case_i();
  const SensitivityReport r = compute_sensitivities(net, mu, sd, data.inputs);
  Vec analytic = Vec::Zero(6);
  const double w1 = mu[0], w2 = mu[1], p1 = mu[2], p2 = mu[3], a = mu[4], b = mu[5];
  for (Index j = 0; j < data.inputs.cols(); ++j) {
    const double x = data.inputs(0, j);
    Vec d(6);  // d/d(w1, w2, phi1, phi2, a, b) of a sin(w1 x + phi1) + b sin(w2 x + phi2)
    d << a * x * std::cos(w1 * x + p1), b * x * std::cos(w2 * x + p2), a * std::cos(w1 * x + p1), b * std::cos(w2 * x + p2),
        std::sin(w1 * x + p1), std::sin(w2 * x + p2);
    analytic += d.cwiseAbs2();
  }
  analytic = analytic.cwiseProduct(sd.cwiseAbs2()) / static_cast<double>(data.inputs.cols());
  for (Index i = 0; i < 6; ++i) EXPECT_NEAR(r.sensitivity[i], analytic[i], 1e-12 * analytic[i]) << net.layout().name_of(i);
  EXPECT_EQ(r.ranking, rank_sensitivities(analytic).ranking);
  const IndexVec kept = r.sensitive_subset(0.9);
  EXPECT_EQ(kept.size(), 4u);  // 4 of 6 at tau = 0.9, as in the paper
  // Which 4 depends on the 20 random inputs: the paper keeps w1, phi2, a, b; on our draw of the
  // inputs w2 and b swap places (reported in the README, not asserted).
  std::printf("case I S^2 (w1 w2 phi1 phi2 a b): %.3g %.3g %.3g %.3g %.3g %.3g; tau 0.9 keeps", r.sensitivity[0],
              r.sensitivity[1], r.sensitivity[2], r.sensitivity[3], r.sensitivity[4], r.sensitivity[5]);
  for (Index i : kept) std::printf(" %lld", static_cast<long long>(i));
  std::printf("\n");
}

/// Linear-Gaussian regression: with some coordinates fixed at c, the exact conditional of the
/// others is Gaussian with precision A_aa and mean mu_a - A_aa^-1 A_af (c_f - mu_f) (eq. 20).
TEST(ViHmc, SubspaceSamplingMatchesExactConditionalPosterior) {
  const Index d = 4, N = 40;
  auto model = std::make_shared<Mlp>(Mlp::linear(d, 1));
  const double sigma = 0.5, prior_sd = 1.5;
  Rng rng(21, 0);
  const Mat X = Mat::NullaryExpr(d, N, [&] { return rng.normal(); });
  Vec w(d + 1);
  w << 0.8, -0.5, 0.3, 1.2, 0.4;
  Mat Phi(d + 1, N);
  Phi.topRows(d) = X;
  Phi.row(d).setOnes();
  const Mat Y = (w.transpose() * Phi).array() + sigma * Mat::NullaryExpr(1, N, [&] { return rng.normal(); }).array();
  auto post = std::make_shared<Posterior>(model, make_gaussian_likelihood(sigma), GaussianPrior::isotropic(d + 1, prior_sd), X, Y);
  const Mat A = Phi * Phi.transpose() / (sigma * sigma) + Mat::Identity(d + 1, d + 1) / (prior_sd * prior_sd);
  const Vec mu = A.llt().solve(Phi * Y.transpose() / (sigma * sigma));

  // Sensitivities chosen so that tau = 0.985 keeps {0, 2, 4}: ratios 5, 9, 12 of 12.2.
  Vec s(d + 1);
  s << 5.0, 0.1, 4.0, 0.1, 3.0;
  const IndexVec active{0, 2, 4}, fixed{1, 3};
  Vec base = mu;
  base[1] += 0.7;  // fixed away from the posterior mean: the conditional mean moves
  base[3] -= 0.4;
  Mat A_aa(3, 3), A_af(3, 2);
  Vec c_f(2);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) A_aa(i, j) = A(active[i], active[j]);
    for (int j = 0; j < 2; ++j) A_af(i, j) = A(active[i], fixed[j]);
  }
  for (int j = 0; j < 2; ++j) c_f[j] = base[fixed[j]] - mu[fixed[j]];
  Vec mu_a(3);
  for (int i = 0; i < 3; ++i) mu_a[i] = mu[active[i]];
  const Vec cond_mean = mu_a - A_aa.llt().solve(A_af * c_f);
  const Vec cond_sd = A_aa.inverse().diagonal().cwiseSqrt();

  for (const std::string sampler : {"hmc", "nuts"}) {
    SCOPED_TRACE(sampler);
    ViHmcParams p;
    p.tau = 0.985;
    p.sampler = sampler;
    p.step_size = sampler == "hmc" ? 0.5 * cond_sd.minCoeff() : 0.0;  // NUTS: Stan warmup
    p.spread_statistic = SpreadStatistic::Max;
    p.init_spread = 2.0;
    // A fixed L (0.65 pi times the largest conditional sd) is near a multiple of a half period of
    // the narrowest direction: jittering L gives a well-mixing, still exact, kernel.
    p.jitter_path_length = true;
    Vec vi_sd = Vec::Constant(d + 1, 0.0);
    for (int i = 0; i < 3; ++i) vi_sd[active[i]] = 1.3 * cond_sd[i];  // path length 0.65 pi sd: not a half period (antithetic, non-ergodic for a Gaussian)
    for (int j = 0; j < 2; ++j) vi_sd[fixed[j]] = 0.05;
    RunConfig run;
    run.num_chains = 4;
    run.num_warmup = 300;
    run.num_draws = 1500;
    run.seed = 5;
    const ViHmcResult r = run_vi_hmc(post, base, vi_sd, rank_sensitivities(s), p, run);
    ASSERT_EQ(r.active, active);
    EXPECT_TRUE(r.view->uses_subspace_gradient());
    for (int i = 0; i < 3; ++i) {
      const Mat draws = r.run.coordinate(i);
      const double m = diagnostics::mean(draws), sdev = diagnostics::sd(draws);
      const double mcse = diagnostics::mcse_mean(draws), mcse_sd = diagnostics::mcse_sd(draws);
      std::printf("[%s] coordinate %lld: mean %.4f (exact %.4f, mcse %.4f), sd %.4f (exact %.4f, mcse %.4f)\n", sampler.c_str(),
                  static_cast<long long>(active[i]), m, cond_mean[i], mcse, sdev, cond_sd[i], mcse_sd);
      EXPECT_LT(std::abs(m - cond_mean[i]), 4 * mcse);
      EXPECT_LT(std::abs(sdev - cond_sd[i]), 4 * mcse_sd);
      EXPECT_LT(4 * mcse_sd, 0.1 * cond_sd[i]);  // the check is sharp
      // Not the marginal posterior: the fixed coordinates moved the conditional mean by many mcse.
      EXPECT_GT(std::abs(cond_mean[i] - mu_a[i]), 10 * mcse);
    }
    for (const Vec& theta : r.full_draws()) {
      ASSERT_EQ(theta[1], base[1]);
      ASSERT_EQ(theta[3], base[3]);
    }
  }
}

TEST(ViHmc, ValidatesParameters) {
  ViHmcParams p;
  EXPECT_NO_THROW(p.validate());
  p.tau = 0;
  EXPECT_THROW(p.validate(), std::invalid_argument);
  p = {};
  p.sampler = "mala";
  EXPECT_THROW(p.validate(), std::invalid_argument);
  p = {};
  p.init_spread = -1;
  EXPECT_THROW(p.validate(), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn
