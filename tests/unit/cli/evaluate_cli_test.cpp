// `uqnn evaluate` end to end: another tool's predictions (mean and sd; class probabilities) scored
// against hand-computed values, a fit scored with conformal recalibration, and bad input rejected
// with exit code 2 and a message naming the file, line and column.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "unit/cli/cli_fixture.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

class EvaluateCli : public testing::CliTest {};

TEST_F(EvaluateCli, ScoresGaussianPredictionsAndWritesTheCalibrationFigure) {
  // y = 0, 1, 2, 3 against N(0.5, 1) each: RMSE sqrt(mean (y - 0.5)^2), MAE 1.25.
  write("p.csv", "mean,sd,y\n0.5,1,0\n0.5,1,1\n0.5,1,2\n0.5,1,3\n");
  const fs::path out = dir_ / "ev";
  const CliRun r = run_cli(fmt::format("evaluate --predictions {} --out {}", (dir_ / "p.csv").string(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto m = json(out / "metrics.json");
  EXPECT_EQ(m.at("task"), "regression");
  EXPECT_EQ(m.at("predictive_form"), "gaussian");
  EXPECT_NEAR(m.at("rmse").get<double>(), std::sqrt((0.25 + 0.25 + 2.25 + 6.25) / 4), 1e-12);
  EXPECT_NEAR(m.at("mae").get<double>(), 1.25, 1e-12);
  // |y - 0.5| = 0.5, 0.5, 1.5, 2.5 against the 90% half-width 1.645: three of four inside.
  EXPECT_NEAR(m.at("intervals").at("0.9").at("coverage").get<double>(), 0.75, 1e-15);
  EXPECT_NEAR(m.at("intervals").at("0.9").at("mean_width").get<double>(), 2 * 1.6448536269514722, 1e-9);
  EXPECT_EQ(m.at("calibration_curve").at("nominal").size(), 19u);
  EXPECT_TRUE(fs::exists(out / "calibration.png"));
}

TEST_F(EvaluateCli, ScoresClassProbabilitiesWithOodRows) {
  write("p.csv", "prob_0,prob_1,label\n0.9,0.1,0\n0.2,0.8,1\n0.7,0.3,1\n0.4,0.6,1\n");
  write("ood.csv", "prob_0,prob_1\n0.5,0.5\n0.55,0.45\n");
  const fs::path out = dir_ / "ev";
  const CliRun r = run_cli(fmt::format("evaluate --predictions {} --target label --ood-predictions {} --out {}", (dir_ / "p.csv").string(),
                                       (dir_ / "ood.csv").string(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto m = json(out / "metrics.json");
  EXPECT_EQ(m.at("task"), "classification");
  EXPECT_NEAR(m.at("accuracy").get<double>(), 0.75, 1e-15);
  // Brier: sum over the two classes, averaged: 0.02, 0.08, 0.98, 0.32.
  EXPECT_NEAR(m.at("brier").get<double>(), (0.02 + 0.08 + 0.98 + 0.32) / 4, 1e-12);
  // The OOD rows have the highest entropies: AUROC 1.
  EXPECT_EQ(m.at("ood").at("predictive_entropy").at("auroc").get<double>(), 1.0);
  EXPECT_TRUE(fs::exists(out / "reliability.png"));
}

TEST_F(EvaluateCli, ScoresAFitWithSplitConformal) {
  const std::string data = write_sine_csv(120);
  const fs::path run = dir_ / "run";
  const CliRun fit = run_cli(fmt::format("fit --quiet --data {} --method ens --ens-members 2 --epochs 100 --arch 8 --out {}", data, run.string()));
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  const CliRun r = run_cli(fmt::format("evaluate --model {} --data {} --conformal split --calibration-fraction 0.5 --no-figures", run.string(), data));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto m = json(run / "evaluation_sine" / "metrics.json");
  EXPECT_EQ(m.at("predictive_form"), "mixture");
  EXPECT_EQ(m.at("n"), 60);
  EXPECT_EQ(m.at("conformal").at("calibration_rows"), 60);
  // The conformal quantile at 90% is the ceil(61 x 0.9) = 55th of 60 normalised residuals.
  EXPECT_GT(m.at("conformal").at("levels").at("0.9").at("quantile").get<double>(), 0.0);
  EXPECT_TRUE(m.at("crps").get<double>() > 0 && std::isfinite(m.at("crps").get<double>()));
  EXPECT_FALSE(fs::exists(run / "evaluation_sine" / "calibration.png"));
}

TEST_F(EvaluateCli, BadInputExitsTwoWithAClearMessage) {
  write("p.csv", "mean,sd,y\n0.5,1,0\n0.5,0,1\n");
  CliRun r = run_cli("evaluate --predictions " + (dir_ / "p.csv").string() + " --out " + (dir_ / "o").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("p.csv:3: column 'sd': 0 is not > 0"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "metrics.json"));

  r = run_cli("evaluate --data " + (dir_ / "p.csv").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("give either --model"), std::string::npos) << r.output;

  r = run_cli("evaluate --predictions " + (dir_ / "p.csv").string() + " --conformal aps");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--conformal needs either --calibration-fraction"), std::string::npos) << r.output;

  write("q.csv", "prob_0,prob_1,y\n0.9,0.1,0\n0.2,0.8,2\n");
  r = run_cli("evaluate --predictions " + (dir_ / "q.csv").string() + " --out " + (dir_ / "o").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("q.csv:3: column 'y': 2 is not a class index in [0, 2)"), std::string::npos) << r.output;

  write("g.csv", "mean,sd,y\n0.5,1,0\n0.5,1,1\n0.1,1,1\n0.2,1,3\n");
  r = run_cli("evaluate --predictions " + (dir_ / "g.csv").string() + " --conformal aps --calibration-fraction 0.5 --out " + (dir_ / "o").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--conformal aps is for classification"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace uqnn
