// Golden values from the posterior R package (Stan's reference implementation of Vehtari et al.
// 2021) and from ArviZ, written by scripts/regenerate-diagnostics-golden into
// tests/reference/diagnostics: every posterior column for every case (one chain, odd and even draw
// counts, ties, iid, antithetic, heavy tails, a shifted chain, the fewest draws) to 1e-10 relative,
// and ArviZ's columns where ArviZ defines the same quantity. The draws are stored with 17
// significant digits, so posterior, ArviZ and this test see the same doubles.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "unit/diagnostics/golden_table.hpp"
#include "uqnn/io/draws_csv.hpp"
#include "uqnn/diagnostics/draws_table.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/diagnostics/statistics.hpp"
#include "uqnn/diagnostics/summary.hpp"

namespace uqnn::diagnostics {
namespace {

constexpr double kPosteriorRelativeTolerance = 1e-10;
const std::string kDir = std::string(UQNN_TEST_REFERENCE_DIR) + "/diagnostics";

using testing::GoldenRow;
using testing::read_golden;

class PosteriorGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    rows_ = read_golden(kDir + "/posterior.csv");
    ASSERT_EQ(rows_.size(), 18u) << "posterior.csv should hold 18 case/parameter rows";
  }

  const Mat& draws_of(const GoldenRow& row) {
    auto it = cases_.find(row.case_name);
    if (it == cases_.end()) it = cases_.emplace(row.case_name, read_draws_csv(kDir + "/" + row.case_name + ".csv")).first;
    const Mat& draws = it->second.at(row.param);
    EXPECT_EQ(draws.cols(), static_cast<Index>(row.values.at("chains")));
    EXPECT_EQ(draws.rows(), static_cast<Index>(row.values.at("draws")));
    return draws;
  }

  /// Checks `column` of every row (optionally only rows passing `applies`) against `compute`.
  void check(const std::string& column, const std::function<double(const Mat&)>& compute,
             const std::function<bool(const Mat&)>& applies = [](const Mat&) { return true; }) {
    int checked = 0;
    for (const GoldenRow& row : rows_) {
      const Mat& draws = draws_of(row);
      if (!applies(draws)) continue;
      const double expected = row.values.at(column), actual = compute(draws);
      const std::string where = column + " of " + row.case_name + "/" + row.param;
      ++checked;
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(actual)) << where << ": got " << actual << ", posterior gives NA";
        continue;
      }
      // Location statistics near 0 are compared on the scale of the draws.
      const double scale = std::max(std::abs(expected), row.values.at("sd"));
      EXPECT_LE(std::abs(actual - expected), kPosteriorRelativeTolerance * scale)
          << where << ": got " << actual << ", expected " << expected << ", relative error "
          << std::abs(actual - expected) / scale;
    }
    EXPECT_GT(checked, 0) << column;
  }

  std::vector<GoldenRow> rows_;
  std::map<std::string, DrawsTable> cases_;
};

/// Rows of `table` (posterior.csv or arviz.csv) by "case/param".
std::map<std::string, const GoldenRow*> by_name(const std::vector<GoldenRow>& table) {
  std::map<std::string, const GoldenRow*> out;
  for (const GoldenRow& row : table) out[row.case_name + "/" + row.param] = &row;
  return out;
}

TEST_F(PosteriorGolden, MeanSdAndQuantiles) {
  check("mean", [](const Mat& x) { return mean(x); });
  check("sd", [](const Mat& x) { return sd(x); });
  check("q05", [](const Mat& x) { return quantile(x, 0.05); });
  check("q50", [](const Mat& x) { return quantile(x, 0.5); });
  check("q95", [](const Mat& x) { return quantile(x, 0.95); });
}

// With 2 or 3 draws per chain posterior's split R-hats are an artefact (R drops the one-row halves
// to vectors and cbind re-pairs them into first-draw and last-draw "chains"); ours are NaN there, as
// ArviZ's (checked in ArvizAgrees and FewDraws).
bool splits_into_pieces_of_two(const Mat& x) { return x.rows() >= 4; }

TEST_F(PosteriorGolden, RankNormalizedRhat) {
  check("rhat", [](const Mat& x) { return rank_normalized_rhat(x).max; }, splits_into_pieces_of_two);
  check("rhat_bulk", [](const Mat& x) { return rank_normalized_rhat(x).bulk; }, splits_into_pieces_of_two);
  check("rhat_tail", [](const Mat& x) { return rank_normalized_rhat(x).tail; }, splits_into_pieces_of_two);
}

TEST_F(PosteriorGolden, SplitAndUnsplitRhat) {
  check("rhat_basic", [](const Mat& x) { return split_rhat(x); }, splits_into_pieces_of_two);
  check("rhat_unsplit", [](const Mat& x) { return rhat(x); }, [](const Mat& x) { return x.cols() >= 2; });
}

// Fewer than 4 draws per chain: R-hat, ESS and MCSE of the summary row are NaN (ArviZ's values in
// arviz.csv are NaN too); mean, sd and quantiles are still posterior's.
TEST_F(PosteriorGolden, FewDraws) {
  int checked = 0;
  for (const GoldenRow& row : rows_) {
    const Mat& draws = draws_of(row);
    if (draws.rows() >= kMinDrawsPerChain) continue;
    const Summary s = summarize(row.param, draws);
    for (const double value : {s.r_hat, s.ess_bulk, s.ess_tail, s.mcse_mean, s.mcse_sd})
      EXPECT_TRUE(std::isnan(value)) << row.case_name;
    EXPECT_NEAR(s.mean, row.values.at("mean"), kPosteriorRelativeTolerance * row.values.at("sd")) << row.case_name;
    EXPECT_NEAR(s.sd, row.values.at("sd"), kPosteriorRelativeTolerance * row.values.at("sd")) << row.case_name;
    EXPECT_TRUE(std::isnan(split_rhat(draws)) && std::isnan(rank_normalized_rhat(draws).max)) << row.case_name;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST_F(PosteriorGolden, EffectiveSampleSizes) {
  check("ess_unsplit", [](const Mat& x) { return ess_basic(x); });
  check("ess_mean", [](const Mat& x) { return ess_mean(x); });
  check("ess_bulk", [](const Mat& x) { return ess_bulk(x); });
  check("ess_tail", [](const Mat& x) { return ess_tail(x); });
}

TEST_F(PosteriorGolden, MonteCarloStandardErrors) {
  check("mcse_mean", [](const Mat& x) { return mcse_mean(x); });
  check("mcse_sd", [](const Mat& x) { return mcse_sd(x); });
}

// ArviZ (arviz 0.23's az.rhat, az.ess, az.mcse) on the same draws, compared with uqnn's summary row
// (what `uqnn diagnose` prints). Where ArviZ defines a quantity differently from posterior it is not
// compared: ArviZ gives no R-hat for one chain (posterior splits it in two) and folds the draws
// after splitting them (posterior before, so with an odd draw count the median differs); for split
// chains of 2-3 draws (4-7 draws per chain) its ESS differs (a value for 2 draws where posterior
// gives NA; for 3 the cap M S log10(M S) where posterior's truncation gives M S / 2). mcse_sd is
// compared everywhere else: both use the delta method with the ESS of the squared deviations.
TEST_F(PosteriorGolden, ArvizAgrees) {
  const std::vector<GoldenRow> arviz = read_golden(kDir + "/arviz.csv");
  ASSERT_EQ(arviz.size(), rows_.size());
  const auto posterior_rows = by_name(rows_);
  int compared_rhat = 0, compared_mcse_sd = 0;
  for (const GoldenRow& row : arviz) {
    const Mat& draws = draws_of(*posterior_rows.at(row.case_name + "/" + row.param));
    const Summary ours = summarize(row.param, draws);
    const std::string where = row.case_name + "/" + row.param;
    const auto expect_close = [&](const std::string& column, double actual) {
      const double expected = row.values.at(column);
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(actual)) << "ArviZ's " << column << " of " << where << " is NaN, ours " << actual;
        return;
      }
      EXPECT_LE(std::abs(actual - expected), kPosteriorRelativeTolerance * std::abs(expected))
          << "ArviZ's " << column << " of " << where << ": ours " << actual << ", ArviZ " << expected;
    };
    const bool few = draws.rows() < kMinDrawsPerChain;
    if (draws.cols() >= 2 && (draws.rows() % 2 == 0 || few)) {
      expect_close("rhat", ours.r_hat);
      ++compared_rhat;
    }
    if (!few && draws.rows() < 8) continue;
    expect_close("ess_bulk", ours.ess_bulk);
    expect_close("ess_tail", ours.ess_tail);
    if (!few) expect_close("ess_mean", ess_mean(draws));
    expect_close("mcse_mean", ours.mcse_mean);
    expect_close("mcse_sd", ours.mcse_sd);
    ++compared_mcse_sd;
  }
  EXPECT_EQ(compared_rhat, 12);
  EXPECT_EQ(compared_mcse_sd, 16);
}

}  // namespace
}  // namespace uqnn::diagnostics
