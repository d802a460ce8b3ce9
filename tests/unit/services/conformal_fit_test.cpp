// Conformal calibration through the fit path (`uqnn fit --conformal`, services/conformal.hpp): the
// fit holds out calibration rows, calibrates after training, records the calibration in model.json,
// and predictions.csv, `uqnn predict` and metrics.json carry the conformal intervals or sets.
//
// The guarantee end to end: over repeated fits, each on fresh heteroscedastic data with its own
// random training / calibration / test split, the mean test coverage of the split-conformal
// intervals lies within the binomial bounds of the level and below the finite-sample upper bound
// 1 - alpha + 1/(n + 1) (Lei et al. 2018, thm. 2.2), while the MAP fit's own intervals (a noise sd
// fixed too small) cover far less.
#include "uqnn/services/conformal.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>

#include "uqnn/core/error.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/services/evaluate.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/fitted_model.hpp"
#include "uqnn/services/merge.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

using testing::TempDir;

constexpr Index kFitTrain = 60, kFitCalibration = 109, kFitTest = 300;

/// y = sin x + (0.1 + 0.4 |x|) e, x ~ U(-3, 3): the noise grows with |x|.
Dataset fit_heteroscedastic_rows(Index n, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u(-3, 3);
  Dataset d;
  d.inputs.resize(1, n);
  d.targets.resize(1, n);
  for (Index i = 0; i < n; ++i) {
    const double x = u(engine);
    d.inputs(0, i) = x;
    d.targets(0, i) = std::sin(x) + (0.1 + 0.4 * std::abs(x)) * z(engine);
  }
  d.input_names = {"x"};
  d.target_names = {"y"};
  d.source = "heteroscedastic";
  return d;
}

nlohmann::json read_fit_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

/// predictions.csv without its last column (the split's name, text), as a numeric table.
CsvTable read_fit_predictions(const std::filesystem::path& path) {
  std::ifstream in(path);
  const std::filesystem::path numeric = path.parent_path() / "predictions_numeric.csv";
  std::ofstream out(numeric);
  std::string line;
  while (std::getline(in, line)) out << line.substr(0, line.rfind(',')) << '\n';
  out.close();
  return read_csv(numeric);
}

FitConfig conformal_config_of(const nlohmann::json& options) {
  FitRequest r;
  for (const auto& [name, value] : options.items()) r.given.push_back({name, value, "--" + name});
  return make_fit_config(r);
}

/// A cheap MAP fit with a noise sd fixed far below the data's (its own intervals are too narrow).
nlohmann::json conformal_map_options(const std::filesystem::path& out, std::uint64_t split_seed) {
  const double n = static_cast<double>(kFitTrain + kFitCalibration + kFitTest);
  return {{"method", "map"},
          {"arch", "8"},
          {"noise", 0.15},
          {"quiet", true},
          {"figure", "none"},
          {"idata_extras", "never"},
          {"split_seed", split_seed},
          {"test_fraction", static_cast<double>(kFitTest) / n},
          {"calibration_fraction", static_cast<double>(kFitCalibration) / n},
          {"conformal", "split"},
          {"out", out.string()}};
}

/// `uqnn predict` of the run in DIR/run on the rows of its predictions.csv (x and y columns).
FitReport predict_fitted_rows(const std::filesystem::path& dir, const CsvTable& fitted) {
  {
    std::ofstream csv(dir / "new.csv");
    csv << "x,y\n";
    for (Index i = 0; i < fitted.num_rows(); ++i) csv << format_double(fitted.values(i, 0)) << ',' << format_double(fitted.values(i, 1)) << '\n';
  }
  PredictConfig p;
  p.model_dir = dir / "run";
  p.data = dir / "new.csv";
  return run_predict(p);
}

TEST(ConformalFit, SplitCoverageOverRepeatedFitsMeetsTheFiniteSampleBounds) {
  TempDir dir;
  constexpr int kFits = 40;
  for (double level : {0.8, 0.9, 0.95}) {
    std::vector<double> coverage, own;
    for (int s = 0; s < kFits; ++s) {
      nlohmann::json options = conformal_map_options(dir.path() / "run", static_cast<std::uint64_t>(s));
      options["confidence_level"] = level;
      FitConfig c = conformal_config_of(options);
      c.data.dataset = fit_heteroscedastic_rows(kFitTrain + kFitCalibration + kFitTest, 1000 * static_cast<std::uint64_t>(100 * level) + s);
      const FitReport report = run_fit(c);
      const auto& test = report.metrics.at("splits").at("test");
      ASSERT_EQ(test.at("n").get<Index>(), kFitTest);
      ASSERT_EQ(report.metrics.at("splits").at("calibration").at("n").get<Index>(), kFitCalibration);
      coverage.push_back(test.at("conformal").at("coverage").get<double>());
      if (level == 0.9 || level == 0.95) own.push_back(test.at(fmt::format("coverage_{:.0f}", 100 * level)).get<double>());
    }
    // Given the calibration rows the coverage of a new row is Beta(k, n + 1 - k), k = ceil((n + 1)
    // level) (Angelopoulos and Bates 2021, sec. 3.3); a test share adds binomial noise.
    const double n = kFitCalibration, k = std::ceil((n + 1) * level - 1e-9), m = k / (n + 1);
    const double var_c = k * (n + 1 - k) / ((n + 1) * (n + 1) * (n + 2));
    const double se = std::sqrt((var_c + (m - var_c - m * m) / kFitTest) / kFits);
    const double mean = std::accumulate(coverage.begin(), coverage.end(), 0.0) / kFits;
    EXPECT_NEAR(mean, m, 4 * se) << level;
    EXPECT_GE(mean, level - 4 * se) << level;
    EXPECT_LE(mean, level + 1 / (n + 1) + 4 * se) << level;
    if (!own.empty()) {
      const double own_mean = std::accumulate(own.begin(), own.end(), 0.0) / static_cast<double>(own.size());
      EXPECT_LT(own_mean, level - 0.1) << "the fit's own intervals should be too narrow at " << level;
    }
  }
}

TEST(ConformalFit, PredictGivesTheIntervalsOfTheFit) {
  TempDir dir;
  nlohmann::json options = conformal_map_options(dir.path() / "run", 3);
  options["conformal"] = "cqr";
  FitConfig c = conformal_config_of(options);
  const Dataset data = fit_heteroscedastic_rows(kFitTrain + kFitCalibration + kFitTest, 7);
  c.data.dataset = data;
  run_fit(c);
  const nlohmann::json model = read_fit_json(dir.path() / "run" / "model.json");
  ASSERT_TRUE(model.contains("conformal"));
  EXPECT_EQ(model["conformal"]["method"], "cqr");
  EXPECT_EQ(model["conformal"]["num_calibration_rows"].get<Index>(), kFitCalibration);
  const CsvTable fitted = read_fit_predictions(dir.path() / "run" / "predictions.csv");
  const Index lower = fitted.find_column("y_conformal_lower"), upper = fitted.find_column("y_conformal_upper");
  ASSERT_GE(lower, 0);
  ASSERT_GE(upper, 0);
  // The same rows through `uqnn predict`: same intervals.
  const FitReport report = predict_fitted_rows(dir.path(), fitted);
  const CsvTable predicted = read_csv(report.files.front());
  ASSERT_GE(predicted.find_column("y_conformal_lower"), 0);
  for (Index i = 0; i < fitted.num_rows(); ++i) {
    EXPECT_NEAR(predicted.values(i, predicted.find_column("y_conformal_lower")), fitted.values(i, lower), 1e-9);
    EXPECT_NEAR(predicted.values(i, predicted.find_column("y_conformal_upper")), fitted.values(i, upper), 1e-9);
  }
  // CQR widens (q > 0) the method's too narrow interval at the level: [lo - q, hi + q].
  EXPECT_GT(model["conformal"]["quantiles"][0].get<double>(), 0.0);
  EXPECT_TRUE(report.metrics.at("conformal").contains("scores"));
}

/// Two Gaussian blobs per class in 2-D, classes 0..2, some overlap.
Dataset three_class_blobs(Index n, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> z;
  Dataset d;
  d.inputs.resize(2, n);
  d.targets.resize(1, n);
  const double cx[3] = {0, 1.5, 0.5}, cy[3] = {0, 0, 1.5};
  for (Index i = 0; i < n; ++i) {
    const Index k = i % 3;
    d.inputs(0, i) = cx[k] + z(engine);
    d.inputs(1, i) = cy[k] + z(engine);
    d.targets(0, i) = static_cast<double>(k);
  }
  d.input_names = {"a", "b"};
  d.target_names = {"label"};
  d.source = "blobs";
  return d;
}

TEST(ConformalFit, ClassifiersGetSetsAndTemperatureScaledProbabilities) {
  TempDir dir;
  for (const std::string method : {"aps", "raps", "temperature"}) {
    nlohmann::json options = conformal_map_options(dir.path() / method, 1);
    options.erase("noise");
    options["likelihood"] = "categorical";
    options["classes"] = 3;
    options["conformal"] = method;
    if (method == "temperature") options.erase("confidence_level");
    FitConfig c = conformal_config_of(options);
    c.data.dataset = three_class_blobs(kFitTrain + kFitCalibration + kFitTest, 11);
    const FitReport report = run_fit(c);
    const CsvTable t = read_fit_predictions(dir.path() / method / "predictions.csv");
    const auto& scores = report.metrics.at("splits").at("test").at("conformal");
    if (method == "temperature") {
      const double T = report.metrics.at("conformal").at("temperature").get<double>();
      EXPECT_GT(T, 0.0);
      // p_T proportional to p^(1/T), checked on the first row.
      const double p0 = t.values(0, t.find_column("output0_mean")), p1 = t.values(0, t.find_column("output1_mean")),
                   p2 = t.values(0, t.find_column("output2_mean"));
      const double z = std::pow(p0, 1 / T) + std::pow(p1, 1 / T) + std::pow(p2, 1 / T);
      EXPECT_NEAR(t.values(0, t.find_column("output0_calibrated")), std::pow(p0, 1 / T) / z, 1e-9);
      EXPECT_TRUE(scores.contains("nll"));
    } else {
      ASSERT_GE(t.find_column("set_2"), 0) << method;
      ASSERT_GE(t.find_column("set_size"), 0) << method;
      // Conservative (non-randomised) sets are never empty and cover at least about the level.
      for (Index i = 0; i < t.num_rows(); ++i) EXPECT_GE(t.values(i, t.find_column("set_size")), 1.0);
      EXPECT_GT(scores.at("coverage").get<double>(), 0.85) << method;
    }
  }
}

std::string conformal_error_of(const nlohmann::json& options) {
  try {
    conformal_config_of(options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ConformalFit, MisusedOptionsAreInputErrorsNamingTheFlags) {
  EXPECT_NE(conformal_error_of({{"conformal", "split"}}).find("--conformal split needs calibration rows"), std::string::npos)
      << conformal_error_of({{"conformal", "split"}});
  EXPECT_NE(conformal_error_of({{"calibration_fraction", 0.2}}).find("--calibration_fraction holds rows out"), std::string::npos)
      << conformal_error_of({{"calibration_fraction", 0.2}});
  EXPECT_NE(conformal_error_of({{"conformal", "aps"}, {"calibration_fraction", 0.2}}).find("does not apply to --likelihood gaussian: use split, cqr"),
            std::string::npos)
      << conformal_error_of({{"conformal", "aps"}, {"calibration_fraction", 0.2}});
  EXPECT_NE(conformal_error_of({{"conformal", "split"}, {"calibration_fraction", 0.5}, {"test_fraction", 0.5}}).find("leave no training rows"),
            std::string::npos);
  EXPECT_NE(conformal_error_of({{"conformal", "split"}, {"calibration_fraction", 0.2}, {"raps_lambda", 0.1}}).find("--raps_lambda"),
            std::string::npos);
}

TEST(ConformalFit, CalibrationIndicesMustNotBeTestRows) {
  TempDir dir;
  std::ofstream(dir.path() / "cal.txt") << "0\n1\n2\n";
  std::ofstream(dir.path() / "test.txt") << "2\n3\n";
  DataConfig d;
  d.calibration_indices = dir.path() / "cal.txt";
  d.test_indices = dir.path() / "test.txt";
  try {
    choose_split(d, Mat::Zero(1, 10));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cal.txt: row 2 is also a test row"), std::string::npos) << e.what();
  }
  d.test_indices.clear();
  const Split s = choose_split(d, Mat::Zero(1, 10));
  EXPECT_EQ(s.calibration, (IndexVec{0, 1, 2}));
  EXPECT_EQ(s.train.size(), 7u);
}

TEST(ConformalFit, TooFewCalibrationRowsForTheLevelIsAnInputError) {
  ConformalConfig config;
  config.method = "split";
  config.confidence_level = 0.95;
  PredictiveSummary s;
  s.mean = Mat::Zero(1, 10);
  s.sd = Mat::Ones(1, 10);
  try {
    calibrate_conformal(config, s, Mat::Ones(1, 10), false);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("10 calibration rows are too few for --confidence-level 0.95"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at least 19"), std::string::npos) << e.what();
  }
}

/// A cheap deep ensemble calibrated out of fold: member k trains without fold k.
nlohmann::json out_of_fold_options(const std::filesystem::path& out, const std::string& method, double test_fraction) {
  return {{"method", "ens"},   {"arch", "8"},        {"noise", 0.3},          {"epochs", 300},         {"ens_members", 5},
          {"quiet", true},     {"figure", "none"},   {"idata_extras", "never"}, {"split_seed", 4},     {"test_fraction", test_fraction},
          {"conformal", method}, {"out", out.string()}};
}

TEST(ConformalFit, CvPlusMembersLeaveOutTheirFoldAndCalibrateOnItsResiduals) {
  TempDir dir;
  FitConfig c = conformal_config_of(out_of_fold_options(dir.path() / "run", "cv+", 0.4));
  const Dataset data = fit_heteroscedastic_rows(200, 21);
  c.data.dataset = data;
  const FitReport report = run_fit(c);
  const nlohmann::json model = read_fit_json(dir.path() / "run" / "model.json");
  const nlohmann::json& cal = model.at("conformal");
  ASSERT_EQ(cal.at("method"), "cv+");
  const auto folds = cal.at("folds").get<IndexVec>();
  const auto residuals = cal.at("residuals").at(0).get<std::vector<double>>();
  ASSERT_EQ(folds.size(), 120u);
  ASSERT_EQ(residuals.size(), 120u);
  EXPECT_EQ(cal.at("num_folds").get<Index>(), 5);
  // Balanced folds: 24 rows each; every member trained on the other 96.
  for (Index k = 0; k < 5; ++k) EXPECT_EQ(std::count(folds.begin(), folds.end(), k), 24) << k;
  EXPECT_EQ(report.metrics.at("info").at("member_rows").get<Index>(), 96);
  // The folds calibrated on are the folds the members left out (both from the fit's seed).
  EXPECT_EQ(folds, out_of_fold_assignment("cv+", 120, 5, c.seed));
  // R_i = |y_i - mu_{-k(i)}(x_i)|, from the member that left row i out.
  const CsvTable fitted = read_fit_predictions(dir.path() / "run" / "predictions.csv");
  std::vector<Index> train_rows;
  {
    std::ifstream in(dir.path() / "run" / "predictions.csv");
    std::string line;
    std::getline(in, line);
    for (Index i = 0; std::getline(in, line); ++i)
      if (line.substr(line.rfind(',') + 1) == "train") train_rows.push_back(i);
  }
  ASSERT_EQ(train_rows.size(), 120u);
  const FittedModel loaded = FittedModel::load(dir.path() / "run");
  Mat x(1, 120);
  for (Index i = 0; i < 120; ++i) x(0, i) = fitted.values(train_rows[static_cast<std::size_t>(i)], 0);
  const std::vector<Mat> means =
      member_means(loaded.predictive_draws(x), loaded.standardizer().target_mean(), loaded.standardizer().target_scale());
  ASSERT_EQ(means.size(), 5u);
  for (Index i = 0; i < 120; ++i) {
    const double y = fitted.values(train_rows[static_cast<std::size_t>(i)], 1);
    EXPECT_NEAR(residuals[static_cast<std::size_t>(i)], std::abs(y - means[static_cast<std::size_t>(folds[static_cast<std::size_t>(i)])](0, i)), 1e-9) << i;
  }
  // predictions.csv's intervals are `uqnn predict`'s on the same rows, and cover the test rows.
  const CsvTable predicted = read_csv(predict_fitted_rows(dir.path(), fitted).files.front());
  const Index lower = fitted.find_column("y_conformal_lower"), upper = fitted.find_column("y_conformal_upper");
  ASSERT_GE(lower, 0);
  ASSERT_GE(predicted.find_column("y_conformal_upper"), 0);
  for (Index i = 0; i < fitted.num_rows(); ++i) {
    EXPECT_NEAR(predicted.values(i, predicted.find_column("y_conformal_lower")), fitted.values(i, lower), 1e-9);
    EXPECT_NEAR(predicted.values(i, predicted.find_column("y_conformal_upper")), fitted.values(i, upper), 1e-9);
  }
  const double coverage = report.metrics.at("splits").at("test").at("conformal").at("coverage").get<double>();
  EXPECT_GT(coverage, 0.8);  // level 0.9 on 80 test rows; the guarantee itself is the pure function's test
}

TEST(ConformalFit, CvPlusOfARunInPartsIsCalibratedWhenThePartsAreMerged) {
  // A part holds only some members: calibrating there would pair rows with members that did not
  // leave them out. The parts skip it and say so; `uqnn merge` calibrates as one run of all members.
  TempDir dir;
  const Dataset data = fit_heteroscedastic_rows(200, 21);
  {
    std::ofstream csv(dir.path() / "data.csv");
    csv << "x,y\n";
    for (Index i = 0; i < data.size(); ++i) csv << format_double(data.inputs(0, i)) << ',' << format_double(data.targets(0, i)) << '\n';
  }
  const auto fit_part = [&](const std::string& name, const std::string& part) {
    nlohmann::json options = out_of_fold_options(dir.path() / name, "cv+", 0.4);
    options["data"] = (dir.path() / "data.csv").string();
    options["part"] = part;
    return run_fit(conformal_config_of(options));
  };
  fit_part("whole", "1/1");
  for (const std::string k : {"1", "2"}) {
    const FitReport part = fit_part("part" + k, k + "/2");
    EXPECT_FALSE(read_fit_json(dir.path() / ("part" + k) / "model.json").contains("conformal")) << k;
    EXPECT_FALSE(part.metrics.contains("conformal")) << k;
    EXPECT_TRUE(std::any_of(part.notes.begin(), part.notes.end(),
                            [](const std::string& n) { return n.find("calibrated when the parts are joined by `uqnn merge`") != std::string::npos; }))
        << k;
  }
  MergeConfig merge;
  merge.part_dirs = {dir.path() / "part2", dir.path() / "part1"};
  merge.out_dir = dir.path() / "merged";
  merge.quiet = true;
  run_merge(merge);
  const nlohmann::json whole = read_fit_json(dir.path() / "whole" / "model.json").at("conformal");
  const nlohmann::json merged = read_fit_json(dir.path() / "merged" / "model.json").at("conformal");
  EXPECT_EQ(merged.at("folds"), whole.at("folds"));
  EXPECT_EQ(merged.at("num_folds").get<Index>(), 5);
  const auto a = whole.at("residuals").at(0).get<std::vector<double>>(), b = merged.at("residuals").at(0).get<std::vector<double>>();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 1e-12 * (1 + std::abs(a[i]))) << i;
}

TEST(ConformalFit, JackknifePlusTrainsOneMemberPerRowAndRefusesLargeSets) {
  TempDir dir;
  FitConfig c = conformal_config_of(out_of_fold_options(dir.path() / "run", "jackknife+", 0.5));
  c.data.dataset = fit_heteroscedastic_rows(50, 5);
  const FitReport report = run_fit(c);
  EXPECT_EQ(report.metrics.at("info").at("members").get<Index>(), 25);  // one per training row, whatever --ens-members
  EXPECT_EQ(report.metrics.at("info").at("member_rows").get<Index>(), 24);
  const nlohmann::json cal = read_fit_json(dir.path() / "run" / "model.json").at("conformal");
  IndexVec identity(25);
  std::iota(identity.begin(), identity.end(), Index{0});
  EXPECT_EQ(cal.at("folds").get<IndexVec>(), identity);
  // Above the limit: an InputError that points to cv+.
  FitConfig big = conformal_config_of(out_of_fold_options(dir.path() / "big", "jackknife+", 0.1));
  big.data.dataset = fit_heteroscedastic_rows(kJackknifePlusMaxRows + 40, 5);
  try {
    run_fit(big);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("use --conformal cv+"), std::string::npos) << e.what();
  }
}

TEST(ConformalFit, OutOfFoldMethodsNeedAnEnsembleAndNoCalibrationRows) {
  nlohmann::json map = {{"method", "map"}, {"conformal", "cv+"}};
  EXPECT_NE(conformal_error_of(map).find("--conformal cv+ needs members each trained without one fold"), std::string::npos)
      << conformal_error_of(map);
  EXPECT_NE(conformal_error_of(map).find("use --method ens, rms"), std::string::npos) << conformal_error_of(map);
  nlohmann::json held = {{"method", "ens"}, {"conformal", "jackknife+"}, {"calibration_fraction", 0.2}};
  EXPECT_NE(conformal_error_of(held).find("calibrates on the training rows out of fold"), std::string::npos) << conformal_error_of(held);
  EXPECT_EQ(conformal_error_of({{"method", "rms"}, {"conformal", "cv+"}, {"noise", 0.1}}), "");
  // uqnn evaluate scores a finished fit: it has no members that left folds out.
  EvaluateConfig e;
  e.model_dir = "run";
  e.data = "rows.csv";
  e.conformal = "jackknife+";
  e.calibration_fraction = 0.5;
  try {
    e.validate();
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("ask for it when fitting (uqnn fit --method ens --conformal jackknife+)"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace uqnn

namespace uqnn {
namespace {

TEST(Splits, GapHoldsOutTheMiddleThirdOfTheChosenInput) {
  // Foong et al. (2019): rows sorted by input d; positions round(n/3) .. round(2n/3) - 1 are test.
  Mat x(2, 9);
  x.row(0) << 8, 7, 6, 5, 4, 3, 2, 1, 0;
  x.row(1) << 0, 10, 20, 30, 40, 50, 60, 70, 80;
  DataConfig d;
  d.split = "gap";
  d.split_index = 0;
  Split s = choose_split(d, x);
  EXPECT_EQ(s.test, (IndexVec{3, 4, 5}));  // x0 = 5, 4, 3: the middle of 0..8
  EXPECT_EQ(s.train, (IndexVec{0, 1, 2, 6, 7, 8}));
  d.split_index = 1;
  s = choose_split(d, x);
  EXPECT_EQ(s.test, (IndexVec{3, 4, 5}));
  // Every test row lies strictly between the training rows' clusters of that input.
  Mat y(1, 10);
  y << 0.3, 0.9, 0.1, 0.5, 0.7, 0.2, 0.8, 0.4, 0.6, 0.0;
  d.split_index = 0;
  s = choose_split(d, y);
  ASSERT_EQ(s.test.size(), 4u);  // round(10/3) = 3 .. round(20/3) = 7
  for (Index r : s.test) {
    EXPECT_GT(y(0, r), 0.2);
    EXPECT_LT(y(0, r), 0.7);
  }
  d.split_index = 1;
  EXPECT_THROW(choose_split(d, y), InputError);
}

TEST(Splits, UciSplitsByNumberAreTheShippedFiles) {
  DataConfig d;
  d.path = std::filesystem::path(UQNN_DATA_DIR) / "uci" / "yacht.csv";
  d.split = "uci";
  d.split_index = 3;
  const Index n = 308;
  const Split s = choose_split(d, Mat::Zero(6, n));
  const Split files = read_split(std::filesystem::path(UQNN_DATA_DIR) / "uci/splits/yacht/train_3.txt",
                                 std::filesystem::path(UQNN_DATA_DIR) / "uci/splits/yacht/test_3.txt", n);
  EXPECT_EQ(s.train, files.train);
  EXPECT_EQ(s.test, files.test);
  EXPECT_EQ(s.test.size(), 31u);
  d.split_index = 99;
  try {
    choose_split(d, Mat::Zero(6, n));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--split uci --split-index 99"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace uqnn
