// Scores against reference implementations: scikit-learn (brier_score_loss, roc_auc_score,
// average_precision_score, roc_curve), properscoring's CRPS formulas and numerical integration of
// the CRPS definition, numpy for ECE/MCE, AURC and entropies. The golden values and their inputs
// come from tests/reference/scores/make_scores_golden.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

#include "uqnn/core/error.hpp"
#include "uqnn/predictive/scores.hpp"

namespace uqnn {
namespace {

const nlohmann::json& golden() {
  static const nlohmann::json j = [] {
    std::ifstream in(std::string(UQNN_TEST_REFERENCE_DIR) + "/scores/scores_golden.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

Vec vec(const nlohmann::json& j) {
  const auto v = j.get<std::vector<double>>();
  return Eigen::Map<const Vec>(v.data(), static_cast<Index>(v.size()));
}

/// A JSON array of rows as a matrix (row r of the JSON = row r of the matrix).
Mat mat(const nlohmann::json& j) {
  Mat m(static_cast<Index>(j.size()), static_cast<Index>(j.at(0).size()));
  for (Index r = 0; r < m.rows(); ++r) m.row(r) = vec(j.at(static_cast<std::size_t>(r))).transpose();
  return m;
}

TEST(Scores, GaussianCrpsPitAndNllMatchProperscoringAndScipy) {
  const auto& g = golden().at("gaussian");
  const Vec mean = vec(g.at("mean")), sd = vec(g.at("sd")), y = vec(g.at("y"));
  const Vec crps = vec(g.at("crps")), pit = vec(g.at("pit"));
  for (Index i = 0; i < y.size(); ++i) EXPECT_NEAR(crps_gaussian(mean(i), sd(i), y(i)), crps(i), 1e-13) << i;
  const auto s = score_regression(RegressionPredictive::gaussian(mean, sd), y);
  EXPECT_NEAR(s.crps, crps.mean(), 1e-13);
  EXPECT_NEAR(s.nll, g.at("nll").get<double>(), 1e-13);
  EXPECT_NEAR(s.gaussian_nll, g.at("nll").get<double>(), 1e-13);
  for (Index i = 0; i < y.size(); ++i) EXPECT_NEAR(s.pit(i), pit(i), 1e-14);
  EXPECT_NEAR(s.rmse, std::sqrt((y - mean).squaredNorm() / 7), 1e-14);
  EXPECT_NEAR(s.mae, (y - mean).cwiseAbs().mean(), 1e-14);
  // Coverage of the central 50% interval agrees with the PIT count (continuous predictive).
  EXPECT_DOUBLE_EQ(s.coverage.at(0.5), coverage_from_pit(s.pit, {0.5})[0]);
  // The 95% interval of N(m, sd^2) is m +- 1.959964 sd.
  EXPECT_NEAR(s.width.at(0.95), 2 * 1.959963984540054 * sd.mean(), 1e-12);
}

TEST(Scores, MixtureCrpsMatchesNumericalIntegrationOfItsDefinition) {
  const auto& g = golden().at("mixture");
  const Mat means = mat(g.at("means")), sds = mat(g.at("sds"));
  const Vec y = vec(g.at("y")), crps = vec(g.at("crps")), pit = vec(g.at("pit")), median = vec(g.at("median"));
  const auto p = RegressionPredictive::mixture(means, sds);
  for (Index i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(p.crps(i, y(i)), crps(i), 1e-9) << i;
    EXPECT_NEAR(p.cdf(i, y(i)), pit(i), 1e-14) << i;
    EXPECT_NEAR(p.quantile(i, 0.5), median(i), 1e-10) << i;
  }
  EXPECT_NEAR(score_regression(p, y).nll, g.at("nll").get<double>(), 1e-12);
  // One component: the mixture's CRPS is the Gaussian's.
  EXPECT_NEAR(crps_mixture(means.col(0).data(), sds.col(0).data(), 1, 0.3), crps_gaussian(means(0, 0), sds(0, 0), 0.3), 1e-15);
}

TEST(Scores, LargeMixtureCrpsFromItsQuantilesIsCloseToTheExactForm) {
  // 300 components (> kCrpsExactMaxComponents): the energy form on 14 quantiles per component.
  std::mt19937_64 engine(7);
  std::normal_distribution<double> z;
  Mat means(300, 1), sds(300, 1);
  for (Index k = 0; k < 300; ++k) {
    means(k, 0) = z(engine);
    sds(k, 0) = 0.3 + 0.1 * std::abs(z(engine));
  }
  const auto p = RegressionPredictive::mixture(means, sds);
  for (double y : {-2.0, 0.1, 1.7}) {
    const double exact = crps_mixture(means.data(), sds.data(), 300, y);
    // The quantile grid's CRPS is the CRPS of a discretisation, off by O(sd / r) in the spread
    // term; here sd ~ 0.35 and r = 14 quantiles per component.
    EXPECT_NEAR(p.crps(0, y), exact, 0.01 * exact) << y;
  }
}

TEST(Scores, SampleCrpsPitAndQuantilesMatchProperscoringAndNumpy) {
  const auto& g = golden().at("samples");
  const Mat samples = mat(g.at("samples"));
  const Vec y = vec(g.at("y")), crps = vec(g.at("crps")), pit = vec(g.at("pit"));
  const Vec q95 = vec(g.at("q90")), q05 = vec(g.at("q10"));
  const auto p = RegressionPredictive::samples(samples);
  const auto s = score_regression(p, y, {0.9});
  for (Index i = 0; i < y.size(); ++i) {
    EXPECT_NEAR(p.crps(i, y(i)), crps(i), 1e-14) << i;
    EXPECT_DOUBLE_EQ(s.pit(i), pit(i)) << i;
    EXPECT_NEAR(p.quantile(i, 0.95), q95(i), 1e-14) << i;
    EXPECT_NEAR(p.quantile(i, 0.05), q05(i), 1e-14) << i;
  }
  EXPECT_NEAR(s.width.at(0.9), (q95 - q05).mean(), 1e-14);
}

TEST(Scores, CalibrationCurveOfACalibratedGaussianIsTheDiagonal) {
  // y ~ N(0, 1) scored by N(0, 1): observed coverage within 4 binomial sds of the nominal level;
  // scored by N(0, 0.5^2) (overconfident) the 90% interval covers about 59%.
  std::mt19937_64 engine(11);
  std::normal_distribution<double> z;
  const Index n = 20000;
  Vec y(n);
  for (Index i = 0; i < n; ++i) y(i) = z(engine);
  const auto s = score_regression(RegressionPredictive::gaussian(Vec::Zero(n), Vec::Ones(n)), y);
  ASSERT_EQ(s.calibration_nominal.size(), 19u);
  for (std::size_t k = 0; k < s.calibration_nominal.size(); ++k) {
    const double p = s.calibration_nominal[k];
    EXPECT_NEAR(s.calibration_observed[k], p, 4 * std::sqrt(p * (1 - p) / static_cast<double>(n))) << p;
  }
  const auto over = score_regression(RegressionPredictive::gaussian(Vec::Zero(n), Vec::Constant(n, 0.5)), y);
  const double expected = 2 * 0.5 * std::erfc(-1.6448536269514722 * 0.5 / std::sqrt(2.0)) - 1;  // P(|Z| < 0.822)
  EXPECT_NEAR(over.coverage.at(0.9), expected, 4 * std::sqrt(expected * (1 - expected) / static_cast<double>(n)));
}

TEST(Scores, ClassificationMatchesScikitLearnAndNumpy) {
  const auto& g = golden().at("categorical");
  const Mat probabilities = mat(g.at("probabilities")).transpose();  // [K, n]
  const Mat labels = vec(g.at("labels")).transpose();
  const int bins = g.at("bins").get<int>();
  const auto s = score_classification(probabilities, labels, true, bins);
  EXPECT_NEAR(s.basic.accuracy, g.at("accuracy").get<double>(), 1e-15);
  EXPECT_NEAR(s.basic.brier, g.at("brier").get<double>(), 1e-13);
  EXPECT_NEAR(s.equal_width.ece, g.at("ece_width").get<double>(), 1e-13);
  EXPECT_NEAR(s.equal_width.mce, g.at("mce_width").get<double>(), 1e-13);
  EXPECT_NEAR(s.equal_mass.ece, g.at("ece_mass").get<double>(), 1e-13);
  EXPECT_NEAR(s.equal_mass.mce, g.at("mce_mass").get<double>(), 1e-13);
  EXPECT_NEAR(s.risk_coverage.aurc, g.at("aurc").get<double>(), 1e-13);
  // The equal-width ECE is classification_metrics' own.
  EXPECT_NEAR(s.equal_width.ece, s.basic.ece, 1e-14);
  Index in_bins = 0;
  for (const auto& b : s.equal_mass.bins) in_bins += b.count;
  EXPECT_EQ(in_bins, 203);
  EXPECT_EQ(s.equal_mass.bins.size(), 10u);
  EXPECT_DOUBLE_EQ(s.risk_coverage.coverage(202), 1.0);
  EXPECT_NEAR(s.risk_coverage.risk(202), 1 - s.basic.accuracy, 1e-15);

  const auto& b = golden().at("bernoulli");
  const Mat p = vec(b.at("p")).transpose(), y = vec(b.at("y")).transpose();
  EXPECT_NEAR(score_classification(p, y, false).basic.brier, b.at("brier").get<double>(), 1e-14);
}

TEST(Scores, RiskCoverageWithTiesDoesNotDependOnTheOrder) {
  // Confidences 0.9 (right), 0.8, 0.8, 0.8 (one wrong), 0.5 (wrong). Within the tie group the
  // expected risk: k = 2: 1/3 error of one point over 2 accepted -> (0 + 1/3) / 2.
  Vec c(5), ok(5);
  c << 0.8, 0.9, 0.8, 0.5, 0.8;
  ok << 1, 1, 0, 0, 1;
  const RiskCoverage rc = risk_coverage(c, ok);
  const std::vector<double> expected = {0.0, (1.0 / 3) / 2, (2.0 / 3) / 3, 1.0 / 4, 2.0 / 5};
  for (Index k = 0; k < 5; ++k) EXPECT_NEAR(rc.risk(k), expected[static_cast<std::size_t>(k)], 1e-15) << k;
  Vec c2(5), ok2(5);  // the same points, another order
  c2 << 0.8, 0.8, 0.5, 0.9, 0.8;
  ok2 << 0, 1, 0, 1, 1;
  EXPECT_NEAR(risk_coverage(c2, ok2).aurc, rc.aurc, 1e-15);
}

TEST(Scores, DetectionMatchesScikitLearnWithAndWithoutTies) {
  for (const char* name : {"ood_continuous", "ood_ties"}) {
    const auto& g = golden().at(name);
    const DetectionScores d = detection_scores(vec(g.at("in")), vec(g.at("out")));
    EXPECT_NEAR(d.auroc, g.at("auroc").get<double>(), 1e-14) << name;
    EXPECT_NEAR(d.aupr, g.at("aupr").get<double>(), 1e-14) << name;
    EXPECT_NEAR(d.fpr_at_95_tpr, g.at("fpr95").get<double>(), 1e-14) << name;
  }
  // Perfect separation; and every score equal (AUROC one half, FPR 1 at TPR 1).
  Vec in(3), out(2);
  in << 0.1, 0.2, 0.3;
  out << 0.5, 0.9;
  EXPECT_EQ(detection_scores(in, out).auroc, 1.0);
  EXPECT_EQ(detection_scores(in, out).fpr_at_95_tpr, 0.0);
  EXPECT_EQ(detection_scores(in, out).aupr, 1.0);
  EXPECT_EQ(detection_scores(Vec::Ones(3), Vec::Ones(2)).auroc, 0.5);
  EXPECT_EQ(detection_scores(Vec::Ones(3), Vec::Ones(2)).fpr_at_95_tpr, 1.0);
}

TEST(Scores, EntropyAndMutualInformationMatchNumpy) {
  const auto& g = golden().at("uncertainty");
  std::vector<Mat> draws;
  for (const auto& d : g.at("draws")) draws.push_back(mat(d));
  const UncertaintyScores u = uncertainty_scores(draws);
  for (Index i = 0; i < 5; ++i) {
    EXPECT_NEAR(u.predictive_entropy(i), vec(g.at("predictive_entropy"))(i), 1e-14);
    EXPECT_NEAR(u.expected_entropy(i), vec(g.at("expected_entropy"))(i), 1e-14);
    EXPECT_NEAR(u.mutual_information(i), vec(g.at("mutual_information"))(i), 1e-14);
    EXPECT_NEAR(u.max_probability(i), vec(g.at("max_probability"))(i), 1e-15);
  }
  // One draw: no disagreement, mutual information 0; a bernoulli row reads as two classes.
  Mat p(1, 2);
  p << 0.5, 0.9;
  const UncertaintyScores one = uncertainty_scores({p});
  EXPECT_EQ(one.mutual_information(0), 0.0);
  EXPECT_NEAR(one.predictive_entropy(0), std::log(2.0), 1e-15);
  EXPECT_NEAR(one.max_probability(1), 0.9, 1e-15);
  const auto ood = ood_detection(one, uncertainty_scores({Mat::Constant(1, 3, 0.5)}));
  EXPECT_EQ(ood.size(), 3u);
  EXPECT_EQ(ood.at("predictive_entropy").auroc, 0.75);  // 0.5 ties the first point, beats the second
}

TEST(Scores, EmptySingleClassAndMismatchedInputsAreErrors) {
  EXPECT_THROW(detection_scores(Vec(), Vec::Ones(2)), std::invalid_argument);
  EXPECT_THROW(detection_scores(Vec::Ones(2), Vec()), std::invalid_argument);
  EXPECT_THROW(detection_scores(Vec::Constant(2, std::nan("")), Vec::Ones(2)), std::invalid_argument);
  EXPECT_THROW(risk_coverage(Vec(), Vec()), std::invalid_argument);
  EXPECT_THROW(calibration_error(Vec::Constant(2, 0.5), Vec::Ones(3), 10, BinScheme::EqualMass), std::invalid_argument);
  EXPECT_THROW(calibration_error(Vec::Constant(2, 1.5), Vec::Ones(2), 10, BinScheme::EqualWidth), std::invalid_argument);
  EXPECT_THROW(calibration_error(Vec::Constant(2, 0.5), Vec::Ones(2), 0, BinScheme::EqualWidth), std::invalid_argument);
  EXPECT_THROW(RegressionPredictive::gaussian(Vec::Zero(2), Vec::Zero(2)), std::invalid_argument);
  EXPECT_THROW(RegressionPredictive::gaussian(Vec::Zero(2), Vec::Ones(3)), std::invalid_argument);
  EXPECT_THROW(RegressionPredictive::samples(Mat::Zero(1, 4)), std::invalid_argument);
  EXPECT_THROW(RegressionPredictive::mixture(Mat::Zero(2, 3), Mat::Zero(2, 3)), std::invalid_argument);
  EXPECT_THROW(score_regression(RegressionPredictive::gaussian(Vec::Zero(2), Vec::Ones(2)), Vec::Zero(3)), std::invalid_argument);
  EXPECT_THROW(uncertainty_scores({}), std::invalid_argument);
  Mat labels(1, 2);
  labels << 0, 3;
  EXPECT_THROW(score_classification(Mat::Constant(3, 2, 1.0 / 3), labels, true), InputError);
}

}  // namespace
}  // namespace uqnn
