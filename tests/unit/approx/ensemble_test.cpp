#include <gtest/gtest.h>

#include <algorithm>

#include "unit/approx/blr_fixture.hpp"
#include "unit/approx/linear_fit_fixture.hpp"
#include "unit/mcmc/test_models.hpp"
#include "../../../src/services/approx_common.hpp"
#include "uqnn/approx/ensemble.hpp"
#include "uqnn/approx/swag.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/data/synthetic.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {
namespace {

using testing::make_blr;

TrainParams quadratic_training() {
  TrainParams t;
  t.epochs = 1500;
  t.optimizer.learning_rate = 0.05;
  t.schedule.name = "exponential";
  t.schedule.gamma = 0.995;
  return t;
}

struct Moments {
  Vec mean;
  Mat cov;
};
Moments moments(const std::vector<MemberFit>& fits) {
  const Index J = static_cast<Index>(fits.size()), K = fits.front().theta.size();
  Moments m{Vec::Zero(K), Mat::Zero(K, K)};
  for (const auto& f : fits) m.mean += f.theta / static_cast<double>(J);
  for (const auto& f : fits) m.cov += (f.theta - m.mean) * (f.theta - m.mean).transpose() / static_cast<double>(J - 1);
  return m;
}

// |estimate - truth| within z Monte Carlo standard errors for the mean; variances within z sqrt(2/(J-1)).
void expect_moments(const Moments& m, const Vec& mean, const Mat& cov, Index J, double z) {
  for (Index k = 0; k < mean.size(); ++k) {
    EXPECT_LT(std::abs(m.mean[k] - mean[k]) / std::sqrt(cov(k, k) / static_cast<double>(J)), z) << "mean " << k;
    EXPECT_LT(std::abs(m.cov(k, k) / cov(k, k) - 1.0), z * std::sqrt(2.0 / static_cast<double>(J - 1))) << "variance " << k;
  }
  // Correlations: standard error about (1 - rho^2) / sqrt(J).
  for (Index a = 0; a < mean.size(); ++a)
    for (Index b = a + 1; b < mean.size(); ++b) {
      const double rho = cov(a, b) / std::sqrt(cov(a, a) * cov(b, b));
      const double rho_hat = m.cov(a, b) / std::sqrt(m.cov(a, a) * m.cov(b, b));
      EXPECT_LT(std::abs(rho_hat - rho), z * (1 - rho * rho) / std::sqrt(static_cast<double>(J)) + 0.01) << a << "," << b;
    }
}

constexpr Index kMembers = 800;
constexpr double kZ = 4.0;  // about 3 x 15 checks: Bonferroni at ~0.3% overall

TEST(RandomizedMap, PerturbedMembersAreExactPosteriorDraws) {
  const auto blr = make_blr();
  RandomizedMapParams p;
  p.ensemble.members = kMembers;
  p.ensemble.training = quadratic_training();
  p.perturb_targets = true;
  const auto fits = fit_randomized_map(*blr.posterior, p, 21);
  expect_moments(moments(fits), blr.mean, blr.A.inverse(), kMembers, kZ);
}

TEST(RandomizedMap, AtTheDefaultsPerturbedMembersOfAnIllConditionedRegressionAreExactPosteriorDraws) {
  // The library's default training (auto: L-BFGS to a gradient norm of 1e-8), on a posterior with
  // a pair correlated below -0.9 and sds more than 20x apart: each member is its own anchored,
  // perturbed regression's exact minimiser, so the members are exact posterior draws.
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  RandomizedMapParams p;
  p.ensemble.members = kMembers;
  p.perturb_targets = true;
  const auto fits = fit_randomized_map(*target.posterior, p, 24);
  for (const auto& f : fits) ASSERT_TRUE(f.convergence.converged) << f.convergence.stop_reason << " g " << f.convergence.gradient_norm << " it " << f.convergence.iterations;
  expect_moments(moments(fits), target.mean, target.covariance, kMembers, kZ);
}

TEST(RandomizedMap, Seed001AnchorsGiveExactMeanAndTheKnownNarrowerCovariance) {
  // Anchors alone: w_j = A^-1 (Phi^T y / sigma^2 + Lambda w0_j) with w0 ~ N(0, Lambda^-1), so the
  // members have covariance A^-1 Lambda A^-1, not A^-1 (Pearce et al. 2020).
  const auto blr = make_blr();
  RandomizedMapParams p;
  p.ensemble.members = kMembers;
  p.ensemble.training = quadratic_training();
  const auto fits = fit_randomized_map(*blr.posterior, p, 22);
  const Mat Ainv = blr.A.inverse();
  const Mat Lambda = blr.prior_sd.array().square().inverse().matrix().asDiagonal();
  expect_moments(moments(fits), blr.mean, Ainv * Lambda * Ainv, kMembers, kZ);
  // Each member is the minimiser of its anchored loss: A w = Phi^T y / sigma^2 + Lambda w0.
  for (std::size_t j = 0; j < 3; ++j) {
    const Vec exact = blr.A.llt().solve(blr.Phi.transpose() * blr.y / (blr.sigma * blr.sigma) + Lambda * fits[j].anchor);
    EXPECT_LT((fits[j].theta - exact).norm(), 1e-5);
  }
}

TEST(RandomizedMap, DataFractionScalesThePriorTermByDjOverN) {
  const auto blr = make_blr(40);
  RandomizedMapParams p;
  p.ensemble.members = 2;
  p.ensemble.data_fraction = 0.5;
  p.ensemble.training = quadratic_training();
  const auto fits = fit_randomized_map(*blr.posterior, p, 23);
  const Mat Lambda = blr.prior_sd.array().square().inverse().matrix().asDiagonal();
  for (const auto& f : fits) {
    ASSERT_EQ(f.rows.size(), 20u);
    Mat Phi(20, 3);
    Vec y(20);
    for (Index i = 0; i < 20; ++i) {
      Phi.row(i) = blr.Phi.row(f.rows[static_cast<std::size_t>(i)]);
      y[i] = blr.y[f.rows[static_cast<std::size_t>(i)]];
    }
    // Seed 001: (1 / 2 sigma^2) sum_{D_j} r^2 + (|D_j| / N) (1/2) (w - w0)^T Lambda (w - w0).
    Mat A = Phi.transpose() * Phi / (blr.sigma * blr.sigma) + 0.5 * Lambda;
    const Vec exact = A.llt().solve(Phi.transpose() * y / (blr.sigma * blr.sigma) + 0.5 * Lambda * f.anchor);
    EXPECT_LT((f.theta - exact).norm(), 1e-5);
  }
}

TEST(DeepEnsemble, ResultsDoNotDependOnTheThreadCountAndMembersDiffer) {
  const Dataset data = sine_case_ii(20, 0.05);
  auto model = std::make_shared<Mlp>(MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot});
  auto post = std::make_shared<Posterior>(model, make_gaussian_likelihood(0.05), GaussianPrior::isotropic(model->num_params(), 1.0),
                                          data.inputs, data.targets);
  EnsembleParams p;
  p.members = 4;
  p.data_fraction = 0.8;
  p.training.epochs = 50;
  p.threads = 1;
  const auto one = fit_deep_ensemble(*post, p, 5);
  p.threads = 3;
  const auto three = fit_deep_ensemble(*post, p, 5);
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_EQ(one[j].theta, three[j].theta) << "member " << j;
    EXPECT_EQ(one[j].rows, three[j].rows);
    EXPECT_EQ(one[j].rows.size(), 16u);  // floor(0.8 * 20)
  }
  EXPECT_NE(one[0].rows, one[1].rows);
  EXPECT_GT((one[0].theta - one[1].theta).norm(), 1e-3);  // own initialisation per member (QUiNN defect 4)
}

// 80 points of sine case I with noise sd 0.3, and 8 members of 2 x 50 tanh units: their training
// residuals are below the noise, so the 95% intervals miss more than 5% of 2000 new points from the
// same curve. Both held-out estimates raise the noise and the coverage: the default (noise_refit, 0.1)
// keeps the members of the training residuals' ensemble and changes only their sigma; averaging each
// member's own held-out residuals (noise_refit false) trains the members on fewer rows.
TEST(DeepEnsemble, HeldOutResidualsRaiseAnOverfittingEnsemblesNoiseAndCoverage) {
  const Dataset data = sine_case_i(80, 0.3), fresh = sine_case_i(2000, 0.3, 77);
  auto model = std::make_shared<Mlp>(MlpSpec{1, {50, 50}, 1, Activation::Tanh, InitScheme::Glorot});
  auto post = std::make_shared<Posterior>(model, make_learned_sigma_likelihood(0.3), GaussianPrior::isotropic(model->num_params(), 1.0),
                                          data.inputs, data.targets);
  const Index P = model->num_params();
  EnsembleParams p;
  p.members = 8;
  p.training.epochs = 3000;
  struct Outcome {
    double noise_sd = 0.0, coverage = 0.0;
    std::vector<MemberFit> fits;
  };
  const auto fit = [&](double holdout, bool refit, std::size_t expected_rows) {
    p.noise_holdout = holdout;
    p.noise_refit = refit;
    std::vector<Vec> draws;
    Outcome o;
    o.fits = fit_deep_ensemble(*post, p, 3);
    for (const MemberFit& f : o.fits) {
      EXPECT_EQ(f.rows.size(), expected_rows) << "holdout " << holdout;
      o.noise_sd += std::exp(2.0 * f.theta[P]) / static_cast<double>(p.members);
      draws.push_back(f.theta);
    }
    o.noise_sd = std::sqrt(o.noise_sd);
    Rng rng(1, 0);
    const PredictiveSummary s = summarize_predictive(predict_draws(*model, post->likelihood(), Draws::independent(draws), fresh.inputs), {0.95}, rng);
    const auto& [lower, upper] = s.intervals.at(0.95);
    o.coverage = ((fresh.targets.array() >= lower.array()) && (fresh.targets.array() <= upper.array())).cast<double>().mean();
    return o;
  };
  const Outcome training_only = fit(0.0, true, 80), averaged = fit(0.2, false, 64), refit = fit(0.1, true, 80);
  // Two standard errors of a coverage near 0.95 on 2000 points are 0.01.
  EXPECT_LT(training_only.noise_sd, 0.3);
  EXPECT_LT(training_only.coverage, 0.93);
  EXPECT_GT(averaged.noise_sd, training_only.noise_sd);
  EXPECT_GT(averaged.coverage, training_only.coverage + 0.02);
  // Measured: noise sd 0.27 -> 0.38, coverage 0.897 -> 0.984 (conservative: see noise_refit).
  EXPECT_GT(averaged.coverage, 0.93);
  EXPECT_LT(averaged.coverage, 0.995);
  // The refit members are the training residuals' members; only sigma moves, to about the true 0.3.
  for (std::size_t j = 0; j < refit.fits.size(); ++j)
    EXPECT_EQ(refit.fits[j].theta.head(P), training_only.fits[j].theta.head(P)) << "member " << j;
  EXPECT_GT(refit.noise_sd, training_only.noise_sd);
  // At the default fraction, 0.1 (8 rows), the twins' mixture puts sigma near the true 0.3 and the
  // intervals near their level. Measured: 0.34 and 0.960. With 0.2 held out the twins miss more of the
  // curve than the members do (0.47 and 0.995): a larger fraction makes the estimate wider.
  EXPECT_NEAR(refit.noise_sd, 0.3, 0.06);
  EXPECT_GT(refit.coverage, 0.93);
  EXPECT_LT(refit.coverage, 0.98);
}

// The EM of held_out_noise_variance finds the maximum of the twins' mixture likelihood: no sigma^2 on a
// fine grid, nor next to it, scores higher, and it differs from the pooled mean squared error (where
// EM starts) when the twins disagree.
TEST(DeepEnsemble, HeldOutNoiseVarianceMaximisesTheTwinsMixtureLikelihood) {
  const Mlp model(MlpSpec{2, {4}, 2, Activation::Tanh, InitScheme::Glorot});
  Rng rng(11, 0);
  std::vector<MemberFit> twins(3);
  for (MemberFit& t : twins) t.theta = rng.normal_vector(model.num_params());
  const Mat X = Mat::NullaryExpr(2, 40, [&] { return rng.normal(); });
  const Mat Y = model.forward(twins[0].theta, X) + 0.3 * Mat::NullaryExpr(2, 40, [&] { return rng.normal(); });
  const auto log_likelihood = [&](double variance) {
    double total = 0.0;
    for (Index i = 0; i < X.cols(); ++i) {
      double mixture = 0.0;
      for (const MemberFit& t : twins) {
        const double squared = (model.forward(t.theta, X.col(i)) - Y.col(i)).squaredNorm();
        mixture += std::exp(-squared / (2.0 * variance)) / std::pow(2.0 * M_PI * variance, 1.0) / 3.0;  // 2 outputs
      }
      total += std::log(mixture);
    }
    return total;
  };
  const double variance = held_out_noise_variance(model, twins, X, Y);
  double pooled = 0.0;
  for (const MemberFit& t : twins) pooled += (model.forward(t.theta, X) - Y).squaredNorm() / (3.0 * 80.0);
  EXPECT_GT(std::abs(variance - pooled), 0.1 * pooled) << "EM stayed at its start";
  const double best = log_likelihood(variance);
  for (double v = 1e-3; v < 10.0; v *= 1.01) EXPECT_LE(log_likelihood(v), best + 1e-9) << "sigma^2 " << v << " vs " << variance;
  EXPECT_LT(log_likelihood(variance * (1 + 1e-4)), best);
  EXPECT_LT(log_likelihood(variance * (1 - 1e-4)), best);
}

// The held-out path at a size the sanitizer build runs: the held-out rows are not trained on, and a
// member's noise variance is the average of its training and held-out mean squared residuals.
TEST(DeepEnsemble, HeldOutRowsAreNotTrainedOnAndAveragedIntoTheNoise) {
  const Dataset data = sine_case_i(20, 0.3);
  auto model = std::make_shared<Mlp>(MlpSpec{1, {5}, 1, Activation::Tanh, InitScheme::Glorot});
  const Posterior post(model, make_learned_sigma_likelihood(0.3), GaussianPrior::isotropic(model->num_params(), 1.0), data.inputs,
                       data.targets);
  const Index P = model->num_params();
  EnsembleParams p;
  p.members = 2;
  p.training.epochs = 20;
  p.noise_holdout = 0.25;
  p.noise_refit = false;
  for (const MemberFit& f : fit_deep_ensemble(post, p, 3)) {
    ASSERT_EQ(f.rows.size(), 15u);
    IndexVec held;
    for (Index i = 0; i < 20; ++i)
      if (!std::binary_search(f.rows.begin(), f.rows.end(), i)) held.push_back(i);
    const auto mse = [&](const IndexVec& rows) {
      const Mat Y = gather_columns(data.targets, rows);
      return (model->forward(f.theta.head(P), gather_columns(data.inputs, rows)) - Y).squaredNorm() / static_cast<double>(Y.size());
    };
    EXPECT_NEAR(f.theta[P], 0.5 * std::log(0.5 * (mse(f.rows) + mse(held))), 1e-12);
    EXPECT_GT(std::abs(f.theta[P] - 0.5 * std::log(mse(f.rows))), 1e-6) << "the held-out rows count";
  }
}

TEST(DeepEnsemble, HoldingOutRowsLeavesSomeToTrainOn) {
  Rng rng(1, 0);
  IndexVec rows{3, 5, 7, 9, 11};
  const IndexVec held = split_off_held_out(rows, 0.1, rng);  // at least one row
  ASSERT_EQ(held.size(), 1u);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  IndexVec all = rows;
  all.push_back(held[0]);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (IndexVec{3, 5, 7, 9, 11}));
  IndexVec one{2};
  EXPECT_THROW(split_off_held_out(one, 0.1, rng), InputError);
}

// Sine case II: predictive sd in the gap (-0.2, 0.2) and beyond |x| > 1 exceeds the sd at the data.
void expect_larger_sd_away_from_data(const std::vector<Vec>& draws, const Posterior& post, const Dataset& data) {
  Mat gap(1, 3), outside(1, 4);
  gap << -0.05, 0.0, 0.05;
  outside << -1.4, -1.25, 1.25, 1.4;
  Rng rng(1, 0);
  const auto sd_at = [&](const Mat& X) {
    return summarize_predictive(predict_draws(post.model(), post.likelihood(), Draws::independent(draws), X), {}, rng).epistemic_sd.row(0).mean();
  };
  const double at_data = sd_at(data.inputs);
  EXPECT_GT(sd_at(gap), 2.0 * at_data) << "gap vs data " << at_data;
  EXPECT_GT(sd_at(outside), 2.0 * at_data) << "outside vs data " << at_data;
}

std::shared_ptr<Posterior> sine_posterior(const Dataset& data) {
  auto model = std::make_shared<Mlp>(MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot});
  return std::make_shared<Posterior>(model, make_gaussian_likelihood(0.05), GaussianPrior::isotropic(model->num_params(), 1.0),
                                     data.inputs, data.targets);
}

TEST(DeepEnsemble, SineCaseIIUncertaintyGrowsAwayFromData) {
  const Dataset data = sine_case_ii(20, 0.05);
  const auto post = sine_posterior(data);
  EnsembleParams p;
  p.members = 6;
  p.training.epochs = 3000;
  p.training.optimizer.learning_rate = 0.01;
  std::vector<Vec> draws;
  for (const auto& f : fit_deep_ensemble(*post, p, 9)) draws.push_back(f.theta);
  expect_larger_sd_away_from_data(draws, *post, data);
}

// SWAG as QUiNN's NN_SWAG: J members, each pre-trained from its own initialisation, then SWAG at the
// default learning rate (1 / lambda_max). One member alone does *not* have this property here: with
// constant-rate SGD on this stiff posterior (sigma = 0.05) a single SWAG's spread is largest at the
// data (SGD noise lives in the data-fit directions) and smaller in the gap.
TEST(Swag, MultiSwagSineCaseIIUncertaintyGrowsAwayFromData) {
  const Dataset data = sine_case_ii(20, 0.05);
  const auto post = sine_posterior(data);
  // Pre-training: the members of the deep-ensemble test above (own initialisations; Adam on the MSE,
  // whose minimiser is the MAP's up to the prior's pull), then SWAG on -log posterior / N.
  EnsembleParams ensemble;
  ensemble.members = 6;
  ensemble.training.epochs = 3000;
  ensemble.training.optimizer.learning_rate = 0.01;
  NegativeLogPosteriorObjective objective(post);
  std::vector<std::shared_ptr<const ApproximatePosterior>> members;
  Rng rng(4, 0);
  for (const MemberFit& fit : fit_deep_ensemble(*post, ensemble, 9)) {
    SwagParams p;
    p.steps = 200;
    p.snapshot_every = 2;
    p.rank = 20;
    p.batch_size = 0;  // full batch, as QUiNN's swag_calc
    p.learning_rate = swag_default_learning_rate(*post, fit.theta, post->num_data());
    const SwagResult swag = fit_swag(objective, fit.theta, p, rng);
    EXPECT_EQ(swag.num_snapshots, 1 + p.steps / 2);
    EXPECT_EQ(swag.approximation->deviations().cols(), 20);
    EXPECT_GT(swag.approximation->marginal_variance().maxCoeff(), 0.0);
    members.push_back(swag.approximation);
  }
  Rng sampler(2, 0);
  expect_larger_sd_away_from_data(MixturePosterior(members).sample(sampler, 300), *post, data);
}

// `uqnn fit --method swag` at its defaults on the ill-conditioned linear-Gaussian model: minibatch
// SGD moves, so the draws spread; but SGD's spread follows its rate and gradient noise, not the
// posterior's shape: along the flat direction of the pair correlated at -0.96 it is far too narrow,
// which the fit measures against the curvature and warns about. Full-batch SGD from the optimum has
// no gradient noise and does not move: that is warned about too.
TEST(Swag, AtTheDefaultsTheDrawsSpreadAndTooNarrowASpreadIsWarnedAbout) {
  const MethodResult defaults = testing::fit_ill_conditioned_linear("swag");
  const auto codes = testing::warning_codes(defaults);
  EXPECT_EQ(std::find(codes.begin(), codes.end(), "no_spread"), codes.end()) << ::testing::PrintToString(codes);
  EXPECT_NE(std::find(codes.begin(), codes.end(), "narrow_spread"), codes.end()) << ::testing::PrintToString(codes);
  const Mat theta = defaults.draws.chain(0).values;
  EXPECT_GT((theta.rowwise() - theta.colwise().mean()).cwiseAbs().maxCoeff(), 1e-3) << "minibatch SGD moves";
  EXPECT_EQ(defaults.info.at("swag_batch_size").get<Index>(), 10);  // a quarter of the 40 rows
  const auto full_batch = testing::warning_codes(testing::fit_ill_conditioned_linear("swag", {{"swag_batch_size", 40}}));
  EXPECT_NE(std::find(full_batch.begin(), full_batch.end(), "no_spread"), full_batch.end()) << ::testing::PrintToString(full_batch);
}

// The spread check itself: exact posterior draws pass it, draws shrunk to 40% of the posterior's
// sd along every direction (0.16 of its variance) fail it, on both extreme directions.
TEST(NarrowSpread, ExactDrawsPassAndShrunkDrawsAreWarnedAbout) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  const Eigen::LLT<Mat> chol(target.covariance);
  Rng rng(31);
  Draws exact, shrunk;
  Mat e(400, 5), s(400, 5);
  for (Index i = 0; i < 400; ++i) {
    const Vec z = chol.matrixL() * rng.normal_vector(5);
    e.row(i) = (target.mean + z).transpose();
    s.row(i) = (target.mean + 0.4 * z).transpose();
  }
  exact.add_chain(0, e);
  shrunk.add_chain(0, s);
  EXPECT_FALSE(detail::narrow_spread_warning(*target.posterior, exact, "test", "or not").has_value());
  const auto w = detail::narrow_spread_warning(*target.posterior, shrunk, "test", "or not");
  ASSERT_TRUE(w.has_value());
  // 400 draws estimate a variance ratio of 0.16 to within about +-0.03 (sd sqrt(2 / 399) relative).
  EXPECT_NE(w->message.find("stiffest (0.1"), std::string::npos) << w->message;
  EXPECT_NE(w->message.find(", flattest (0.1"), std::string::npos) << w->message;
}

// The check runs where its Hessian-vector products are affordable (rows x parameters at most
// kNarrowSpreadWork), and says so in the method's info; above that it is skipped, saying why,
// even for draws it would warn about.
TEST(NarrowSpread, TheCheckRunsWhereItIsAffordableAndSaysWhenItIsSkipped) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  Draws shrunk;
  shrunk.add_chain(0, Mat(target.mean.transpose().replicate(3, 1)) + 1e-9 * Mat::Random(3, 5));
  MethodResult small;
  detail::check_narrow_spread(*target.posterior, shrunk, "test", "or not", small);
  EXPECT_EQ(small.info.at("narrow_spread_check"), "done");
  ASSERT_EQ(small.warnings.size(), 1u);
  EXPECT_EQ(small.warnings[0].code, "narrow_spread");

  // 20,161 weights on 10,000 rows: 2.02e8, just above the bound.
  auto model = std::make_shared<Mlp>(MlpSpec{1, {140, 140}, 1, Activation::Tanh, InitScheme::Glorot});
  ASSERT_EQ(model->num_params(), 20161);
  const Posterior large(model, make_gaussian_likelihood(0.1), GaussianPrior::isotropic(model->num_params(), 1.0), Mat::Zero(1, 10000),
                        Mat::Zero(1, 10000));
  Draws narrow;
  narrow.add_chain(0, 1e-9 * Mat::Random(3, model->num_params()));
  MethodResult big;
  detail::check_narrow_spread(large, narrow, "test", "or not", big);
  EXPECT_TRUE(big.warnings.empty());
  EXPECT_NE(big.info.at("narrow_spread_check").get<std::string>().find("skipped: 10000 rows x 20161 parameters"), std::string::npos)
      << big.info.dump();
}

// rms at the fit's defaults is randomize-then-optimize with 30 members: exact posterior draws of the
// ill-conditioned regression (correlation -0.96, sds 30x apart), with no warning. The moments are
// checked on 400 members (30 are too few to tell 10% from the truth).
TEST(RandomizedMap, AtTheFitDefaultsMembersAreExactPosteriorDraws) {
  const MethodResult defaults = testing::fit_ill_conditioned_linear("rms");
  EXPECT_EQ(defaults.info.at("variant"), "rto");
  EXPECT_EQ(defaults.draws.size(), 30);
  EXPECT_TRUE(testing::warning_codes(defaults).empty()) << ::testing::PrintToString(testing::warning_codes(defaults));
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  const MethodResult many = testing::fit_ill_conditioned_linear("rms", {{"ens_members", 400}});
  std::vector<MemberFit> fits;
  many.draws.for_each([&](Index, const Vec& theta) { fits.push_back(MemberFit{}), fits.back().theta = theta; });
  expect_moments(moments(fits), target.mean, target.covariance, static_cast<Index>(fits.size()), kZ);
}

TEST(Swag, DefaultLearningRateIsTheInverseLargestCurvature) {
  // -log p / N of a linear-Gaussian model has the constant Hessian (X X^T / sigma^2 + prior) / N.
  const auto blr = make_blr();
  const Vec theta = Vec::Zero(blr.posterior->dim());
  const double lambda_max = Eigen::SelfAdjointEigenSolver<Mat>(blr.A).eigenvalues().maxCoeff() / static_cast<double>(blr.posterior->num_data());
  EXPECT_NEAR(swag_default_learning_rate(*blr.posterior, theta, blr.posterior->num_data()), 1.0 / lambda_max, 1e-9 / lambda_max);
}

TEST(Swag, DivergingSgdIsAClearError) {
  const auto blr = make_blr();
  NegativeLogPosteriorObjective objective(blr.posterior);
  SwagParams p;
  p.learning_rate = 50.0 * swag_default_learning_rate(*blr.posterior, blr.mean, blr.posterior->num_data());
  p.steps = 40;
  Rng rng(1, 0);
  EXPECT_THROW(
      {
        try {
          fit_swag(objective, blr.mean, p, rng);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("diverged"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
}

TEST(Swag, AStopSignalEndsTheSgdStepsAndKeepsTheSnapshotsTaken) {
  const auto blr = make_blr();
  NegativeLogPosteriorObjective objective(blr.posterior);
  SwagParams p;
  p.learning_rate = 0.5 * swag_default_learning_rate(*blr.posterior, blr.mean, blr.posterior->num_data());
  p.steps = 400;
  p.snapshot_every = 1;
  Rng rng(1, 0);
  SwagResult r;
  {
    StopSignalScope scope;
    request_stop();  // as the handler of SIGINT / SIGTERM / SIGHUP does
    r = fit_swag(objective, blr.mean, p, rng);
  }
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.loss.size(), 1u);         // the step in progress is finished, no further one begins
  EXPECT_EQ(r.num_snapshots, 2);        // w_0 and the first step's iterate
  ASSERT_NE(r.approximation, nullptr);  // one deviation is too few for the low-rank part: diagonal only
  EXPECT_EQ(r.approximation->deviations().cols(), 0);
  EXPECT_TRUE(r.approximation->mean().allFinite());
}

TEST(MixturePosterior, StratifiedDrawsAndLawOfTotalVariance) {
  auto a = std::make_shared<DiagonalGaussianPosterior>(Vec::Constant(2, -1.0), Vec::Constant(2, 0.5));
  auto b = std::make_shared<DiagonalGaussianPosterior>(Vec::Constant(2, 3.0), Vec::Constant(2, 2.0));
  const MixturePosterior mixture({a, b});
  EXPECT_TRUE(mixture.mean().isApprox(Vec::Constant(2, 1.0)));
  // (0.25 + 4) / 2 + ((-1 - 1)^2 + (3 - 1)^2) / 2 = 2.125 + 4
  EXPECT_TRUE(mixture.marginal_variance().isApprox(Vec::Constant(2, 6.125)));
  Rng rng(3, 0);
  const auto draws = mixture.sample(rng, 4000);
  double even = 0, odd = 0;
  for (std::size_t s = 0; s < draws.size(); ++s) (s % 2 == 0 ? even : odd) += draws[s][0] / 2000.0;
  EXPECT_NEAR(even, -1.0, 4 * 0.5 / std::sqrt(2000.0));  // draw s from component s mod J
  EXPECT_NEAR(odd, 3.0, 4 * 2.0 / std::sqrt(2000.0));
}

}  // namespace
}  // namespace uqnn
