// fsgld and fsghmc on a classification problem at the defaults a user gets (only the step size,
// which SG-MCMC requires): three classes in 2-D, the Dirichlet-based GP prior of Milios et al.
// (2018) over the logits (Wu et al. 2024, App. E). The run must classify held-out rows, record the
// pre-trained prior, and its class means must be those of the label transformation.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <numbers>
#include <string>

#include "unit/cli/cli_fixture.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

class FunctionalClassificationCli : public testing::CliTest, public ::testing::WithParamInterface<std::string> {
 protected:
  /// 3 classes x 50 rows around three centres 2.1 apart, with deterministic noise of amplitude 1 per
  /// coordinate: the classes overlap, and MAP and SGLD classify about 90% of the held-out rows.
  std::string write_blobs() {
    std::ofstream out(dir_ / "blobs.csv");
    out << "x1,x2,class\n";
    for (int i = 0; i < 150; ++i) {
      const int c = i % 3;
      const double angle = 2.0 * std::numbers::pi * c / 3.0;
      out << fmt::format("{:.6f},{:.6f},{}\n", 1.2 * std::cos(angle) + std::sin(12.9898 * i + 1.0),
                         1.2 * std::sin(angle) + std::cos(78.233 * i + 2.0), c);
    }
    return (dir_ / "blobs.csv").string();
  }
};

TEST_P(FunctionalClassificationCli, ClassifiesAtTheDefaultsUnderTheDirichletGpPrior) {
  const std::string method = GetParam();
  const fs::path out = dir_ / method;
  const CliRun r = run_cli(fmt::format("fit --quiet --data {} --likelihood categorical --classes 3 --test-fraction 0.25 "
                                       "--method {} --step-size 1e-3 --out {}",
                                       write_blobs(), method, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out / "metrics.json");
  const auto metrics = nlohmann::json::parse(in);
  for (const char* split : {"train", "test"}) {
    const auto& m = metrics.at("splits").at(split);
    // fsgld and fsghmc reach 0.89-0.92 and NLL 0.27-0.35 (a uniform guess: log 3 = 1.10).
    EXPECT_GT(m.at("accuracy").get<double>(), 0.82) << split;
    EXPECT_LT(m.at("nll").get<double>(), 0.42) << split;
  }
  const auto& prior = metrics.at("info").at("functional_prior");
  EXPECT_NE(prior.at("gp_prior").get<std::string>().find("Dirichlet"), std::string::npos);
  EXPECT_EQ(prior.at("gp_iterations").get<long>(), 500);   // seed 002 App. E: pre-trained for 500 epochs
  EXPECT_EQ(prior.at("measurement_box").get<long>(), 0);   // sec. 5.3: 40 training points, no box
  EXPECT_EQ(prior.at("measurement_points_per_step").get<long>(), 40);
  // Balanced-ish classes: m_c = mean over the training rows of y~_c, with y~ = log(1.01) - s1/2 on
  // the row's class and log(0.01) - s0/2 elsewhere (s = log(1/alpha + 1)); each class holds between
  // 15% and 55% of the ~113 training rows (50 of the 150 rows each), so m_c lies between those mixtures.
  const double s_on = std::log(1 / 1.01 + 1), s_off = std::log(1 / 0.01 + 1);
  const double on = std::log(1.01) - s_on / 2, off = std::log(0.01) - s_off / 2;
  const auto means = prior.at("gp_output_means").get<std::vector<double>>();
  ASSERT_EQ(means.size(), 3u);
  double sum = 0;
  for (double m : means) {
    EXPECT_GT(m, off + (on - off) * 0.15);
    EXPECT_LT(m, off + (on - off) * 0.55);
    sum += m;
  }
  // The class shares sum to 1: sum_c m_c = on + 2 off exactly.
  EXPECT_NEAR(sum, on + 2 * off, 1e-9);
  EXPECT_GT(prior.at("gp_signal_variance").get<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Methods, FunctionalClassificationCli, ::testing::Values("fsgld", "fsghmc"));

}  // namespace
}  // namespace uqnn
