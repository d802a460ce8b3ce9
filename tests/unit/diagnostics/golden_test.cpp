// Golden values: every column of tests/reference/stan-diagnostics/expected.csv (rstan 2.21.7) for
// every case and parameter, to 1e-8 relative. rstan 2.21 rank-normalises with the offset 1/2 where
// posterior and ArviZ (and our defaults) use Blom's 3/8, so the rank-based columns are checked with
// rank_normalize(x, kRstanOffset); mcse_sd is rstan's older normal-theory formula and is not
// checked here. posterior_golden_test.cpp checks the defaults against posterior 1.4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "unit/diagnostics/golden_table.hpp"
#include "uqnn/io/draws_csv.hpp"
#include "uqnn/diagnostics/draws_table.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/diagnostics/statistics.hpp"

namespace uqnn::diagnostics {
namespace {

constexpr double kRelativeTolerance = 1e-8;
constexpr double kRstanOffset = 0.5;  // rstan 2.21 z_scale: (r - 1/2) / N

/// rstan 2.21's rank-normalised split R-hat (bulk, tail, max) with kappa pieces per chain.
RankNormalizedRhat rstan_rank_rhat(const Mat& draws, int kappa) {
  const double bulk = rhat(rank_normalize(split_chains(draws, kappa), kRstanOffset));
  const double tail = rhat(rank_normalize(split_chains(fold(draws), kappa), kRstanOffset));
  return {bulk, tail, std::max(bulk, tail)};
}

const std::string kReferenceDir = std::string(UQNN_TEST_REFERENCE_DIR) + "/stan-diagnostics";

using testing::GoldenRow;

class DiagnosticsGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    rows_ = testing::read_golden(kReferenceDir + "/expected.csv");
    ASSERT_FALSE(rows_.empty());
  }

  const Mat& draws_of(const GoldenRow& row) {
    auto it = cases_.find(row.case_name);
    if (it == cases_.end()) {
      it = cases_.emplace(row.case_name, read_draws_csv(kReferenceDir + "/" + row.case_name + ".csv")).first;
    }
    return it->second.at(row.param);
  }

  /// Checks `column` of every expected row against `compute(draws)`.
  void check_column(const std::string& column, const std::function<double(const Mat&)>& compute) {
    int checked = 0;
    for (const GoldenRow& row : rows_) {
      const Mat& draws = draws_of(row);
      ASSERT_EQ(draws.cols(), static_cast<Index>(row.values.at("chains"))) << row.case_name;
      ASSERT_EQ(draws.rows(), static_cast<Index>(row.values.at("draws"))) << row.case_name;
      const double expected = row.values.at(column);
      const double actual = compute(draws);
      EXPECT_LE(std::abs(actual - expected), kRelativeTolerance * std::abs(expected))
          << column << " of " << row.case_name << "/" << row.param << ": got " << actual << ", expected "
          << expected << ", relative error " << std::abs(actual - expected) / std::abs(expected);
      ++checked;
    }
    EXPECT_EQ(checked, 18) << "expected.csv should hold 18 case/parameter rows";
  }

  /// The tail R-hat has one input finer than the CSV's 15 digits. With an even number of draws the
  /// two central draws are equidistant from the median, so their folded values |x - median| tie in
  /// exact arithmetic; in floating point they tie or differ by one ulp, depending on the last bits
  /// of the draws, which the CSV rounds away (rstan saw the unrounded draws). Which of the two gets
  /// the lowest rank moves the tail R-hat by up to 1e-5 relative on 4 x 1000 draws and 0.4% on
  /// `tiny`. So each of rstan's values must equal, to 1e-8, the value our functions give under one
  /// of the three resolutions of that tie (tied, lower draw first, upper draw first), and our own
  /// value (rstan_rank_rhat) must be one of those three: everything else is checked at 1e-8.
  static std::vector<RankNormalizedRhat> tie_resolutions(const Mat& draws, int kappa) {
    const Mat folded = fold(draws);
    std::vector<Index> order(static_cast<std::size_t>(folded.size()));
    for (Index i = 0; i < folded.size(); ++i) order[static_cast<std::size_t>(i)] = i;
    std::partial_sort(order.begin(), order.begin() + 2, order.end(),
                      [&](Index a, Index b) { return folded.data()[a] < folded.data()[b]; });
    Index lower = order[0], upper = order[1];  // by draw value
    if (draws.data()[lower] > draws.data()[upper]) std::swap(lower, upper);
    const double smallest = folded.data()[order[0]];
    const double bulk = rstan_rank_rhat(draws, kappa).bulk;

    std::vector<RankNormalizedRhat> out;
    for (int resolution = 0; resolution < 3; ++resolution) {
      Mat resolved = folded;
      const double next = std::nextafter(smallest, 1.0);
      resolved.data()[lower] = resolution == 2 ? next : smallest;
      resolved.data()[upper] = resolution == 1 ? next : smallest;
      const double tail = rhat(rank_normalize(split_chains(resolved, kappa), kRstanOffset));
      out.push_back({bulk, tail, std::max(bulk, tail)});
    }
    return out;
  }

  void check_tail_column(const std::string& column, int kappa,
                         const std::function<double(const RankNormalizedRhat&)>& pick) {
    for (const GoldenRow& row : rows_) {
      const Mat& draws = draws_of(row);
      const double expected = row.values.at(column);
      const double ours = pick(rstan_rank_rhat(draws, kappa));
      bool rstan_matches = false, ours_matches = false;
      std::string candidates;
      for (const RankNormalizedRhat& r : tie_resolutions(draws, kappa)) {
        rstan_matches |= std::abs(pick(r) - expected) <= kRelativeTolerance * std::abs(expected);
        ours_matches |= std::abs(pick(r) - ours) <= 1e-14 * std::abs(ours);
        candidates += " " + std::to_string(pick(r));
      }
      EXPECT_TRUE(rstan_matches) << column << " of " << row.case_name << "/" << row.param << ": expected " << expected
                                 << ", candidates" << candidates;
      EXPECT_TRUE(ours_matches) << column << " of " << row.case_name << "/" << row.param << ": ours " << ours;
      // Without the tie the value is still close: at most 0.5% off (the `tiny` case, 40 draws).
      EXPECT_NEAR(ours, expected, 5e-3 * expected) << column << " of " << row.case_name << "/" << row.param;
    }
  }

  std::vector<GoldenRow> rows_;
  std::map<std::string, DrawsTable> cases_;
};

TEST_F(DiagnosticsGolden, MeanAndSd) {
  check_column("mean", [](const Mat& x) { return mean(x); });
  check_column("sd", [](const Mat& x) { return sd(x); });
}

TEST_F(DiagnosticsGolden, QuantilesType7) {
  check_column("q05", [](const Mat& x) { return quantile(x, 0.05); });
  check_column("q50", [](const Mat& x) { return quantile(x, 0.5); });
  check_column("q95", [](const Mat& x) { return quantile(x, 0.95); });
}

TEST_F(DiagnosticsGolden, SplitRhat) {
  check_column("rhat_split", [](const Mat& x) { return split_rhat(x); });
  check_column("rhat_split4", [](const Mat& x) { return split_rhat(x, 4); });
}

TEST_F(DiagnosticsGolden, RankNormalizedRhatBulk) {
  check_column("rhat_bulk", [](const Mat& x) { return rstan_rank_rhat(x, 2).bulk; });
}

TEST_F(DiagnosticsGolden, RankNormalizedRhatTail) {
  check_tail_column("rhat_tail", 2, [](const RankNormalizedRhat& r) { return r.tail; });
  check_tail_column("rhat_rank", 2, [](const RankNormalizedRhat& r) { return r.max; });
  check_tail_column("rhat_rank_split4", 4, [](const RankNormalizedRhat& r) { return r.max; });
}

TEST_F(DiagnosticsGolden, EffectiveSampleSizes) {
  check_column("ess_basic", [](const Mat& x) { return ess_basic(x); });
  check_column("ess_bulk", [](const Mat& x) { return ess_basic(rank_normalize(split_chains(x, 2), kRstanOffset)); });
  check_column("ess_tail", [](const Mat& x) { return ess_tail(x); });
}

TEST_F(DiagnosticsGolden, MonteCarloStandardErrorOfTheMean) {
  check_column("mcse_mean", [](const Mat& x) { return mcse_mean(x); });
}

// Seed 003 App. B.1: cR-hat^(kappa) is R-hat^(kappa) of one chain (M = 1); the single_chain case
// of expected.csv is exactly that, so chainwise_rhat must be rank_normalized_rhat of that chain, and
// that must reproduce rstan's rank R-hats when rank-normalised with rstan's offset.
TEST_F(DiagnosticsGolden, ChainwiseRhatOfSingleChain) {
  int checked = 0;
  for (const GoldenRow& row : rows_) {
    if (row.case_name != "single_chain") continue;
    const Mat& draws = draws_of(row);
    const std::vector<RankNormalizedRhat> kappa2 = chainwise_rhat(draws, 2);
    const std::vector<RankNormalizedRhat> kappa4 = chainwise_rhat(draws, 4);
    ASSERT_EQ(kappa4.size(), 1u);
    const double expected2 = row.values.at("rhat_rank"), expected4 = row.values.at("rhat_rank_split4");
    EXPECT_EQ(kappa2[0].max, rank_normalized_rhat(draws, 2).max) << row.param;
    EXPECT_EQ(kappa4[0].max, rank_normalized_rhat(draws, 4).max) << row.param;
    EXPECT_NEAR(rstan_rank_rhat(draws, 2).max, expected2, kRelativeTolerance * expected2) << row.param;
    EXPECT_NEAR(rstan_rank_rhat(draws, 4).max, expected4, kRelativeTolerance * expected4) << row.param;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// The chain-wise cR-hat of a multi-chain run is each chain's own R-hat: on `shifted` (one chain
// off by a constant) the between-chain R-hat flags the run but every chain alone is stationary.
TEST_F(DiagnosticsGolden, ChainwiseRhatIgnoresBetweenChainDifferences) {
  const GoldenRow* shifted = nullptr;
  for (const GoldenRow& row : rows_) {
    if (row.case_name == "shifted" && row.param == "p1") shifted = &row;
  }
  ASSERT_NE(shifted, nullptr);
  const Mat& draws = draws_of(*shifted);
  EXPECT_GT(rank_normalized_rhat(draws, 4).max, 1.1);
  const std::vector<RankNormalizedRhat> per_chain = chainwise_rhat(draws, 4);
  ASSERT_EQ(per_chain.size(), static_cast<std::size_t>(draws.cols()));
  for (std::size_t j = 0; j < per_chain.size(); ++j) {
    const Mat chain = draws.col(static_cast<Index>(j));
    EXPECT_EQ(per_chain[j].max, rank_normalized_rhat(chain, 4).max);
    EXPECT_LT(per_chain[j].max, 1.1) << "chain " << j;
  }
}

}  // namespace
}  // namespace uqnn::diagnostics
