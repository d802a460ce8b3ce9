// Warnings that say when not to trust a result: each threshold on both sides.
#include "uqnn/io/draws_csv.hpp"
#include "uqnn/diagnostics/warnings.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "uqnn/core/rng.hpp"

namespace uqnn::diagnostics {
namespace {

Summary row(const std::string& name, double r_hat, double ess_bulk) {
  Summary s;
  s.name = name;
  s.r_hat = r_hat;
  s.ess_bulk = ess_bulk;
  return s;
}

std::vector<std::string> codes(const std::vector<Warning>& warnings) {
  std::vector<std::string> out;
  for (const Warning& w : warnings) out.push_back(w.code);
  return out;
}

Warning only(const std::vector<Warning>& warnings, const std::string& code) {
  EXPECT_EQ(codes(warnings), std::vector<std::string>{code});
  return warnings.at(0);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ConvergenceWarnings, NoneForAHealthyRun) {
  SamplerStatsSummary stats;
  stats.num_draws = 4000;
  stats.max_depth = 10;
  stats.draws_at_max_depth = 400;  // exactly 10%: not more than 10%
  stats.e_bfmi = {0.3, 0.9, 1.1, 0.8};  // 0.3 is not below 0.3
  const std::vector<Summary> rows = {row("lp__", 1.01, 400.0), row("f(0.5)", 1.0, 3000.0)};
  EXPECT_TRUE(convergence_warnings(rows, 4, stats).empty());
  EXPECT_TRUE(convergence_warnings({}, 1).empty());
}

TEST(ConvergenceWarnings, RhatAboveThresholdNamesTheWorstRowsFirst) {
  const std::vector<Summary> rows = {row("lp__", 1.011, 1e4), row("f(1)", 1.92, 1e4), row("f(2)", 1.2, 1e4),
                                     row("f(3)", 1.05, 1e4), row("f(4)", 1.0, 1e4), row("f(5)", kNaN, 1e4)};
  const Warning w = only(convergence_warnings(rows, 2), "rhat");
  EXPECT_NE(w.message.find("R-hat above 1.01 for f(1) (1.92), f(2) (1.2), f(3) (1.05) and 1 more"), std::string::npos)
      << w.message;
  EXPECT_EQ(w.message.find("f(4)"), std::string::npos);
}

TEST(ConvergenceWarnings, BulkEssBelowOneHundredPerChain) {
  // 4 chains: the threshold is 400.
  EXPECT_TRUE(convergence_warnings({row("lp__", 1.0, 400.0)}, 4).empty());
  const Warning w = only(convergence_warnings({row("lp__", 1.0, 399.0), row("log_lik", 1.0, 3.2)}, 4), "ess_bulk");
  EXPECT_NE(w.message.find("below 100 per chain (400 for 4 chains) for log_lik (3), lp__ (399)"), std::string::npos)
      << w.message;
  // NaN ESS (too few draws, constant draws) is not judged here.
  EXPECT_TRUE(convergence_warnings({row("lp__", kNaN, kNaN)}, 4).empty());
}

TEST(ConvergenceWarnings, AnyDivergence) {
  SamplerStatsSummary stats;
  stats.num_draws = 600;
  EXPECT_TRUE(convergence_warnings({}, 2, stats).empty());
  stats.divergences = 3;
  const Warning w = only(convergence_warnings({}, 2, stats), "divergences");
  EXPECT_NE(w.message.find("3 of 600 draws (0.5%) ended in a divergent transition"), std::string::npos) << w.message;
}

TEST(ConvergenceWarnings, MoreThanTenPercentAtMaximumTreeDepth) {
  SamplerStatsSummary stats;
  stats.num_draws = 600;
  stats.max_depth = 10;
  stats.draws_at_max_depth = 60;
  EXPECT_TRUE(convergence_warnings({}, 2, stats).empty());
  stats.draws_at_max_depth = 61;
  const Warning w = only(convergence_warnings({}, 2, stats), "max_tree_depth");
  EXPECT_NE(w.message.find("61 of 600 draws (10.2%, more than 10%) reached the maximum tree depth 10"), std::string::npos)
      << w.message;
  stats.max_depth = 0;  // a sampler without trees
  EXPECT_TRUE(convergence_warnings({}, 2, stats).empty());
}

TEST(ConvergenceWarnings, EbfmiBelowPointThree) {
  SamplerStatsSummary stats;
  stats.e_bfmi = {0.9, 0.29, 0.1};
  const Warning w = only(convergence_warnings({}, 3, stats), "e_bfmi");
  EXPECT_NE(w.message.find("E-BFMI below 0.3 for chain 1 (0.29), chain 2 (0.10)"), std::string::npos) << w.message;
}

// Issue 18's NUTS run on yacht, 2 x (300 + 300): R-hat of lp__ 1.92, ESS 3, every draw at the
// maximum tree depth: three warnings, in a fixed order.
TEST(ConvergenceWarnings, TheYachtRunOfIssue18) {
  SamplerStatsSummary stats;
  stats.num_draws = 600;
  stats.max_depth = 10;
  stats.draws_at_max_depth = 600;
  const auto warnings = convergence_warnings({row("lp__", 1.92, 3.0)}, 2, stats);
  EXPECT_EQ(codes(warnings), (std::vector<std::string>{"rhat", "ess_bulk", "max_tree_depth"}));
  const std::string text = format_warnings(warnings);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
  EXPECT_EQ(text.rfind("warning: R-hat above 1.01 for lp__ (1.92)", 0), 0u) << text;
  const nlohmann::json j = to_json(warnings);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[2]["code"], "max_tree_depth");
  EXPECT_EQ(j[2]["message"], warnings[2].message);
}

TEST(ConvergenceWarnings, ThresholdsAndChainsAreChecked) {
  WarningThresholds t;
  t.max_rhat = 0.9;
  EXPECT_THROW(convergence_warnings({}, 1, {}, t), std::invalid_argument);
  t = {};
  t.max_tree_depth_fraction = 1.5;
  EXPECT_THROW(convergence_warnings({}, 1, {}, t), std::invalid_argument);
  t = {};
  t.min_e_bfmi = kNaN;
  EXPECT_THROW(convergence_warnings({}, 1, {}, t), std::invalid_argument);
  EXPECT_THROW(convergence_warnings({}, 0), std::invalid_argument);
  t = {};
  t.max_rhat = 1.1;  // a looser threshold is honoured
  EXPECT_TRUE(convergence_warnings({row("lp__", 1.05, 1e4)}, 1, {}, t).empty());
}

DrawsTable table_of(const std::string& csv) {
  std::istringstream in(csv);
  return parse_draws_csv(in, "test.csv");
}

// A network's chains, judged mode-aware: constructed draws [draws, chains] of lp__ and a predictive
// value. Each chain is iid N(mode_c, 1), so within its mode it has converged exactly.
Mat chains_in_modes(const std::vector<double>& modes, Index draws, std::uint64_t seed) {
  Rng rng(seed);
  Mat m(draws, static_cast<Index>(modes.size()));
  for (Index c = 0; c < m.cols(); ++c)
    for (Index s = 0; s < draws; ++s) m(s, c) = modes[static_cast<std::size_t>(c)] + rng.normal();
  return m;
}

TEST(ModeAwareConvergence, ChainsConvergedInTwoModesAreANoteNotAWarning) {
  // Two chains in each of two modes 5 sds apart: between-chain R-hat far above 1.01.
  const std::vector<ChainDraws> q = {{"lp__", chains_in_modes({0, 0, 5, 5}, 400, 1)},
                                     {"f(0.5)", chains_in_modes({1, 1, -4, -4}, 400, 2)}};
  const ModeAwareConvergence j = mode_aware_convergence(q);
  EXPECT_TRUE(j.warnings.empty()) << format_warnings(j.warnings);
  ASSERT_EQ(j.notes.size(), 1u);
  EXPECT_EQ(j.notes[0].code, "chains_in_different_modes");
  EXPECT_NE(j.notes[0].message.find("lp__"), std::string::npos) << j.notes[0].message;
  // The Stan-style view of the same draws fails them: what this judgement exists to avoid.
  std::vector<Summary> rows;
  for (const ChainDraws& c : q) rows.push_back(summarize(c.name, c.draws));
  EXPECT_EQ(codes(convergence_warnings(rows, 4)), (std::vector<std::string>{"rhat", "ess_bulk"}));
}

TEST(ModeAwareConvergence, OneChainAgreeingWithTheOthersGivesNeither) {
  const ModeAwareConvergence j = mode_aware_convergence({{"lp__", chains_in_modes({0, 0, 0, 0}, 400, 3)}});
  EXPECT_TRUE(j.warnings.empty()) << format_warnings(j.warnings);
  EXPECT_TRUE(j.notes.empty());
}

TEST(ModeAwareConvergence, AStuckChainIsAWarningNamingIt) {
  Mat lp = chains_in_modes({0, 0, 3, 0}, 400, 4);
  lp.col(1).setConstant(-7.5);  // chain 1 never moves (every proposal rejected)
  const ModeAwareConvergence j = mode_aware_convergence({{"lp__", lp}});
  EXPECT_EQ(codes(j.warnings), std::vector<std::string>{"chain_not_converged"});
  EXPECT_NE(j.warnings[0].message.find("Chain 1 has not converged"), std::string::npos) << j.warnings[0].message;
  EXPECT_NE(j.warnings[0].message.find("lp__ in chain 1 (never changes)"), std::string::npos) << j.warnings[0].message;
  EXPECT_TRUE(j.notes.empty()) << "a chain that has not converged makes the between-chain view meaningless";
}

TEST(ModeAwareConvergence, ADriftingChainIsAWarningAndFewEffectiveDrawsAnother) {
  Mat lp = chains_in_modes({0, 0, 0}, 400, 5);
  for (Index s = 0; s < lp.rows(); ++s) lp(s, 2) = 0.02 * static_cast<double>(s) + 0.1 * lp(s, 2);  // a trend: not stationary
  const ModeAwareConvergence j = mode_aware_convergence({{"lp__", lp}});
  ASSERT_FALSE(j.warnings.empty());
  EXPECT_EQ(j.warnings[0].code, "chain_not_converged");
  EXPECT_NE(j.warnings[0].message.find("Chain 2 has not"), std::string::npos) << j.warnings[0].message;
  // Within-chain ESS: 3 iid chains of 50 draws hold 150 < 300 effective draws.
  const ModeAwareConvergence few = mode_aware_convergence({{"log_lik", chains_in_modes({0, 4, 8}, 50, 6)}});
  EXPECT_EQ(codes(few.warnings), std::vector<std::string>{"ess_bulk"});
  EXPECT_EQ(few.notes.size(), 1u);
}

TEST(ModeAwareConvergence, SamplerWarningsStillApplyAndTheTreeDepthIsANoteForDrawsThatPass) {
  SamplerStatsSummary stats;
  stats.num_draws = 1600;
  stats.max_depth = 10;
  stats.draws_at_max_depth = 1600;
  const ModeAwareConvergence passing = mode_aware_convergence({{"lp__", chains_in_modes({0, 0, 0, 0}, 400, 7)}}, stats);
  EXPECT_TRUE(passing.warnings.empty()) << format_warnings(passing.warnings);
  EXPECT_EQ(codes(passing.notes), std::vector<std::string>{"max_tree_depth"});
  // With a divergence, or chains that have not converged, the depth is part of the trouble: a warning.
  stats.divergences = 1;
  const ModeAwareConvergence diverging = mode_aware_convergence({{"lp__", chains_in_modes({0, 0, 0, 0}, 400, 7)}}, stats);
  EXPECT_EQ(codes(diverging.warnings), (std::vector<std::string>{"divergences", "max_tree_depth"}));
  stats.divergences = 0;
  Mat stuck = chains_in_modes({0, 0, 0, 0}, 400, 8);
  stuck.col(0).setConstant(1.0);
  const ModeAwareConvergence failing = mode_aware_convergence({{"lp__", stuck}}, stats);
  EXPECT_EQ(codes(failing.warnings), (std::vector<std::string>{"chain_not_converged", "max_tree_depth"}));
}

TEST(DrawsWarnings, NonFiniteDrawsAndFewDraws) {
  EXPECT_TRUE(draws_warnings(table_of("chain,draw,a\n0,0,1\n0,1,2\n0,2,3\n0,3,4\n")).empty());
  EXPECT_TRUE(few_draws_warnings(0).empty());
  EXPECT_TRUE(few_draws_warnings(4).empty());
  EXPECT_EQ(codes(few_draws_warnings(3)), std::vector<std::string>{"few_draws"});
  const Warning few = only(draws_warnings(table_of("chain,draw,a\n0,0,1\n1,0,2\n")), "few_draws");
  EXPECT_NE(few.message.find("1 draw per chain: R-hat, ESS and MCSE need at least 4"), std::string::npos) << few.message;
  EXPECT_EQ(codes(draws_warnings(table_of("chain,draw,a\n0,0,1\n0,1,2\n0,2,3\n"))), std::vector<std::string>{"few_draws"});

  DrawsTable t = table_of("chain,draw,a,b\n0,0,1,1\n0,1,2,2\n0,2,3,3\n0,3,4,4\n");
  t.draws[1](2, 0) = std::numeric_limits<double>::infinity();
  t.draws[1](3, 0) = kNaN;
  const Warning w = only(draws_warnings(t), "non_finite_draws");
  EXPECT_NE(w.message.find("NaN or infinite draws in b (2 of 4 draws)"), std::string::npos) << w.message;

  // Finite but overflowing: the mean of 1e308 and 1e308 is inf; the variance of +-1e308 is inf.
  DrawsTable big = table_of("chain,draw,a,b\n0,0,1,1e308\n0,1,2,-1e308\n0,2,3,1e308\n0,3,4,1\n");
  const Warning o = only(draws_warnings(big), "overflow");
  EXPECT_NE(o.message.find("in b (largest |x| 1e+308)"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace uqnn::diagnostics
