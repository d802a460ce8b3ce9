// `uqnn fit --prior horseshoe | regularized-horseshoe | ard` end to end (issue 20, item 4): a sparse
// linear regression where 4 of 6 inputs are irrelevant. The horseshoe shrinks their weights towards
// 0 further than the Gaussian prior does while it leaves the two real effects alone; ARD's scales
// rank the inputs' relevance; the fit reloads in `uqnn predict`; vi takes the prior; bad settings
// are clear errors.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "unit/cli/cli_fixture.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/core/types.hpp"
#include "uqnn/io/draws_csv.hpp"
#include "uqnn/io/csv.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

class ShrinkageCli : public testing::CliTest {
 protected:
  /// y = 2 x1 - 1.5 x2 + N(0, 0.5^2) with x3..x6 irrelevant, 60 rows.
  std::string sparse_csv() {
    Rng rng(1);
    std::string csv = "x1,x2,x3,x4,x5,x6,y\n";
    for (int i = 0; i < 60; ++i) {
      const Vec x = rng.normal_vector(6);
      const double y = 2.0 * x[0] - 1.5 * x[1] + 0.5 * rng.normal();
      for (Index j = 0; j < 6; ++j) csv += fmt::format("{:.17g},", x[j]);
      csv += fmt::format("{:.17g}\n", y);
    }
    write("sparse.csv", csv);
    return (dir_ / "sparse.csv").string();
  }

  /// Each input's posterior median of |w| from a linear fit's draws.csv; `weight(draws, s, j)`
  /// gives the weight of input j at draw s (chains stacked).
  template <typename Weight>
  static std::vector<double> median_abs_weights(const fs::path& run, Weight weight) {
    const auto table = read_draws_csv((run / "draws.csv").string());
    std::vector<double> medians;
    for (Index j = 0; j < 6; ++j) {
      std::vector<double> w;
      const Index S = table.draws.front().size();
      for (Index s = 0; s < S; ++s) w.push_back(std::abs(weight(table, s, j)));
      std::nth_element(w.begin(), w.begin() + S / 2, w.end());
      medians.push_back(w[static_cast<std::size_t>(S / 2)]);
    }
    return medians;
  }
  static double at(const DrawsTable& t, const std::string& name, Index s) {
    const Mat& m = t.at(name);
    return m.data()[s];
  }
};

TEST_F(ShrinkageCli, HorseshoeShrinksIrrelevantInputsAndReloads) {
  const std::string data = sparse_csv();
  const std::string common = " --quiet --method nuts --arch '' --chains 2 --warmup 500 --draws 500 --data " + data;
  CliRun r = run_cli("fit" + common + " --prior gaussian --out " + (dir_ / "gaussian").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cli("fit" + common + " --prior horseshoe --out " + (dir_ / "horseshoe").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto model = json(dir_ / "horseshoe" / "model.json");
  EXPECT_EQ(model["model"]["kind"], "non_centred");
  EXPECT_EQ(model["model"]["shrinkage"]["groups"], "weight");
  EXPECT_EQ(model["prior"]["kind"], "shrinkage");

  const auto gaussian = median_abs_weights(dir_ / "gaussian", [](const DrawsTable& t, Index s, Index j) {
    return at(t, fmt::format("layer1.weight[0,{}]", j), s);
  });
  // w_j = z_j tau lambda_j / sqrt(6) (nn/non_centred_model.hpp).
  const auto horseshoe = median_abs_weights(dir_ / "horseshoe", [](const DrawsTable& t, Index s, Index j) {
    return at(t, fmt::format("layer1.weight_raw[0,{}]", j), s) * std::exp(at(t, "layer1.weight.log_tau[0]", s)) *
           std::exp(at(t, fmt::format("layer1.weight.log_lambda[{}]", j), s)) / std::sqrt(6.0);
  });
  for (Index j = 0; j < 2; ++j) {
    std::printf("  input %ld: median |w| gaussian %.4f, horseshoe %.4f\n", static_cast<long>(j + 1), gaussian[j], horseshoe[j]);
    EXPECT_NEAR(horseshoe[j], gaussian[j], 0.05) << "a real effect (standardised ~0.6-0.85) is left alone, input " << j + 1;
  }
  double irrelevant_gaussian = 0, irrelevant_horseshoe = 0;
  for (Index j = 2; j < 6; ++j) irrelevant_gaussian += gaussian[j], irrelevant_horseshoe += horseshoe[j];
  std::printf("  inputs 3-6: mean median |w| gaussian %.4f, horseshoe %.4f\n", irrelevant_gaussian / 4, irrelevant_horseshoe / 4);
  EXPECT_LT(irrelevant_horseshoe, 0.8 * irrelevant_gaussian) << "the horseshoe shrinks the irrelevant inputs' weights";

  // The run directory reloads: predict on the training data gives the fit's predictive means.
  r = run_cli("predict --model " + (dir_ / "horseshoe").string() + " --data " + data + " --out " + (dir_ / "p.csv").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const CsvTable again = read_csv(dir_ / "p.csv");
  std::ifstream fitted_in(dir_ / "horseshoe" / "predictions.csv");
  std::string line, text;
  while (std::getline(fitted_in, line)) text += line.substr(0, line.rfind(',')) + "\n";  // drop the split column
  const CsvTable fitted = parse_csv(text, "predictions.csv");
  const Index m_new = again.find_column("y_mean"), m_fit = fitted.find_column("y_mean");
  for (Index row = 0; row < fitted.num_rows(); ++row) EXPECT_NEAR(again.values(row, m_new), fitted.values(row, m_fit), 1e-9);
}

TEST_F(ShrinkageCli, ArdRanksTheInputs) {
  const std::string data = sparse_csv();
  const fs::path ard = dir_ / "ard";
  // One scale per input shared by its 8 outgoing weights (a linear model's single weight per scale
  // says little about the scale: there the posterior means differ by ~0.15-0.35).
  CliRun r = run_cli("fit --quiet --method nuts --arch 8 --chains 2 --warmup 500 --draws 500 --prior ard --data " + data +
                     " --out " + ard.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Per chain: a chain can stick in the funnel of a small scale (about 1 chain in 24 over seeds
  // 0-11, each with step size ~1e-3 and R-hat of lp__ ~1.9), which the fit must then report; the
  // chains that mix rank the inputs. Pooled means would make the test depend on the seed and on the
  // build's rounding (the sanitizer build's trajectories differ from Release's).
  const auto table = read_draws_csv((ard / "draws.csv").string());
  const std::string warnings = json(ard / "metrics.json")["warnings"].dump();
  const bool not_mixed_warning = warnings.find("\"rhat\"") != std::string::npos;
  int ranking_chains = 0;
  for (Index c = 0; c < 2; ++c) {
    std::vector<double> log_scale;
    for (Index j = 0; j < 6; ++j) log_scale.push_back(table.at(fmt::format("layer1.weight.log_scale[{}]", j)).col(c).mean());
    const double irrelevant = (log_scale[2] + log_scale[3] + log_scale[4] + log_scale[5]) / 4;
    std::printf("  chain %ld, ARD posterior mean log scale: inputs 1, 2: %.3f %.3f; inputs 3-6: %.3f\n",
                static_cast<long>(c), log_scale[0], log_scale[1], irrelevant);
    const bool ranks = irrelevant < std::min(log_scale[0], log_scale[1]) - 0.1;
    ranking_chains += ranks;
    EXPECT_TRUE(ranks || not_mixed_warning) << "chain " << c << " does not rank the inputs and the fit does not say "
                                            << "its chains have not mixed: " << warnings;
  }
  EXPECT_GE(ranking_chains, 1) << "ARD scales the irrelevant inputs below both real ones";
}

TEST_F(ShrinkageCli, TheRegularizedHorseshoeRunsUnderNutsAndTheHorseshoeUnderVi) {
  const std::string data = sparse_csv();
  // The regularized horseshoe per unit on a network, with nuts and with vi (whose KL term is then
  // estimated by Monte Carlo: it has no closed form).
  CliRun r = run_cli("fit --quiet --method nuts --arch 5 --chains 1 --warmup 150 --draws 100 --prior regularized-horseshoe "
              "--shrinkage-groups unit --data " + data + " --out " + (dir_ / "rhs").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NO_THROW(json(dir_ / "rhs" / "model.json")["model"]["shrinkage"]["slab_scale"].get<double>());
  r = run_cli("fit --quiet --method vi --arch 5 --epochs 300 --prior horseshoe --data " + data + " --out " + (dir_ / "vi").string());
  EXPECT_TRUE(r.exit_code == 0) << r.output;  // a convergence warning is allowed at 300 epochs
  EXPECT_LT(json(dir_ / "vi" / "metrics.json")["splits"]["train"]["rmse"].get<double>(), 1.0);
}

TEST_F(ShrinkageCli, BadSettingsAreClearErrors) {
  const std::string data = " --data " + sparse_csv() + " --out " + (dir_ / "o").string();
  CliRun r = run_cli("fit --quiet --method map --prior horseshoe --horseshoe-global-scale 0" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--horseshoe-global-scale"), std::string::npos) << r.output;
  r = run_cli("fit --quiet --method map --prior horseshoe --shrinkage-groups neuron" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--shrinkage-groups"), std::string::npos) << r.output;
  r = run_cli("fit --quiet --method rms --prior ard" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs a Gaussian prior"), std::string::npos) << r.output;
  r = run_cli("fit --quiet --method dropout --prior horseshoe" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot take --prior horseshoe"), std::string::npos) << r.output;
  r = run_cli("fit --quiet --method nngp --prior horseshoe" + data);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--prior horseshoe does not apply"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace uqnn
