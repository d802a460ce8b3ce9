// Classification end to end: every method fits a bernoulli network on Mushroom (UCI; 117 one-hot
// inputs, edible or not) and reports accuracy, NLL, Brier and ECE per split in metrics.json, the
// reliability-diagram figure, and `uqnn predict` gives the same metrics on new rows.
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "unit/cli/cli_fixture.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

class ClassificationCli : public testing::CliTest {
 protected:
  /// The first `rows` rows of mushroom.csv (the file is in row order of the UCI data, which mixes
  /// the classes).
  std::string mushroom_subset(int rows) {
    const fs::path source = fs::path(UQNN_DATA_DIR) / "uci/mushroom.csv";
    std::ifstream in(source);
    if (!in) throw std::runtime_error("cannot read " + source.string());
    std::ofstream out(dir_ / "mushroom.csv");
    std::string line;
    for (int r = 0; r <= rows && std::getline(in, line); ++r) out << line << '\n';
    return (dir_ / "mushroom.csv").string();
  }
};

// Settings that keep each method to seconds, also under the sanitizers (the defaults run for
// minutes); every registered method must be listed, so that a new one is covered. Laplace skips its
// Newton polish (K exact Hessian-vector products per step, ~100x slower under ASan; the GGN at the
// trained weights is positive semi-definite anyway) and slice takes one chain of 2 + 2
// coordinate-wise sweeps over its 953 parameters (3 + 3 on two chains took 289 s of the 600 s limit
// in a loaded CI run under ASan).
const std::map<std::string, std::string>& quick_settings() {
  static const std::map<std::string, std::string> m{
      {"map", ""},
      {"ens", "--ens-members 3"},
      {"rms", "--ens-members 3"},
      {"swag", "--swag-members 1 --swag-steps 4 --num-samples 20"},
      {"vi", "--num-samples 20"},
      // Sampled weights through the network (--laplace-predictive nn, QUiNN's) are underconfident here
      // (ECE 0.35: 880 of 950 directions are prior-dominated); the linearised predictive is not.
      {"laplace", "--laplace-curvature ggn --laplace-predictive glm --laplace-newton-steps 0 --num-samples 20"},
      {"dropout", "--num-samples 20"},
      {"nuts", "--chains 2 --warmup 40 --draws 20 --max-depth 5"},
      {"hmc", "--chains 2 --warmup 40 --draws 20"},
      {"mala", "--chains 2 --warmup 40 --draws 20"},
      {"amcmc", "--chains 2 --warmup 40 --draws 20"},
      {"slice", "--chains 1 --warmup 2 --draws 2"},
      {"sgld", "--chains 2 --warmup 40 --draws 20 --step-size 1e-3"},
      {"psgld", "--chains 2 --warmup 40 --draws 20 --step-size 1e-3"},
      {"sghmc", "--chains 2 --warmup 40 --draws 20 --step-size 1e-3"},
      // The Dirichlet-based GP prior over the logit, pre-trained on fewer points and steps than its
      // defaults (500 steps on up to 1000 points) to stay within seconds under the sanitizers.
      {"fsgld", "--chains 2 --warmup 40 --draws 20 --step-size 1e-3 --gp-iterations 50 --gp-max-points 100"},
      {"fsghmc", "--chains 2 --warmup 40 --draws 20 --step-size 1e-3 --gp-iterations 50 --gp-max-points 100"},
      // nngp's GP is over a regression function: it refuses classification.
      {"nngp", "regression only"},  // exact GP regression
      {"vi-hmc", "--chains 2 --warmup 40 --draws 20 --num-samples 20"},
      {"dei-nuts", "--members 2 --warmup 40 --draws 20 --max-depth 5"},
      {"mclmc", "--chains 2 --warmup 60 --draws 20"},
      {"mile", "--members 2 --warmup 60 --draws 40 --thin 2"},
  };
  return m;
}

/// The settings of a method's short run: its own entry above, or its family's (a new method needs
/// no entry unless its family's settings do not suit it).
std::string quick_settings_of(const std::string& method) {
  if (const auto it = quick_settings().find(method); it != quick_settings().end()) return it->second;
  const MethodSpec& spec = find_method(method);
  if (!spec.handles_classification) return "regression only";
  switch (spec.family) {
    case MethodFamily::Mcmc:
    case MethodFamily::StochasticGradientMcmc:
    case MethodFamily::Hybrid: return "--chains 2 --warmup 40 --draws 20";
    case MethodFamily::Approximation:
    case MethodFamily::GaussianProcess: return "--num-samples 20";
    case MethodFamily::Ensemble: return "--ens-members 3";
    case MethodFamily::PointEstimate: return "";
  }
  return "";
}

// One test per method, so that ctest runs them side by side and each has its own time limit.
class ClassificationCliMethod : public ClassificationCli, public ::testing::WithParamInterface<std::string> {};

TEST_P(ClassificationCliMethod, FitsMushroomAndReportsAccuracyNllBrierAndEce) {
  const std::string data = mushroom_subset(400);
  const std::string& method = GetParam();
  const std::string quick = quick_settings_of(method);
  const fs::path out = dir_ / method;
  EXPECT_EQ(quick == "regression only", !find_method(method).handles_classification) << method;
  if (quick == "regression only") {
    const CliRun r = run_cli(fmt::format("fit --quiet --data {} --likelihood bernoulli --method {} --out {}", data, method, out.string()));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("need --likelihood gaussian"), std::string::npos) << r.output;
    return;
  }
  const CliRun r = run_cli(fmt::format("fit --quiet --data {} --likelihood bernoulli --arch 8 --epochs 150 --test-fraction 0.25 "
                                       "--method {} {} --out {}",
                                       data, method, quick, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto metrics = json(out / "metrics.json");
  for (const char* split : {"train", "test"}) {
    const auto& m = metrics.at("splits").at(split);
    for (const char* key : {"accuracy", "nll", "brier", "ece", "lppd"}) ASSERT_TRUE(m.contains(key)) << split << " " << key;
    // Mushroom is separable (odour alone gives 98.5%); every method's posterior predictive
    // classifies it, with an NLL well below a coin's log 2.
    EXPECT_GT(m.at("accuracy").get<double>(), 0.9) << split;
    EXPECT_LT(m.at("nll").get<double>(), 0.4) << split;
    EXPECT_LT(m.at("brier").get<double>(), 0.1) << split;
    EXPECT_GE(m.at("ece").get<double>(), 0.0);
    EXPECT_LT(m.at("ece").get<double>(), 0.2) << split;
    EXPECT_DOUBLE_EQ(m.at("lppd").get<double>(), -m.at("nll").get<double>());
  }
  EXPECT_TRUE(fs::exists(out / "fit.png")) << "the reliability diagram";
}

INSTANTIATE_TEST_SUITE_P(Methods, ClassificationCliMethod, ::testing::ValuesIn(method_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

TEST_F(ClassificationCli, SwagQuartersAnAutomaticRateThatDivergesAndKeepsAGivenOne) {
  // Every 8th mushroom (1,015 rows): nearly separable classes, whose likelihood is flat at the MAP,
  // so the automatic SGD rate read there (about 46) diverges once SGD leaves the MAP's neighbourhood.
  {
    std::ifstream in(fs::path(UQNN_DATA_DIR) / "uci/mushroom.csv");
    std::ofstream out(dir_ / "every8th.csv");
    std::string line;
    for (int r = -1; std::getline(in, line); ++r)
      if (r < 0 || r % 8 == 0) out << line << '\n';
  }
  const std::string common = "fit --data " + (dir_ / "every8th.csv").string() +
                             " --likelihood bernoulli --arch 10 --method swag --swag-members 1 --figure none --idata-extras never";
  const fs::path out = dir_ / "auto";
  CliRun r = run_cli(common + " --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto metrics = json(out / "metrics.json");
  // One quarter was enough in the builds measured (gcc Release, clang ASan); the SGD trajectory, and
  // so the number, follows the floating-point rounding of the build and host.
  const int reductions = metrics.at("info").at("swag_lr_reductions").at(0).get<int>();
  EXPECT_GE(reductions, 1) << metrics.at("info").dump();
  const double rate = metrics.at("info").at("swag_lr").at(0).get<double>(), automatic = rate * (1 << (2 * reductions));
  EXPECT_NE(r.output.find(fmt::format("member 0's SGD diverged at the automatic rate; it ran at 1/{} of it ({:.3g})", 1 << (2 * reductions), rate)),
            std::string::npos)
      << r.output;
  // A classifier, not a diverged fit (about half the rows are of each class): 0.98 in the Release
  // build, 0.91 under ASan's build, whose rounding gives another SGD trajectory.
  EXPECT_GT(metrics.at("splits").at("train").at("accuracy").get<double>(), 0.85);
  // A rate the user gave is kept: its divergence stops the run (exit code 3) and says so.
  r = run_cli(common + fmt::format(" --swag-lr {} --out ", automatic) + (dir_ / "given").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("swag: SGD diverged at step"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "given"));
}

TEST_F(ClassificationCli, PredictGivesTheFitsMetricsOnNewRows) {
  const std::string data = mushroom_subset(400);
  const fs::path model = dir_ / "map";
  ASSERT_EQ(run_cli(fmt::format("fit --quiet --data {} --likelihood bernoulli --arch 8 --epochs 150 --method map --out {}", data,
                                model.string()))
                .exit_code,
            0);
  // predict on the training file: the reloaded run gives the fit's metrics for the same rows.
  const CliRun p = run_cli("predict --model " + model.string() + " --data " + data + " --out " + (dir_ / "p.csv").string());
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const auto printed = nlohmann::json::parse(p.output.substr(0, p.output.rfind('}') + 1));
  const auto fitted = json(model / "metrics.json").at("splits").at("train");
  for (const char* key : {"accuracy", "nll", "brier", "ece", "n"})
    EXPECT_NEAR(printed.at(key).get<double>(), fitted.at(key).get<double>(), 1e-12) << key;
}

// ---------------------------------------------------------------------------------------------
// Image files: the 8 x 8 digits of data/digits as IDX files (gzipped, labels found by MNIST's
// names), a cnn, test rows from their own file and out-of-distribution images.

/// data/digits/<split>-images-idx3-ubyte.gz
std::string digits_file(const std::string& split) { return (fs::path(UQNN_DATA_DIR) / "digits" / (split + "-images-idx3-ubyte.gz")).string(); }

/// An IDX file of `n` 8 x 8 images of unsigned bytes: the test digits with their 64 pixels
/// scrambled by one fixed permutation (the grey levels of digits, none of their strokes).
std::string write_scrambled_digits(const fs::path& path, int n) {
  std::string bytes{'\0', '\0', '\x08', '\x03', '\0', '\0', '\0', static_cast<char>(n), '\0', '\0', '\0', '\x08', '\0', '\0', '\0', '\x08'};
  gzFile f = gzopen(digits_file("test").c_str(), "rb");
  std::string all(16 + 360 * 64, '\0');
  gzread(f, all.data(), static_cast<unsigned>(all.size()));
  gzclose(f);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < 64; ++k) bytes += all[static_cast<std::size_t>(16 + 64 * i + (k * 37 + 11) % 64)];
  std::ofstream(path, std::ios::binary) << bytes;
  return path.string();
}

TEST_F(ClassificationCli, FitsIdxImagesWithTestDataAndScoresOutOfDistributionImages) {
  const std::string ood = write_scrambled_digits(dir_ / "scrambled.idx", 200);
  const fs::path out = dir_ / "digits";
  const CliRun r = run_cli(fmt::format(
      "fit --quiet --data {} --test-data {} --ood-data {} --likelihood categorical --classes 10 --model cnn --layers conv8k3p1,pool2,fc32 "
      "--activation relu --method ens --ens-members 3 --optimizer adam --lr 3e-3 --epochs 20 --batch-size 64 --out {}",
      digits_file("train"), digits_file("test"), ood, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto metrics = json(out / "metrics.json");
  const auto test = metrics.at("splits").at("test");
  EXPECT_EQ(test.at("n").get<int>(), 360);
  EXPECT_EQ(metrics.at("splits").at("train").at("n").get<int>(), 1437);
  EXPECT_GT(test.at("accuracy").get<double>(), 0.9);  // chance is 0.1
  EXPECT_LT(test.at("nll").get<double>(), 0.4);       // log 10 = 2.3 for a uniform guess
  const auto o = metrics.at("ood");
  EXPECT_EQ(o.at("in_distribution").get<std::string>(), "test");
  EXPECT_EQ(o.at("ood_rows").get<int>(), 200);
  // Scrambled digits are far from any digit: the predictive entropy and the members' disagreement
  // rank most of them above the test digits.
  EXPECT_GT(o.at("predictive_entropy").at("auroc").get<double>(), 0.8);
  EXPECT_GT(o.at("mutual_information").at("auroc").get<double>(), 0.7);
  EXPECT_LE(o.at("predictive_entropy").at("fpr_at_95_tpr").get<double>(), 1.0);
  EXPECT_TRUE(fs::exists(out / "ood.png")) << "the entropy and mutual information histograms";
  // The input shape came from the files, and the standardisation is per channel: one mean and sd
  // for all 64 pixels, those of the training images (grey levels 0-16: mean about 4.9).
  const auto model = json(out / "model.json");
  const auto mean = model.at("standardizer").at("inputs").at("mean").get<std::vector<double>>();
  ASSERT_EQ(mean.size(), 64u);
  EXPECT_EQ(std::count(mean.begin(), mean.end(), mean.front()), 64);
  EXPECT_NEAR(mean.front(), 4.88, 0.05);
  EXPECT_EQ(model.at("input_names").front().get<std::string>(), "c0_0_0");
  // predictions.csv: the row's index, not its 64 pixels.
  std::ifstream predictions(out / "predictions.csv");
  std::string header;
  std::getline(predictions, header);
  EXPECT_EQ(header.rfind("row,label,", 0), 0u) << header;

  // uqnn predict on the test images (labels found beside them) with the same OOD images gives the
  // fit's test metrics and OOD scores.
  const CliRun p = run_cli("predict --model " + out.string() + " --data " + digits_file("test") + " --ood-data " + ood + " --out " +
                           (dir_ / "p.csv").string());
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const auto printed = nlohmann::json::parse(p.output.substr(0, p.output.rfind('}') + 1));
  for (const char* key : {"accuracy", "nll", "brier", "ece"}) EXPECT_NEAR(printed.at(key).get<double>(), test.at(key).get<double>(), 1e-12) << key;
  for (const char* key : {"predictive_entropy", "mutual_information", "max_probability"})
    EXPECT_NEAR(printed.at("ood").at(key).at("auroc").get<double>(), o.at(key).at("auroc").get<double>(), 1e-12) << key;
}

TEST_F(ClassificationCli, BadImageFilesStopWithTheFileAndExitCode2) {
  const std::string common = "fit --quiet --likelihood categorical --classes 10 --model cnn --layers conv2k3,fc4 --epochs 1 --out " +
                             (dir_ / "out").string();
  // Images whose labels are not beside them under MNIST's names.
  fs::copy_file(digits_file("test"), dir_ / "digits.idx.gz");
  CliRun r = run_cli(common + " --data " + (dir_ / "digits.idx.gz").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--data " + (dir_ / "digits.idx.gz").string() + ": where are the labels? Give them with --labels"),
            std::string::npos) << r.output;
  // A truncated IDX file.
  {
    gzFile f = gzopen(digits_file("test").c_str(), "rb");
    std::string bytes(16 + 100, '\0');
    gzread(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    std::ofstream(dir_ / "short-images-idx3-ubyte", std::ios::binary) << bytes;
  }
  r = run_cli(common + " --data " + (dir_ / "short-images-idx3-ubyte").string() + " --labels " +
              (fs::path(UQNN_DATA_DIR) / "digits/test-labels-idx1-ubyte.gz").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find((dir_ / "short-images-idx3-ubyte").string()), std::string::npos) << r.output;
  // Labels of another set: 360 labels for 1437 images.
  r = run_cli(common + " --data " + digits_file("train") + " --labels " + (fs::path(UQNN_DATA_DIR) / "digits/test-labels-idx1-ubyte.gz").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("1437 images but labels of shape (360,)"), std::string::npos) << r.output;
  // --labels with a CSV table, and OOD scores of a regression.
  const std::string sine = write_sine_csv(20);
  r = run_cli("fit --quiet --data " + sine + " --labels " + digits_file("test") + " --epochs 1 --out " + (dir_ / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is a CSV table, whose labels are a column (--target)"), std::string::npos) << r.output;
  r = run_cli("fit --quiet --data " + sine + " --ood-data " + sine + " --epochs 1 --out " + (dir_ / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--ood-data: the detection scores are of class probabilities"), std::string::npos) << r.output;
  // Ten classes of labels, and the likelihood's default of two: the message names --classes.
  r = run_cli("fit --quiet --likelihood categorical --model cnn --layers conv2k3,fc4 --epochs 1 --data " + digits_file("test") +
              " --out " + (dir_ / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("must be an integer class in [0, 1] (the likelihood has 2 classes: give the data's number of classes "
                          "with --classes)"),
            std::string::npos)
      << r.output;
  // Test rows of another form than the training images.
  r = run_cli(common + " --data " + digits_file("train") + " --test-data " + sine);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--test-data " + sine), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(ClassificationCli, DropoutAndKroneckerLaplaceRunOnACnn) {
  // 300 training digits; MC dropout before the fc layers and K-FAC with the conv layer's factors.
  std::string indices;
  for (int i = 0; i < 300; ++i) indices += std::to_string(i) + "\n";
  write("train300.txt", indices);
  const std::string common = fmt::format(
      "fit --quiet --data {} --train-indices {} --test-data {} --likelihood categorical --classes 10 --model cnn "
      "--layers conv4k3,pool2,fc16 --activation relu --num-samples 30 --figure none",
      digits_file("train"), (dir_ / "train300.txt").string(), digits_file("test"));
  for (const std::string method : {"dropout --optimizer adam --lr 3e-3 --epochs 60 --batch-size 32",
                                   "laplace --laplace-structure kron --laplace-curvature ggn --laplace-predictive glm"}) {
    const fs::path out = dir_ / method.substr(0, method.find(' '));
    const CliRun r = run_cli(common + " --method " + method + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << method << "\n" << r.output;
    const auto test = json(out / "metrics.json").at("splits").at("test");
    EXPECT_EQ(test.at("n").get<int>(), 360);
    EXPECT_GT(test.at("accuracy").get<double>(), 0.75) << method;  // chance is 0.1
    EXPECT_LT(test.at("nll").get<double>(), 1.0) << method;        // a uniform guess: log 10 = 2.3
  }
}

}  // namespace
}  // namespace uqnn
