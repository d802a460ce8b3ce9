// Classification metrics against values computed by hand (accuracy, NLL, Brier, ECE with 15 bins,
// predictive entropy), for a categorical and a bernoulli predictive.
#include <gtest/gtest.h>

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace uqnn {
namespace {

TEST(ClassificationMetrics, CategoricalMatchesHandComputedValues) {
  // Columns are points; confidences 0.7, 0.62, 0.62, 0.9 fall in bins 10, 9, 9 and 13 of 15.
  Mat p(3, 4);
  p << 0.7, 0.1, 0.19, 0.05,  //
      0.2, 0.62, 0.19, 0.9,   //
      0.1, 0.28, 0.62, 0.05;
  Mat y(1, 4);
  y << 0, 2, 2, 1;  // the second point is wrong (top class 1)
  const ClassificationMetrics m = classification_metrics(p, y, true);
  EXPECT_EQ(m.n, 4);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.75);
  EXPECT_NEAR(m.nll, -(std::log(0.7) + std::log(0.28) + std::log(0.62) + std::log(0.9)) / 4, 1e-14);
  // Brier: sum over classes of (p_k - 1[y=k])^2, averaged: 0.14, 0.9128, 0.2166, 0.015.
  EXPECT_NEAR(m.brier, (0.14 + 0.9128 + 0.2166 + 0.015) / 4, 1e-14);
  // ECE: bin 9 (2 points, confidence 0.62, accuracy 0.5), bin 10 (0.7 vs 1), bin 13 (0.9 vs 1).
  EXPECT_NEAR(m.ece, 2.0 / 4 * 0.12 + 1.0 / 4 * 0.3 + 1.0 / 4 * 0.1, 1e-14);
  ASSERT_EQ(m.bins.size(), 15u);
  EXPECT_EQ(m.bins[9].count, 2);
  EXPECT_NEAR(m.bins[9].accuracy, 0.5, 1e-15);
  EXPECT_NEAR(m.bins[9].confidence, 0.62, 1e-15);
  EXPECT_EQ(m.bins[10].count + m.bins[13].count, 2);
  EXPECT_NEAR(m.entropy[3], -(0.05 * std::log(0.05) * 2 + 0.9 * std::log(0.9)), 1e-14);
}

TEST(ClassificationMetrics, BernoulliMatchesHandComputedValues) {
  Mat p(1, 3), y(1, 3);
  p << 0.8, 0.3, 0.55;
  y << 1, 1, 0;
  const ClassificationMetrics m = classification_metrics(p, y, false);
  EXPECT_NEAR(m.accuracy, 1.0 / 3, 1e-15);
  EXPECT_NEAR(m.nll, -(std::log(0.8) + std::log(0.3) + std::log(0.45)) / 3, 1e-14);
  EXPECT_NEAR(m.brier, (0.04 + 0.49 + 0.3025) / 3, 1e-14);  // (p - y)^2: 0.2^2, 0.7^2, 0.55^2
  // Confidences 0.8 (right), 0.7 (wrong), 0.55 (wrong), each alone in its bin.
  EXPECT_NEAR(m.ece, (0.2 + 0.7 + 0.55) / 3, 1e-14);
  EXPECT_NEAR(m.entropy[0], -(0.8 * std::log(0.8) + 0.2 * std::log(0.2)), 1e-14);
  // A perfectly confident, right predictor: accuracy 1, NLL, Brier and ECE 0.
  Mat sure(1, 2), labels(1, 2);
  sure << 1.0, 0.0;
  labels << 1, 0;
  const ClassificationMetrics perfect = classification_metrics(sure, labels, false);
  EXPECT_EQ(perfect.accuracy, 1.0);
  EXPECT_EQ(perfect.nll, 0.0);
  EXPECT_EQ(perfect.brier, 0.0);
  EXPECT_EQ(perfect.ece, 0.0);
  // Confidently wrong: a finite (large) NLL, not infinity.
  labels << 0, 1;
  EXPECT_GT(classification_metrics(sure, labels, false).nll, 700.0);
  EXPECT_TRUE(std::isfinite(classification_metrics(sure, labels, false).nll));
}

TEST(ClassificationMetrics, LabelsOutsideTheClassesAreErrors) {
  Mat p(2, 1), y(1, 1);
  p << 0.4, 0.6;
  y << 2;
  EXPECT_THROW(classification_metrics(p, y, true), InputError);
  y << 0.5;
  EXPECT_THROW(classification_metrics(p.row(0), y, false), InputError);
}

}  // namespace
}  // namespace uqnn
