// `uqnn diagnose` on draws it cannot fully judge (issue 17): fewer than 4 draws per chain give NaN
// R-hat and ESS with a warning and exit 0, as ArviZ; NaN, infinite or overflowing draws give a
// warning and exit code 3, never NaN statistics next to finite HDIs as a quiet success.
#include <fmt/format.h>

#include <cmath>

#include "unit/cli/cli_fixture.hpp"

namespace uqnn {
namespace {

using Cli = testing::CliTest;

std::string draws_csv(int chains, int draws, const std::string& special = "", int special_row = -1) {
  std::string csv = "chain,draw,mu,sigma\n";
  int row = 0;
  for (int c = 0; c < chains; ++c)
    for (int d = 0; d < draws; ++d, ++row)
      csv += std::to_string(c) + "," + std::to_string(d) + "," + std::to_string(0.1 * ((d * 7 + c * 3) % 11)) + "," +
             (row == special_row ? special : std::to_string(1.0 + 0.01 * d)) + "\n";
  return csv;
}

TEST_F(Cli, DiagnoseWithOneDrawPerChainReportsNanWithAWarning) {
  write("one.csv", draws_csv(2, 1));
  const auto r = testing::run_cli("diagnose " + (dir_ / "one.csv").string() + " --json " + (dir_ / "one.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("kappa"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 chains x 1 draws"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("warning: 1 draw per chain: R-hat, ESS and MCSE need at least 4"), std::string::npos) << r.output;
  const auto rows = json(dir_ / "one.json");
  ASSERT_EQ(rows.size(), 2u);
  for (const char* key : {"r_hat", "ess_bulk", "ess_tail", "mcse_mean", "mcse_sd"}) EXPECT_TRUE(rows[0][key].is_null()) << key;
  EXPECT_TRUE(rows[0]["mean"].is_number());
}

TEST_F(Cli, DiagnoseWithThreeDrawsIsNanAndWithFourIsComputed) {
  write("three.csv", draws_csv(2, 3));
  auto r = testing::run_cli("diagnose " + (dir_ / "three.csv").string() + " --json " + (dir_ / "three.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: 3 draws per chain"), std::string::npos) << r.output;
  EXPECT_TRUE(json(dir_ / "three.json")[0]["r_hat"].is_null());
  write("four.csv", draws_csv(2, 4));
  r = testing::run_cli("diagnose " + (dir_ / "four.csv").string() + " --json " + (dir_ / "four.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("draws per chain"), std::string::npos) << r.output;
  EXPECT_TRUE(json(dir_ / "four.json")[0]["r_hat"].is_number());
}

TEST_F(Cli, DiagnoseOnNonFiniteDrawsWarnsAndExitsThree) {
  for (const std::string value : {"nan", "inf", "-inf"}) {
    write("bad.csv", draws_csv(2, 20, value, 7));
    const auto r = testing::run_cli("diagnose " + (dir_ / "bad.csv").string() + " --json " + (dir_ / "bad.json").string());
    EXPECT_EQ(r.exit_code, 3) << value << "\n" << r.output;
    EXPECT_NE(r.output.find("warning: NaN or infinite draws in sigma (1 of 40 draws)"), std::string::npos) << r.output;
    const auto rows = json(dir_ / "bad.json");
    // sigma: no HDI either (NaN, written as null); mu is unaffected.
    EXPECT_TRUE(rows[1]["hdi_3%"].is_null()) << rows[1];
    EXPECT_TRUE(rows[0]["hdi_3%"].is_number()) << rows[0];
  }
  // Finite but near the largest double: the variance overflows (issue 17 tried +-1e308).
  write("huge.csv", draws_csv(2, 20, "-1e308", 3));
  const auto r = testing::run_cli("diagnose " + (dir_ / "huge.csv").string());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("warning: Draws too large for double arithmetic in sigma"), std::string::npos) << r.output;
}

// A NUTS run far too short to trust says so on the console (stderr, last), in metrics.json under
// "warnings", and in diagnostics.txt, which `uqnn diagnose DIR` prints: 2 chains of 40 draws hold
// far fewer than 100 effective draws per chain, within the chains.
TEST_F(Cli, AnUntrustworthyFitSaysSo) {
  const auto out = dir_ / "short";
  const auto r = testing::run_cli("demo --quiet --warmup 30 --draws 40 --chains 2 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: Bulk ESS within the chains below 100 per chain"), std::string::npos) << r.output;
  const auto warnings = json(out / "metrics.json")["warnings"];
  ASSERT_TRUE(warnings.is_array());
  bool has_ess = false;
  for (const auto& w : warnings) {
    has_ess |= w["code"] == "ess_bulk";
    EXPECT_NE(r.output.find(w["message"].get<std::string>()), std::string::npos) << w["message"];
  }
  EXPECT_TRUE(has_ess) << warnings;
  const auto diagnosed = testing::run_cli("diagnose " + out.string());
  EXPECT_EQ(diagnosed.exit_code, 0);
  EXPECT_NE(diagnosed.output.find("warning: Bulk ESS within the chains below 100 per chain"), std::string::npos) << diagnosed.output;
  // A method without MCMC draws has none of their warnings; a MAP fit capped at 50 evaluations of
  // L-BFGS says that it did not converge.
  const auto map_out = dir_ / "map";
  const auto map = testing::run_cli("demo --quiet --method map --epochs 50 --out " + map_out.string());
  ASSERT_EQ(map.exit_code, 0) << map.output;
  const auto map_warnings = json(map_out / "metrics.json")["warnings"];
  ASSERT_EQ(map_warnings.size(), 1u) << map_warnings;
  EXPECT_EQ(map_warnings[0]["code"], "not_converged");
  EXPECT_NE(map.output.find("the MAP fit did not converge (lbfgs: evaluation limit after 50 evaluations"), std::string::npos)
      << map.output;
  // VI with the convergence monitor off: the warning says that no monitor ran, not that it ran short.
  const auto vi_out = dir_ / "vi";
  const auto vi = testing::run_cli("demo --quiet --method vi --epochs 30 --convergence-window 0 --figure none --out " + vi_out.string());
  ASSERT_EQ(vi.exit_code, 0) << vi.output;
  const auto vi_optimizer = json(vi_out / "metrics.json")["info"]["optimizer"];
  EXPECT_EQ(vi_optimizer["stop_reason"], "epoch limit, no convergence monitor (--convergence-window 0)") << vi_optimizer;
  EXPECT_EQ(vi_optimizer["converged"], false) << vi_optimizer;
}


// CmdStan's output CSV (one file per chain, comments, lp__ and the `__` columns): the same summary
// as the same draws in the long layout; divergent__ and treedepth__ give Stan's warnings.
TEST_F(Cli, DiagnoseReadsCmdStanCsvFilesAsChains) {
  std::string long_csv = "chain,draw,lp__,theta\n";
  std::vector<std::string> files;
  for (int c = 0; c < 4; ++c) {
    std::string csv = "# model = m\n#             max_depth = 10 (Default)\n"
                      "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,theta\n# Adaptation terminated\n";
    double x = 0.3 * c;
    for (int d = 0; d < 100; ++d) {
      x = 0.5 * x + std::sin(1.7 * d + c);  // a deterministic, autocorrelated sequence
      const double lp = -0.5 * x * x;
      const int depth = d % 5 == 0 ? 10 : 3;  // 20% of the draws at the maximum depth
      const int divergent = c == 2 && d == 40 ? 1 : 0;
      csv += fmt::format("{},0.9,0.5,{},{},{},{},{}\n", lp, depth, (1 << depth) - 1, divergent, 1.0 - lp + 0.1 * std::cos(d * 1.3), x);
      long_csv += fmt::format("{},{},{},{}\n", c, d, lp, x);
    }
    write("output_" + std::to_string(c + 1) + ".csv", csv + "#  Elapsed Time: 0.1 seconds (Total)\n");
    files.push_back((dir_ / ("output_" + std::to_string(c + 1) + ".csv")).string());
  }
  write("long.csv", long_csv);
  const auto r = testing::run_cli("diagnose " + files[0] + " " + files[1] + " " + files[2] + " " + files[3] + " --json " +
                                  (dir_ / "cmdstan.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4 chains x 100 draws, 2 quantities"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("divergences: 1; at max tree depth 10: 80 draws"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("warning: 1 of 400 draws (0.2%) ended in a divergent transition"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reached the maximum tree depth 10"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("accept_stat__"), std::string::npos) << r.output;  // sampler columns are not summarised
  const auto l = testing::run_cli("diagnose " + (dir_ / "long.csv").string() + " --json " + (dir_ / "long.json").string());
  ASSERT_EQ(l.exit_code, 0) << l.output;
  EXPECT_EQ(json(dir_ / "cmdstan.json"), json(dir_ / "long.json"));
  // A deeper maximum: no tree-depth warning.
  const auto deeper = testing::run_cli("diagnose " + files[0] + " " + files[1] + " --max-depth 12");
  EXPECT_EQ(deeper.output.find("maximum tree depth"), std::string::npos) << deeper.output;
}

}  // namespace
}  // namespace uqnn
