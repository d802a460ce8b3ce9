// The long CSV reader `chain, draw, <quantities>`: layout and InputError messages.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/draws_table.hpp"

namespace uqnn::diagnostics {
namespace {

DrawsTable parse(const std::string& text) {
  std::istringstream in(text);
  return parse_draws_csv(in, "draws.csv");
}

/// The InputError message for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DiagnosticsDrawsCsv, ReadsChainsAsColumnsInDrawOrder) {
  // Rows out of order, spaces around fields, CRLF line ends and a trailing blank line.
  const DrawsTable t = parse(
      "chain, draw, mu, sigma\r\n"
      "1, 1, 4.0, 40\r\n"
      "0, 0, 1.0, 10\r\n"
      "0, 1, 2.0, 20\r\n"
      "1, 0, 3.0, 30\r\n"
      "\n");
  ASSERT_EQ(t.names, (std::vector<std::string>{"mu", "sigma"}));
  EXPECT_EQ(t.num_chains(), 2);
  EXPECT_EQ(t.num_draws(), 2);
  const Mat& mu = t.at("mu");
  EXPECT_EQ(mu(0, 0), 1.0);
  EXPECT_EQ(mu(1, 0), 2.0);
  EXPECT_EQ(mu(0, 1), 3.0);
  EXPECT_EQ(mu(1, 1), 4.0);
  EXPECT_EQ(t.at("sigma")(1, 1), 40.0);
  EXPECT_THROW(t.at("tau"), std::out_of_range);
}

TEST(DiagnosticsDrawsCsv, MissingChainDrawHeader) {
  EXPECT_EQ(error_of("x,y,p0\n0,0,1\n"), "draws.csv:1: header must start with 'chain,draw' (found 'x,y')");
  EXPECT_EQ(error_of("chain,draw\n0,0\n"), "draws.csv:1: header has no quantity column after 'chain,draw'");
  EXPECT_EQ(error_of(""), "draws.csv: empty file, expected a header 'chain, draw, ...'");
  EXPECT_EQ(error_of("chain,draw,a,a\n"), "draws.csv:1: column 'a' (field 4) repeats field 3");
}

TEST(DiagnosticsDrawsCsv, RaggedRow) {
  EXPECT_EQ(error_of("chain,draw,a,b\n0,0,1,2\n0,1,3\n"),
            "draws.csv:3: expected 4 fields as in the header, found 3");
  EXPECT_EQ(error_of("chain,draw,a\n0,0,1\n0,1,2,3\n"), "draws.csv:3: expected 3 fields as in the header, found 4");
}

TEST(DiagnosticsDrawsCsv, NonNumericField) {
  EXPECT_EQ(error_of("chain,draw,a,b\n0,0,1,2\n0,1,3,abc\n"),
            "draws.csv:3: column 'b' (field 4): 'abc' is not a number");
  EXPECT_EQ(error_of("chain,draw,a\n0,0,1.5x\n"), "draws.csv:2: column 'a' (field 3): '1.5x' is not a number");
  EXPECT_EQ(error_of("chain,draw,a\n0,0,\n"), "draws.csv:2: column 'a' (field 3): '' is not a number");
  EXPECT_EQ(error_of("chain,draw,a\n0.5,0,1\n"),
            "draws.csv:2: column 'chain' (field 1): '0.5' is not a non-negative integer");
  EXPECT_EQ(error_of("chain,draw,a\n0,-1,1\n"),
            "draws.csv:2: column 'draw' (field 2): '-1' is not a non-negative integer");
}

TEST(DiagnosticsDrawsCsv, UnequalChainLengthsGapsAndDuplicates) {
  EXPECT_EQ(error_of("chain,draw,a\n0,0,1\n0,1,2\n1,0,3\n"),
            "draws.csv: unequal chain lengths: chain 0 has 2 draws, chain 1 has 1");
  EXPECT_EQ(error_of("chain,draw,a\n0,0,1\n2,0,3\n"),
            "draws.csv: chain ids must be 0..1 without gaps; chain 1 is missing");
  EXPECT_EQ(error_of("chain,draw,a\n0,0,1\n0,2,3\n"),
            "draws.csv:3: chain 0 has 2 draws but draw ids up to 2 (expected 0..1)");
  EXPECT_EQ(error_of("chain,draw,a\n0,0,1\n0,0,3\n"), "draws.csv:3: chain 0, draw 0 already given on line 2");
  EXPECT_EQ(error_of("chain,draw,a\n"), "draws.csv: no draws after the header");
}

TEST(DiagnosticsDrawsCsv, MissingFile) {
  EXPECT_THROW(read_draws_csv("/nonexistent/draws.csv"), InputError);
}

}  // namespace
TEST(DrawsTable, QuotedHeaderNamesMayContainCommas) {
  std::istringstream in("chain,draw,\"w[0,1]\",\"say \"\"hi\"\"\"\n0,0,1.5,2\n0,1,2.5,3\n");
  const auto table = parse_draws_csv(in, "q.csv");
  ASSERT_EQ(table.names.size(), 2u);
  EXPECT_EQ(table.names[0], "w[0,1]");
  EXPECT_EQ(table.names[1], "say \"hi\"");
  EXPECT_DOUBLE_EQ(table.at("w[0,1]")(1, 0), 2.5);
}

// The draws reader uses the data reader's tokenizer (io/csv.hpp): quoted data fields, CRLF line
// ends, and the same located errors.
TEST(DrawsTable, SharesTheDataReadersTokenizer) {
  const auto table = parse("chain,draw,x\r\n0,0,\"1.5\"\r\n0 , 1 , 2.5\r\n");
  EXPECT_DOUBLE_EQ(table.at("x")(0, 0), 1.5);
  EXPECT_DOUBLE_EQ(table.at("x")(1, 0), 2.5);
  EXPECT_EQ(error_of("chain,draw,x\n0,0,\"1.5\n"), "draws.csv:2: unterminated quote in the 3rd field");
  EXPECT_EQ(error_of("chain,draw,\"x\" y\n0,0,1\n"), "draws.csv:1: header: unexpected text after the closing quote of the 3rd field");
}

}  // namespace uqnn::diagnostics
