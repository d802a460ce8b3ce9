#include "uqnn/data/dataset.hpp"

#include <gtest/gtest.h>

#include "uqnn/core/error.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

CsvTable small_table() {
  // rows: (a, b, c, y) = (1,2,3,10), (4,5,6,20), (7,8,9,30)
  return parse_csv("a,b,c,y\n1,2,3,10\n4,5,6,20\n7,8,9,30\n", "small.csv");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

TEST(Dataset, DefaultsToLastColumnAsTargetAndColumnPerExample) {
  const Dataset data = make_dataset(small_table());
  EXPECT_EQ(data.input_names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(data.target_names, (std::vector<std::string>{"y"}));
  EXPECT_EQ(data.source, "small.csv");
  ASSERT_EQ(data.size(), 3);
  ASSERT_EQ(data.input_dim(), 3);
  ASSERT_EQ(data.target_dim(), 1);
  Mat expected_inputs(3, 3);
  expected_inputs << 1, 4, 7,  //
      2, 5, 8,                 //
      3, 6, 9;
  EXPECT_EQ(data.inputs, expected_inputs);  // [input_dim, n]: example 1 is column 1 = (4, 5, 6)
  EXPECT_EQ(data.targets, (Mat(1, 3) << 10, 20, 30).finished());
}

TEST(Dataset, ChoosesColumnsByNameInGivenOrder) {
  const Dataset data = make_dataset(small_table(), {"b", "y"}, {"c", "a"});
  EXPECT_EQ(data.input_names, (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(data.target_names, (std::vector<std::string>{"b", "y"}));
  EXPECT_EQ(data.inputs, (Mat(2, 3) << 3, 6, 9, 1, 4, 7).finished());
  EXPECT_EQ(data.targets, (Mat(2, 3) << 2, 5, 8, 10, 20, 30).finished());
  // Targets given, inputs default to every other column in file order.
  const Dataset rest = make_dataset(small_table(), {"a"});
  EXPECT_EQ(rest.input_names, (std::vector<std::string>{"b", "c", "y"}));
}

TEST(Dataset, UnknownColumnListsAvailableColumns) {
  EXPECT_EQ(error_of([] { make_dataset(small_table(), {"target"}); }),
            "small.csv: no column named 'target' (requested as target); available columns: 'a', 'b', 'c', 'y'");
  EXPECT_EQ(error_of([] { make_dataset(small_table(), {}, {"a", "x9"}); }),
            "small.csv: no column named 'x9' (requested as input); available columns: 'a', 'b', 'c', 'y'");
}

TEST(Dataset, RejectsOverlapAndRepeats) {
  EXPECT_EQ(error_of([] { make_dataset(small_table(), {"y"}, {"a", "y"}); }),
            "small.csv: column 'y' is both an input and a target");
  EXPECT_EQ(error_of([] { make_dataset(small_table(), {"y"}, {"a", "a"}); }),
            "small.csv: column 'a' is listed twice as input");
  EXPECT_EQ(error_of([] { make_dataset(small_table(), {"a", "b", "c", "y"}); }),
            "small.csv: every column is a target, so no input column is left; available columns: 'a', 'b', 'c', 'y'");
  EXPECT_EQ(error_of([] { make_dataset(parse_csv("y\n1\n", "one.csv")); }),
            "one.csv: needs at least two columns (inputs and a target), found 1: 'y'");
}

TEST(Dataset, SubsetSelectsColumnsInOrder) {
  const Dataset data = make_dataset(small_table());
  const Dataset sub = data.subset({2, 0});
  ASSERT_EQ(sub.size(), 2);
  EXPECT_EQ(sub.inputs.col(0), data.inputs.col(2));
  EXPECT_EQ(sub.inputs.col(1), data.inputs.col(0));
  EXPECT_EQ(sub.targets, (Mat(1, 2) << 30, 10).finished());
  EXPECT_EQ(sub.input_names, data.input_names);
  EXPECT_EQ(sub.source, data.source);
  EXPECT_EQ(data.subset({}).size(), 0);
  EXPECT_THROW(data.subset({0, 3}), std::out_of_range);
  EXPECT_THROW(data.subset({-1}), std::out_of_range);
}

TEST(Dataset, LoadDatasetReadsFile) {
  testing::TempDir dir;
  const auto file = dir.write("d.csv", "x,y\n1,2\n3,4\n");
  const Dataset data = load_dataset(file);
  EXPECT_EQ(data.inputs, (Mat(1, 2) << 1, 3).finished());
  EXPECT_EQ(data.targets, (Mat(1, 2) << 2, 4).finished());
  EXPECT_EQ(data.source, file.string());
}

}  // namespace
}  // namespace uqnn
