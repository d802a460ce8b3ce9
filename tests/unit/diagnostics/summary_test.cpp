// Summary rows (ArviZ columns), the aligned text table and the JSON output.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "uqnn/io/draws_csv.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/diagnostics/statistics.hpp"
#include "uqnn/diagnostics/summary.hpp"

namespace uqnn::diagnostics {
namespace {

/// A deterministic AR(1)-like sample, [draws, chains].
Mat example_draws(Index draws, Index chains, double offset) {
  Mat x(draws, chains);
  for (Index j = 0; j < chains; ++j) {
    double state = 0.0;
    for (Index t = 0; t < draws; ++t) {
      state = 0.5 * state + std::sin(1.7 * static_cast<double>(t * (j + 3)) + 0.3 * static_cast<double>(j));
      x(t, j) = offset + state;
    }
  }
  return x;
}

TEST(DiagnosticsSummary, RowHoldsEachDiagnostic) {
  const Mat x = example_draws(200, 4, 1.0);
  const Summary row = summarize("mu", x);
  EXPECT_EQ(row.name, "mu");
  EXPECT_EQ(row.mean, mean(x));
  EXPECT_EQ(row.sd, sd(x));
  const Interval interval = hdi(x, 0.94);
  EXPECT_EQ(row.hdi_lower, interval.lower);
  EXPECT_EQ(row.hdi_upper, interval.upper);
  EXPECT_EQ(row.mcse_mean, mcse_mean(x));
  EXPECT_EQ(row.mcse_sd, mcse_sd(x));
  EXPECT_EQ(row.ess_bulk, ess_bulk(x));
  EXPECT_EQ(row.ess_tail, ess_tail(x));
  EXPECT_EQ(row.r_hat, rank_normalized_rhat(x).max);
  EXPECT_THROW(summarize("mu", x, 1.0), std::invalid_argument);
}

TEST(DiagnosticsSummary, HdiColumnNamesFollowArviz) {
  EXPECT_EQ(hdi_column_names(0.94), (std::pair<std::string, std::string>{"hdi_3%", "hdi_97%"}));
  EXPECT_EQ(hdi_column_names(0.9), (std::pair<std::string, std::string>{"hdi_5%", "hdi_95%"}));
  EXPECT_EQ(hdi_column_names(0.5), (std::pair<std::string, std::string>{"hdi_25%", "hdi_75%"}));
}

TEST(DiagnosticsSummary, TextTableIsAligned) {
  Summary a{"mu", 1.23456, 0.5, -0.1, 2.25, 0.0123, 0.0087, 1234.4, 987.6, 1.004, 0.94};
  Summary b{"log_sigma", -10.0, 12.5, -30.0, 5.0, 0.5, 0.25, 12.0, 8.0, 1.25, 0.94};
  const std::string table = format_summary_table({a, b});
  const std::string expected =
      "             mean     sd  hdi_3%  hdi_97%  mcse_mean  mcse_sd  ess_bulk  ess_tail  r_hat\n"
      "mu           1.23   0.50   -0.10     2.25       0.01     0.01      1234       988   1.00\n"
      "log_sigma  -10.00  12.50  -30.00     5.00       0.50     0.25        12         8   1.25\n";
  EXPECT_EQ(table, expected) << table;
}

TEST(DiagnosticsSummary, JsonKeepsFullPrecision) {
  const Mat x = example_draws(100, 2, -3.0);
  const std::vector<Summary> rows = {summarize("theta[0]", x)};
  const nlohmann::json json = to_json(rows);
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 1u);
  const nlohmann::json& row = json[0];
  EXPECT_EQ(row["name"], "theta[0]");
  for (const char* key : {"mean", "sd", "hdi_3%", "hdi_97%", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat"}) {
    EXPECT_TRUE(row.contains(key)) << key;
  }
  // Round trip through text: every double survives bit for bit.
  const nlohmann::json back = nlohmann::json::parse(json.dump());
  EXPECT_EQ(back[0]["mean"].get<double>(), rows[0].mean);
  EXPECT_EQ(back[0]["ess_bulk"].get<double>(), rows[0].ess_bulk);
  EXPECT_EQ(back[0]["hdi_97%"].get<double>(), rows[0].hdi_upper);
}

TEST(DiagnosticsSummary, OneRowPerQuantityOfATable) {
  std::istringstream csv("chain,draw,a,b\n0,0,1,5\n0,1,2,4\n0,2,4,4.5\n0,3,3,6\n1,0,2,5\n1,1,1,7\n1,2,3,5\n1,3,5,6\n");
  const std::vector<Summary> rows = summarize(parse_draws_csv(csv, "inline"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "a");
  EXPECT_EQ(rows[1].name, "b");
  EXPECT_DOUBLE_EQ(rows[0].mean, 21.0 / 8.0);
  EXPECT_DOUBLE_EQ(rows[1].mean, 42.5 / 8.0);
}

}  // namespace
}  // namespace uqnn::diagnostics
