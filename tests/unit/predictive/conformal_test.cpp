// The finite-sample guarantee of split conformal prediction (Vovk et al. 2005; Lei et al. 2018):
// over random calibration/test splits of exchangeable data, the coverage of the conformal intervals
// or sets averages ceil((n + 1)(1 - alpha)) / (n + 1), which lies in [1 - alpha, 1 - alpha +
// 1/(n + 1)) when the scores have no ties. Checked for normalised split conformal, CQR, APS and
// RAPS at three alphas over 1,000 splits, with a predictor whose own intervals are wrong (biased
// and misscaled, on heteroscedastic data). Temperature scaling recovers a known temperature.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "uqnn/core/error.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"
#include "uqnn/predictive/conformal.hpp"

namespace uqnn {
namespace {

constexpr Index kCalibration = 109;  // (n + 1)(1 - alpha) = 104.5, 99, 88 for the three alphas
constexpr Index kTest = 400;
constexpr int kSplits = 1000;
const std::vector<double> kAlphas = {0.05, 0.1, 0.2};

/// The mean over kSplits of the test coverage must lie within 4 standard errors of its exact
/// expectation k / (n + 1), k = ceil((n + 1)(1 - alpha)), hence within binomial bounds of
/// 1 - alpha, and below the upper bound 1 - alpha + 1/(n + 1). Given the calibration rows, the
/// coverage of a new row is C ~ Beta(k, n + 1 - k) (Vovk et al. 2005; Angelopoulos and Bates 2021,
/// sec. 3.3), and the test share is Binomial(n_test, C) / n_test: its variance is
/// Var C + E[C (1 - C)] / n_test.
void expect_valid_coverage(const std::vector<double>& coverage, double alpha, const std::string& what) {
  const double n = static_cast<double>(kCalibration);
  const double k = std::ceil((n + 1) * (1 - alpha) - 1e-9);
  const double m = k / (n + 1);
  const double var_c = k * (n + 1 - k) / ((n + 1) * (n + 1) * (n + 2));
  const double var = var_c + (m - var_c - m * m) / static_cast<double>(kTest);
  const double se = std::sqrt(var / static_cast<double>(coverage.size()));
  const double mean = std::accumulate(coverage.begin(), coverage.end(), 0.0) / static_cast<double>(coverage.size());
  EXPECT_NEAR(mean, m, 4 * se) << what << " alpha " << alpha;
  EXPECT_GE(mean, 1 - alpha - 4 * se) << what << " alpha " << alpha;
  EXPECT_LT(mean, 1 - alpha + 1 / (n + 1)) << what << " alpha " << alpha;
}

Vec take(const Vec& v, const std::vector<Index>& rows, Index first, Index count) {
  Vec out(count);
  for (Index i = 0; i < count; ++i) out(i) = v(rows[static_cast<std::size_t>(first + i)]);
  return out;
}

TEST(Conformal, RegressionCoverageOverRandomSplitsMeetsTheFiniteSampleBounds) {
  // Heteroscedastic data: y = sin x + (0.1 + 0.4 |x|) e. The predictor is biased (+0.2) with an sd
  // that grows with |x| at the wrong rate: its own 90% intervals cover far from 90%.
  std::mt19937_64 engine(2019);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u(-3, 3);
  const Index N = kCalibration + kTest;
  Vec y(N), mean(N), sd(N);
  for (Index i = 0; i < N; ++i) {
    const double x = u(engine);
    y(i) = std::sin(x) + (0.1 + 0.4 * std::abs(x)) * z(engine);
    mean(i) = std::sin(x) + 0.2;
    sd(i) = 0.2 + 0.1 * std::abs(x);
  }
  std::vector<Index> rows(static_cast<std::size_t>(N));
  std::iota(rows.begin(), rows.end(), 0);
  for (double alpha : kAlphas) {
    const double zq = diagnostics::inverse_normal_cdf(1 - alpha / 2);
    std::vector<double> split_coverage, cqr_coverage, own_coverage;
    std::mt19937_64 shuffle(static_cast<std::uint64_t>(1000 * alpha));
    for (int s = 0; s < kSplits; ++s) {
      std::shuffle(rows.begin(), rows.end(), shuffle);
      const Vec yc = take(y, rows, 0, kCalibration), mc = take(mean, rows, 0, kCalibration), sc = take(sd, rows, 0, kCalibration);
      const Vec yt = take(y, rows, kCalibration, kTest), mt = take(mean, rows, kCalibration, kTest), st = take(sd, rows, kCalibration, kTest);
      const auto share = [&](const ConformalIntervals& c) {
        return static_cast<double>((yt.array() >= c.lower.array() && yt.array() <= c.upper.array()).count()) / static_cast<double>(kTest);
      };
      split_coverage.push_back(share(normalized_split_conformal(mt, st, normalized_split_conformal_quantile(mc, sc, yc, alpha))));
      // CQR on the predictor's own central (1 - alpha) interval.
      const Vec lo_c = mc - zq * sc, hi_c = mc + zq * sc, lo_t = mt - zq * st, hi_t = mt + zq * st;
      cqr_coverage.push_back(share(cqr(lo_t, hi_t, cqr_quantile(lo_c, hi_c, yc, alpha))));
      own_coverage.push_back(share(cqr(lo_t, hi_t, 0.0)));
    }
    expect_valid_coverage(split_coverage, alpha, "normalised split conformal");
    expect_valid_coverage(cqr_coverage, alpha, "CQR");
    // The predictor's own intervals are off by more than a percentage point: conformal corrects them.
    const double own = std::accumulate(own_coverage.begin(), own_coverage.end(), 0.0) / kSplits;
    EXPECT_GT(std::abs(own - (1 - alpha)), 0.01) << alpha;
  }
}

TEST(Conformal, ApsAndRapsSetsCoverOverRandomSplits) {
  // Five classes; labels from softmax(logits), the classifier overconfident: softmax(2 logits).
  std::mt19937_64 engine(2021);
  std::normal_distribution<double> z;
  const Index N = kCalibration + kTest, K = 5;
  Mat p(K, N);
  std::vector<Index> labels(static_cast<std::size_t>(N));
  for (Index i = 0; i < N; ++i) {
    Vec logits(K);
    for (Index k = 0; k < K; ++k) logits(k) = z(engine);
    const Vec truth = (logits.array() - logits.maxCoeff()).exp();
    std::discrete_distribution<Index> draw(truth.data(), truth.data() + K);
    labels[static_cast<std::size_t>(i)] = draw(engine);
    const Vec sharp = (2 * (logits.array() - logits.maxCoeff())).exp();
    p.col(i) = sharp / sharp.sum();
  }
  std::vector<Index> rows(static_cast<std::size_t>(N));
  std::iota(rows.begin(), rows.end(), 0);
  for (const SetScoreOptions options : {SetScoreOptions{}, SetScoreOptions{0.1, 1, true}}) {
    for (double alpha : kAlphas) {
      Rng rng(7, static_cast<std::uint64_t>(1000 * alpha));
      std::mt19937_64 shuffle(static_cast<std::uint64_t>(100 * alpha));
      std::vector<double> coverage;
      for (int s = 0; s < kSplits; ++s) {
        std::shuffle(rows.begin(), rows.end(), shuffle);
        Mat pc(K, kCalibration), pt(K, kTest);
        std::vector<Index> yc, yt;
        for (Index i = 0; i < N; ++i) {
          const Index r = rows[static_cast<std::size_t>(i)];
          if (i < kCalibration) {
            pc.col(i) = p.col(r);
            yc.push_back(labels[static_cast<std::size_t>(r)]);
          } else {
            pt.col(i - kCalibration) = p.col(r);
            yt.push_back(labels[static_cast<std::size_t>(r)]);
          }
        }
        const Vec scores = set_scores(pc, yc, options, rng);
        const double q = conformal_quantile(std::vector<double>(scores.data(), scores.data() + scores.size()), alpha);
        const auto sets = prediction_sets(pt, q, options, rng);
        Index covered = 0;
        for (Index i = 0; i < kTest; ++i) {
          const auto& set = sets[static_cast<std::size_t>(i)];
          covered += std::find(set.begin(), set.end(), yt[static_cast<std::size_t>(i)]) != set.end() ? 1 : 0;
        }
        coverage.push_back(static_cast<double>(covered) / kTest);
      }
      expect_valid_coverage(coverage, alpha, options.lambda > 0 ? "RAPS" : "APS");
    }
  }
}

TEST(Conformal, QuantileIsTheCeilRankAndInfiniteForTooFewRows) {
  std::vector<double> s(9);
  std::iota(s.begin(), s.end(), 1.0);  // 1..9
  EXPECT_EQ(conformal_quantile(s, 0.2), 8.0);   // ceil(10 x 0.8) = 8
  EXPECT_EQ(conformal_quantile(s, 0.25), 8.0);  // ceil(7.5) = 8
  EXPECT_EQ(conformal_quantile(s, 0.5), 5.0);   // ceil(5) = 5
  EXPECT_TRUE(std::isinf(conformal_quantile(s, 0.05)));  // ceil(9.5) = 10 > 9
  EXPECT_THROW(conformal_quantile({}, 0.1), std::invalid_argument);
  EXPECT_THROW(conformal_quantile(s, 1.0), std::invalid_argument);
  EXPECT_THROW(conformal_quantile(s, 0.0), std::invalid_argument);
}

TEST(Conformal, CvPlusIntervalsAreTheOrderStatisticsOfHandComputedValues) {
  // Two models at one point, mu_0 = 0 and mu_1 = 1; four rows with folds 0, 1, 0, 1.
  Mat means(2, 1);
  means << 0.0, 1.0;
  Vec r(4);
  r << 0.5, 1.0, 2.0, 0.1;
  const IndexVec folds{0, 1, 0, 1};
  // mu + R = 0.5, 2, 2, 1.1 and mu - R = -0.5, 0, -2, 0.9. alpha 0.2: the ceil(0.8 x 5) = 4th
  // smallest of the first, the floor(0.2 x 5) = 1st of the second.
  ConformalIntervals c = cv_plus(means, r, folds, 0.2);
  EXPECT_DOUBLE_EQ(c.upper(0), 2.0);
  EXPECT_DOUBLE_EQ(c.lower(0), -2.0);
  // alpha 0.4: the 3rd smallest (2) and the 2nd smallest (-0.5).
  c = cv_plus(means, r, folds, 0.4);
  EXPECT_DOUBLE_EQ(c.upper(0), 2.0);
  EXPECT_DOUBLE_EQ(c.lower(0), -0.5);
  // alpha 0.1: rank ceil(4.5) = 5 > 4 rows: the whole line.
  c = cv_plus(means, r, folds, 0.1);
  EXPECT_TRUE(std::isinf(c.upper(0)) && c.upper(0) > 0);
  EXPECT_TRUE(std::isinf(c.lower(0)) && c.lower(0) < 0);
  EXPECT_THROW(cv_plus(means, r, IndexVec{0, 1, 2, 0}, 0.2), std::invalid_argument);  // fold 2 has no model
}

/// Least squares of y on (1, x, x^2) over the rows `use` of (x, y): a symmetric fitting algorithm,
/// misspecified for y = sin x.
Vec quadratic_fit(const Vec& x, const Vec& y, const std::vector<Index>& use) {
  Eigen::Matrix3d a = Eigen::Matrix3d::Zero();
  Eigen::Vector3d b = Eigen::Vector3d::Zero();
  for (Index i : use) {
    const Eigen::Vector3d f(1.0, x(i), x(i) * x(i));
    a += f * f.transpose();
    b += f * y(i);
  }
  return a.ldlt().solve(b);
}

TEST(Conformal, CvPlusAndJackknifePlusCoverOverRandomSplits) {
  // Barber et al. (2021): for exchangeable rows jackknife+ covers with probability >= 1 - 2 alpha
  // (Theorem 1) and CV+ with K folds >= 1 - 2 alpha - min(2 (1 - 1/K) / (n/K + 1), (1 - K/n) /
  // (K + 1)) (Theorem 4); in practice both cover about 1 - alpha. Each replication draws fresh
  // heteroscedastic rows y = sin x + (0.1 + 0.4 |x|) e, fits the quadratic without each fold, and
  // scores the intervals on fresh test rows.
  constexpr Index n = 39, m = 50, K = 5;
  constexpr int kReplications = 600;
  std::mt19937_64 engine(2021);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u(-3, 3);
  for (double alpha : kAlphas) {
    std::vector<double> cv, jack;
    for (int rep = 0; rep < kReplications; ++rep) {
      Vec x(n + m), y(n + m);
      for (Index i = 0; i < n + m; ++i) {
        x(i) = u(engine);
        y(i) = std::sin(x(i)) + (0.1 + 0.4 * std::abs(x(i))) * z(engine);
      }
      const auto coverage = [&](Index folds_count) {
        IndexVec fold(static_cast<std::size_t>(n));
        for (Index i = 0; i < n; ++i) fold[static_cast<std::size_t>(i)] = i % folds_count;  // rows are i.i.d.: any fixed assignment
        Mat model_means(folds_count, m);
        Vec residuals(n);
        for (Index k = 0; k < folds_count; ++k) {
          std::vector<Index> use;
          for (Index i = 0; i < n; ++i)
            if (fold[static_cast<std::size_t>(i)] != k) use.push_back(i);
          const Vec w = quadratic_fit(x, y, use);
          const auto f = [&w](double v) { return w(0) + w(1) * v + w(2) * v * v; };
          for (Index i = 0; i < n; ++i)
            if (fold[static_cast<std::size_t>(i)] == k) residuals(i) = std::abs(y(i) - f(x(i)));
          for (Index j = 0; j < m; ++j) model_means(k, j) = f(x(n + j));
        }
        const ConformalIntervals c = cv_plus(model_means, residuals, fold, alpha);
        const Vec yt = y.tail(m);
        return static_cast<double>((yt.array() >= c.lower.array() && yt.array() <= c.upper.array()).count()) / static_cast<double>(m);
      };
      cv.push_back(coverage(K));
      jack.push_back(coverage(n));
    }
    const auto mean_and_se = [](const std::vector<double>& v) {
      const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      double ss = 0;
      for (double c : v) ss += (c - mean) * (c - mean);
      return std::pair{mean, std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()))};
    };
    const auto [cv_mean, cv_se] = mean_and_se(cv);
    const auto [jack_mean, jack_se] = mean_and_se(jack);
    const double nk = static_cast<double>(n) / K;
    const double cv_bound = 1 - 2 * alpha - std::min(2 * (1 - 1.0 / K) / (nk + 1), (1 - static_cast<double>(K) / n) / (K + 1));
    EXPECT_GE(cv_mean, cv_bound - 4 * cv_se) << "CV+ alpha " << alpha;
    EXPECT_GE(jack_mean, 1 - 2 * alpha - 4 * jack_se) << "jackknife+ alpha " << alpha;
    // Near 1 - alpha in practice (their sec. 6): within 3 points.
    EXPECT_NEAR(cv_mean, 1 - alpha, 0.03) << "CV+ alpha " << alpha;
    EXPECT_NEAR(jack_mean, 1 - alpha, 0.03) << "jackknife+ alpha " << alpha;
  }
}

TEST(Conformal, SetsOfHandComputedScores) {
  Mat p(3, 1);
  p << 0.2, 0.5, 0.3;
  Rng rng(1, 1);
  // Non-randomised APS: class 1 scores 0.5, class 2 0.8, class 0 1.0.
  const SetScoreOptions aps{0.0, 0, false};
  EXPECT_NEAR(set_scores(p, {2}, aps, rng)(0), 0.8, 1e-15);
  EXPECT_EQ(prediction_sets(p, 0.8, aps, rng)[0], (std::vector<Index>{1, 2}));
  EXPECT_EQ(prediction_sets(p, 0.79, aps, rng)[0], (std::vector<Index>{1}));
  // RAPS with lambda 0.5 beyond the first class: class 2 scores 0.8 + 0.5.
  EXPECT_NEAR(set_scores(p, {2}, SetScoreOptions{0.5, 1, false}, rng)(0), 1.3, 1e-15);
  EXPECT_THROW(set_scores(p, {3}, aps, rng), std::invalid_argument);
  EXPECT_THROW((SetScoreOptions{-1.0, 0, true}).validate(), std::invalid_argument);
}

TEST(Conformal, TemperatureScalingRecoversAKnownTemperature) {
  // Labels drawn from softmax(logits / 2); the classifier reports softmax(logits): the NLL-optimal
  // temperature is 2 up to sampling error, whose sd is 1 / sqrt(n x curvature) in beta = 1/T.
  std::mt19937_64 engine(2017);
  std::normal_distribution<double> z;
  const Index n = 20000, K = 4;
  Mat p(K, n);
  std::vector<Index> labels(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) {
    Vec logits(K);
    for (Index k = 0; k < K; ++k) logits(k) = 3 * z(engine);
    const Vec truth = ((logits.array() - logits.maxCoeff()) / 2).exp();
    std::discrete_distribution<Index> draw(truth.data(), truth.data() + K);
    labels[static_cast<std::size_t>(i)] = draw(engine);
    const Vec reported = (logits.array() - logits.maxCoeff()).exp();
    p.col(i) = reported / reported.sum();
  }
  const TemperatureFit fit = fit_temperature(p, labels);
  ASSERT_TRUE(fit.converged);
  EXPECT_LE(std::abs(fit.gradient), 1e-10);
  const double se_beta = 1 / std::sqrt(static_cast<double>(n) * fit.curvature);
  EXPECT_NEAR(1 / fit.temperature, 0.5, 4 * se_beta);
  EXPECT_LT(fit.nll_after, fit.nll_before);
  // Scaling by the fitted T gives a zero NLL gradient at T = 1.
  const TemperatureFit again = fit_temperature(apply_temperature(p, fit.temperature), labels);
  EXPECT_NEAR(again.temperature, 1.0, 1e-8);
  // Bernoulli rows: P(y = 1) reads as two classes, and stays one row.
  Mat b(1, 2);
  b << 0.8, 0.3;
  EXPECT_EQ(apply_temperature(b, 2.0).rows(), 1);
  EXPECT_NEAR(apply_temperature(b, 2.0)(0, 0), std::sqrt(0.8) / (std::sqrt(0.8) + std::sqrt(0.2)), 1e-15);
  EXPECT_THROW(apply_temperature(b, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace uqnn
