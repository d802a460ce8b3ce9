// run_evaluate on another tool's predictions: the metrics against the scores' own functions, the
// conformal section against the conformal functions on the same split, and the files written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/predictive/scores.hpp"
#include "uqnn/services/evaluate.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;

class EvaluateService : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("uqnn_evaluate_{}_{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    return nlohmann::json::parse(in);
  }
  fs::path dir_;
};

TEST_F(EvaluateService, SamplePredictionsAreScoredAsTheirEmpiricalDistribution) {
  // 40 rows of 5 samples each; the CRPS is the mean energy-form CRPS of each row's samples.
  std::mt19937_64 engine(5);
  std::normal_distribution<double> z;
  Mat samples(5, 40);
  Vec y(40);
  std::ofstream csv(dir_ / "p.csv");
  csv << "sample_1,sample_2,sample_3,sample_4,sample_5,y\n";
  for (Index i = 0; i < 40; ++i) {
    for (Index k = 0; k < 5; ++k) {
      samples(k, i) = z(engine);
      csv << samples(k, i) << ',';
    }
    y(i) = 1.5 * z(engine);
    csv << y(i) << '\n';
  }
  csv.close();
  // The file holds the values as printed (6 significant digits): score what was written.
  const CsvTable written = read_csv(dir_ / "p.csv");
  for (Index i = 0; i < 40; ++i) {
    for (Index k = 0; k < 5; ++k) samples(k, i) = written.values(i, k);
    y(i) = written.values(i, 5);
  }
  EvaluateConfig cfg;
  cfg.predictions = dir_ / "p.csv";
  cfg.out = dir_ / "ev";
  const EvaluateReport r = run_evaluate(cfg);
  const RegressionScores s = score_regression(RegressionPredictive::samples(samples), y);
  EXPECT_NEAR(r.metrics.at("crps").get<double>(), s.crps, 1e-14);
  EXPECT_NEAR(r.metrics.at("intervals").at("0.8").at("mean_width").get<double>(), s.width.at(0.8), 1e-14);
  EXPECT_EQ(r.metrics.at("predictive_form"), "samples");
  EXPECT_EQ(read_json(dir_ / "ev" / "metrics.json"), r.metrics);
  EXPECT_TRUE(fs::exists(dir_ / "ev" / "calibration.png"));
}

TEST_F(EvaluateService, ConformalSectionsOfRegressionAndClassification) {
  // Gaussian predictions with an sd half the truth's: the own 90% intervals cover ~59%, split
  // conformal restores ~90% on the held-out half.
  std::mt19937_64 engine(9);
  std::normal_distribution<double> z;
  {
    std::ofstream csv(dir_ / "g.csv");
    csv << "mean,sd,y\n";
    for (int i = 0; i < 400; ++i) csv << "0,0.5," << z(engine) << '\n';
  }
  EvaluateConfig cfg;
  cfg.predictions = dir_ / "g.csv";
  cfg.out = dir_ / "ev";
  cfg.conformal = "split";
  cfg.calibration_fraction = 0.5;
  cfg.seed = 4;
  const EvaluateReport r = run_evaluate(cfg);
  const auto& c = r.metrics.at("conformal");
  EXPECT_EQ(c.at("calibration_rows"), 200);
  EXPECT_EQ(r.metrics.at("n"), 200);
  const auto& level = c.at("levels").at("0.9");
  // Binomial sds on 200 rows: 0.035 at 59%, 0.021 at 90% (plus the calibration's own spread).
  EXPECT_NEAR(level.at("own_coverage").get<double>(), 0.59, 4 * 0.035);
  EXPECT_NEAR(level.at("coverage").get<double>(), 0.9, 4 * 0.03);
  // The quantile of |y| / 0.5 at 90% is about 2 x 1.645.
  EXPECT_NEAR(level.at("quantile").get<double>(), 2 * 1.645, 0.5);
  EXPECT_TRUE(fs::exists(dir_ / "ev" / "conformal.png"));

  // Overconfident class probabilities: temperature scaling fits T > 1 and lowers the test NLL.
  {
    std::ofstream csv(dir_ / "c.csv");
    csv << "prob_0,prob_1,prob_2,y\n";
    std::uniform_real_distribution<double> u;
    for (int i = 0; i < 600; ++i) {
      Vec logits(3);
      for (Index k = 0; k < 3; ++k) logits(k) = 2 * z(engine);
      const Vec truth = (logits.array() - logits.maxCoeff()).exp();
      std::discrete_distribution<int> draw(truth.data(), truth.data() + 3);
      const Vec sharp = (3 * (logits.array() - logits.maxCoeff())).exp();
      const Vec p = sharp / sharp.sum();
      csv << fmt::format("{:.17g},{:.17g},{:.17g},{}\n", p(0), p(1), 1 - p(0) - p(1), draw(engine));
    }
  }
  EvaluateConfig t;
  t.predictions = dir_ / "c.csv";
  t.out = dir_ / "ev2";
  t.conformal = "temperature";
  t.calibration_fraction = 0.5;
  const EvaluateReport rt = run_evaluate(t);
  const auto& ct = rt.metrics.at("conformal");
  EXPECT_TRUE(ct.at("converged").get<bool>());
  EXPECT_GT(ct.at("temperature").get<double>(), 2.0);  // the truth is 3
  EXPECT_LT(ct.at("test").at("nll_after").get<double>(), ct.at("test").at("nll_before").get<double>());
  EXPECT_TRUE(fs::exists(dir_ / "ev2" / "reliability.png"));
  EXPECT_FALSE(fs::exists(dir_ / "ev2" / "conformal.png"));  // temperature scaling has no coverage curve

  t.conformal = "aps";
  t.out = dir_ / "ev3";
  const EvaluateReport ra = run_evaluate(t);
  const auto& ca = ra.metrics.at("conformal").at("levels").at("0.9");
  EXPECT_NEAR(ca.at("coverage").get<double>(), 0.9, 4 * 0.025);
  EXPECT_GT(ca.at("mean_set_size").get<double>(), ca.at("own_mean_set_size").get<double>());  // overconfident: conformal sets grow
}

TEST_F(EvaluateService, BadSettingsNameTheFlag) {
  EvaluateConfig cfg;
  EXPECT_THROW(cfg.validate(), InputError);  // neither --model nor --predictions
  cfg.predictions = dir_ / "p.csv";
  cfg.conformal = "nope";
  try {
    cfg.validate();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--conformal 'nope' is not known"), std::string::npos) << e.what();
  }
  cfg.conformal = "split";
  cfg.calibration_fraction = 1.5;
  EXPECT_THROW(cfg.validate(), InputError);
  cfg.calibration_fraction = 0;
  cfg.conformal.clear();
  cfg.levels = {0.9, 1.0};
  EXPECT_THROW(cfg.validate(), InputError);
}

}  // namespace
}  // namespace uqnn
