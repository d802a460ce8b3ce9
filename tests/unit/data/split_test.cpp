#include "uqnn/data/split.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "uqnn/core/error.hpp"
#include "uqnn/data/dataset.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

using testing::TempDir;

IndexVec sorted_union(std::initializer_list<const IndexVec*> parts) {
  IndexVec all;
  for (const IndexVec* p : parts) all.insert(all.end(), p->begin(), p->end());
  std::sort(all.begin(), all.end());
  return all;
}

IndexVec iota(Index n) {
  IndexVec v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), Index{0});
  return v;
}

std::string invalid_argument_of(const SplitParams& params) {
  try {
    params.validate();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(Split, ValidateNamesParameterAndRange) {
  EXPECT_EQ(invalid_argument_of(SplitParams{}), "no error");
  EXPECT_EQ(invalid_argument_of({.train_fraction = 1.0, .validation_fraction = 0.0, .test_fraction = 0.0}), "no error");
  EXPECT_EQ(invalid_argument_of({.train_fraction = 0.0}), "train_fraction must be in (0, 1], got 0");
  EXPECT_EQ(invalid_argument_of({.train_fraction = 1.5}), "train_fraction must be in (0, 1], got 1.5");
  EXPECT_EQ(invalid_argument_of({.validation_fraction = -0.1}), "validation_fraction must be in [0, 1], got -0.1");
  EXPECT_EQ(invalid_argument_of({.test_fraction = std::nan("")}), "test_fraction must be in [0, 1], got nan");
  EXPECT_EQ(invalid_argument_of({.train_fraction = 0.8, .validation_fraction = 0.2, .test_fraction = 0.1}),
            "train_fraction + validation_fraction + test_fraction must be at most 1, got 0.8 + 0.2 + 0.1 = 1.1");
  // 0.7 + 0.2 + 0.1 is 1.0000000000000002 in floating point: accepted.
  EXPECT_EQ(invalid_argument_of({.train_fraction = 0.7, .validation_fraction = 0.2, .test_fraction = 0.1}), "no error");
  EXPECT_THROW(random_split(10, {.train_fraction = 0.0}), std::invalid_argument);
}

TEST(Split, RandomSplitPartitionsWithRoundedSizes) {
  const Split split = random_split(103, {.train_fraction = 0.7, .validation_fraction = 0.2, .test_fraction = 0.1, .seed = 5});
  EXPECT_EQ(split.train.size(), 72u);       // round(72.1)
  EXPECT_EQ(split.validation.size(), 21u);  // round(92.7) - 72 = 93 - 72
  EXPECT_EQ(split.test.size(), 10u);        // the rest, since the fractions sum to 1
  EXPECT_EQ(sorted_union({&split.train, &split.validation, &split.test}), iota(103));
  EXPECT_TRUE(std::is_sorted(split.train.begin(), split.train.end()));
  EXPECT_TRUE(std::is_sorted(split.test.begin(), split.test.end()));
  // Same sizes as the UCI protocol (first round(0.9 n) rows train) for yacht's 308 rows.
  const Split uci = random_split(308, {.train_fraction = 0.9, .validation_fraction = 0.0, .test_fraction = 0.1});
  EXPECT_EQ(uci.train.size(), 277u);
  EXPECT_EQ(uci.validation.size(), 0u);
  EXPECT_EQ(uci.test.size(), 31u);
}

TEST(Split, FractionsBelowOneLeaveRowsUnused) {
  const Split split = random_split(100, {.train_fraction = 0.5, .validation_fraction = 0.0, .test_fraction = 0.25});
  EXPECT_EQ(split.train.size(), 50u);
  EXPECT_EQ(split.test.size(), 25u);
  const IndexVec all = sorted_union({&split.train, &split.test});
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());  // disjoint
}

TEST(Split, SameSeedSameSplitOtherSeedDifferent) {
  const SplitParams params{.seed = 42};
  const Split a = random_split(50, params), b = random_split(50, params);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.validation, b.validation);
  EXPECT_EQ(a.test, b.test);
  const Split c = random_split(50, {.seed = 43});
  EXPECT_NE(a.train, c.train);
}

TEST(Split, EmptyPartFromNonZeroFractionIsAnError) {
  try {
    random_split(20, {.train_fraction = 0.9, .validation_fraction = 0.01, .test_fraction = 0.09});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "validation_fraction = 0.01 of 20 rows gives no rows; use a larger fraction or 0");
  }
}

std::string read_error(const std::string& contents, Index num_rows) {
  TempDir dir;
  const auto file = dir.write("train_0.txt", contents);
  try {
    read_index_file(file, num_rows);
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(file.string(), 0), 0u) << message;
    return message.substr(dir.path().string().size() + 1);
  }
  ADD_FAILURE() << "expected an InputError for:\n" << contents;
  return "";
}

TEST(Split, ReadIndexFileAcceptsSpacesCrlfAndBlankLines) {
  TempDir dir;
  const auto file = dir.write("idx.txt", " 3\r\n0\r\n\r\n  7 \r\n");
  EXPECT_EQ(read_index_file(file, 8), (IndexVec{3, 0, 7}));
}

TEST(Split, ReadIndexFileErrorsNameFileLineValueAndRange) {
  EXPECT_EQ(read_error("1\n2\nabc\n", 10),
            "train_0.txt:3: 'abc' is not a row index (expected one whole number per line in [0, 9])");
  EXPECT_EQ(read_error("1\n2.5\n", 10),
            "train_0.txt:2: '2.5' is not a row index (expected one whole number per line in [0, 9])");
  EXPECT_EQ(read_error("1\n2\n3\n10\n", 10),
            "train_0.txt:4: row index 10 is out of range: the data has 10 rows, so valid indices are [0, 9]");
  EXPECT_EQ(read_error("-1\n", 10),
            "train_0.txt:1: row index -1 is out of range: the data has 10 rows, so valid indices are [0, 9]");
  EXPECT_EQ(read_error("99999999999999999999\n", 10),
            "train_0.txt:1: row index 99999999999999999999 is out of range: the data has 10 rows, so valid indices are [0, 9]");
  EXPECT_EQ(read_error("4\n5\n\n4\n", 10), "train_0.txt:4: row index 4 appears twice (lines 1 and 4)");
  EXPECT_EQ(read_error("\n \n", 10), "train_0.txt: split file contains no row indices");
  TempDir dir;
  try {
    read_index_file(dir.path() / "missing.txt", 10);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (dir.path() / "missing.txt").string() + ": cannot open split file (No such file or directory)");
  }
}

TEST(Split, WriteThenReadRoundTrip) {
  TempDir dir;
  const Split split = random_split(40, {.seed = 9});
  write_index_file(dir.path() / "train.txt", split.train);
  write_index_file(dir.path() / "valid.txt", split.validation);
  write_index_file(dir.path() / "test.txt", split.test);
  const Split back = read_split(dir.path() / "train.txt", dir.path() / "test.txt", 40, dir.path() / "valid.txt");
  EXPECT_EQ(back.train, split.train);
  EXPECT_EQ(back.validation, split.validation);
  EXPECT_EQ(back.test, split.test);
}

TEST(Split, ReadSplitRejectsOverlap) {
  TempDir dir;
  const auto train = dir.write("train.txt", "0\n1\n2\n");
  const auto test = dir.write("test.txt", "3\n2\n");
  try {
    read_split(train, test, 5);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "row index 2 is in both '" + train.string() + "' and '" + test.string() +
                                         "'; the parts of a split must not overlap");
  }
}

TEST(Split, UciYachtSplitZeroPartitionsAllRows) {
  const std::filesystem::path uci = std::filesystem::path(UQNN_DATA_DIR) / "uci";
  const Dataset data = load_dataset(uci / "yacht.csv");
  ASSERT_EQ(data.size(), 308);
  ASSERT_EQ(data.input_dim(), 6);
  const Split split = read_split(uci / "splits/yacht/train_0.txt", uci / "splits/yacht/test_0.txt", data.size());
  EXPECT_EQ(split.train.size(), 277u);  // round(0.9 * 308)
  EXPECT_EQ(split.test.size(), 31u);
  EXPECT_EQ(split.train.front(), 73);  // first line of train_0.txt
  EXPECT_EQ(sorted_union({&split.train, &split.test}), iota(308));
  // Subsets carry the right rows: train example 0 is data row 73.
  const Dataset train = data.subset(split.train);
  EXPECT_EQ(train.inputs.col(0), data.inputs.col(73));
  EXPECT_EQ(train.targets(0, 0), data.targets(0, 73));
  // Write + read through our own writer gives the same lists.
  TempDir dir;
  write_index_file(dir.path() / "train_0.txt", split.train);
  EXPECT_EQ(read_index_file(dir.path() / "train_0.txt", data.size()), split.train);
}

}  // namespace
}  // namespace uqnn
