// The long CSV reader `chain, draw, <quantities>` and CmdStan's CSV: layout and InputError messages.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <streambuf>
#include <string>

#include "uqnn/io/draws_csv.hpp"
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
  EXPECT_EQ(error_of("x,y,p0\n0,0,1\n"), "draws.csv:1: header must start with 'chain,draw' (found 'x,y'), or be CmdStan's with lp__");
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

namespace {

/// One chain of CmdStan's output CSV as CmdStan 2.3x writes it: settings as comments, the header,
/// the adaptation comments, the draws and the timing comments.
std::string cmdstan_csv(const std::vector<std::vector<double>>& rows, bool save_warmup = false) {
  std::string csv =
      "# stan_version_major = 2\n# model = blr_model\n# method = sample (Default)\n#   sample\n"
      "#     num_samples = 3\n#     num_warmup = 2\n#     save_warmup = " + std::string(save_warmup ? "1" : "0 (Default)") +
      "\n#     thin = 1 (Default)\n#     algorithm = hmc (Default)\n#       hmc\n#         engine = nuts (Default)\n"
      "#           nuts\n#             max_depth = 8\n#         metric = diag_e (Default)\n"
      "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,beta.1,beta.2\n"
      "# Adaptation terminated\n# Step size = 0.89\n# Diagonal elements of inverse mass matrix:\n# 0.48, 0.51\n";
  for (const auto& r : rows) {
    for (std::size_t k = 0; k < r.size(); ++k) csv += (k ? "," : "") + std::to_string(r[k]);
    csv += "\n";
  }
  return csv + "# \n#  Elapsed Time: 0.005 seconds (Warm-up)\n#                0.01 seconds (Sampling)\n";
}

const std::vector<std::vector<double>> kCmdStanRows = {{-7.1, 0.9, 0.89, 2, 3, 0, 7.5, 0.25, 1.5},
                                                       {-6.9, 0.8, 0.89, 3, 7, 1, 7.2, 0.31, 1.4},
                                                       {-7.4, 0.95, 0.89, 8, 255, 0, 8.0, 0.12, 1.7}};

TEST(DiagnosticsCmdStanCsv, ReadsOneChainWithItsSamplerColumnsAndMaxDepth) {
  std::istringstream in(cmdstan_csv(kCmdStanRows));
  const DrawsTable t = parse_cmdstan_csv(in, "output_1.csv");
  ASSERT_EQ(t.names.size(), 9u);
  EXPECT_EQ(t.num_chains(), 1);
  EXPECT_EQ(t.num_draws(), 3);
  EXPECT_EQ(t.max_depth, 8);
  EXPECT_EQ(t.at("beta.2")(1, 0), 1.4);
  EXPECT_EQ(t.at("lp__")(2, 0), -7.4);
  EXPECT_TRUE(is_sampler_column("divergent__"));
  EXPECT_FALSE(is_sampler_column("lp__"));
  EXPECT_FALSE(is_sampler_column("beta.1"));
  const DrawsTable q = without_sampler_columns(t);
  EXPECT_EQ(q.names, (std::vector<std::string>{"lp__", "beta.1", "beta.2"}));
}

TEST(DiagnosticsCmdStanCsv, DropsSavedWarmupAndJoinsFilesAsChains) {
  // save_warmup = 1 with num_warmup = 2: the first two rows are warmup.
  std::vector<std::vector<double>> with_warmup = {{-50, 0.1, 2, 1, 1, 0, 60, 9, 9}, {-20, 0.5, 1, 2, 3, 0, 25, 5, 5}};
  with_warmup.insert(with_warmup.end(), kCmdStanRows.begin(), kCmdStanRows.end());
  std::istringstream in(cmdstan_csv(with_warmup, true));
  const DrawsTable t = parse_cmdstan_csv(in, "output_1.csv");
  ASSERT_EQ(t.num_draws(), 3);
  EXPECT_EQ(t.at("lp__")(0, 0), -7.1);

  const auto dir = std::filesystem::temp_directory_path() / ("uqnn_cmdstan_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const auto a = write("output_1.csv", cmdstan_csv(kCmdStanRows));
  auto shifted = kCmdStanRows;
  for (auto& r : shifted) r.back() += 10;
  const auto b = write("output_2.csv", cmdstan_csv(shifted));
  const DrawsTable two = read_draws_csv(std::vector<std::string>{a, b});
  ASSERT_EQ(two.num_chains(), 2);
  EXPECT_EQ(two.at("beta.2")(2, 1), 11.7);
  EXPECT_EQ(two.at("beta.2")(2, 0), 1.7);
  EXPECT_EQ(read_draws_csv(a).num_chains(), 1);  // recognised by its header alone
  // Chains of different lengths, and a long-layout file among CmdStan ones, are errors.
  const auto c = write("output_3.csv", cmdstan_csv({kCmdStanRows[0]}));
  try {
    read_draws_csv(std::vector<std::string>{a, c});
    ADD_FAILURE() << "unequal chains accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("output_3.csv: 1 draws, but"), std::string::npos) << e.what();
  }
  const auto long_file = write("long.csv", "chain,draw,x\n0,0,1\n");
  EXPECT_THROW(read_draws_csv(std::vector<std::string>{long_file, a}), InputError);
  std::filesystem::remove_all(dir);
}

/// An endless stream of one character with no line break, like /dev/zero.
class EndlessLine : public std::streambuf {
 protected:
  int_type underflow() override {
    std::fill(std::begin(block_), std::end(block_), 'x');
    setg(block_, block_, block_ + sizeof block_);
    return traits_type::to_int_type('x');
  }

 private:
  char block_[4096];
};

TEST(DiagnosticsDrawsCsv, AnEndlessLineIsRefusedWithinTheLineBound) {
  // Both readers stop at the bound (64 MiB) with the file and line, rather than growing until
  // memory runs out.
  for (const bool cmdstan : {false, true}) {
    EndlessLine endless;
    std::istream in(&endless);
    try {
      cmdstan ? parse_cmdstan_csv(in, "zero.csv") : parse_draws_csv(in, "zero.csv");
      ADD_FAILURE() << "an endless line was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("zero.csv:1: line longer than 64 MiB"), std::string::npos) << e.what();
    }
  }
}

}  // namespace

}  // namespace uqnn::diagnostics
