#include "uqnn/io/npy_row_writer.hpp"

#include <gtest/gtest.h>

#include "unit/io/temp_dir.hpp"
#include "uqnn/data/image_arrays.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn {
namespace {

// Rows appended one at a time come back from the .npy reader (and so from numpy.load) as the
// [rows, columns] matrix; until finish() only the temporary file exists.
TEST(NpyRowWriter, RowsWrittenOneAtATimeReadBackAsTheMatrixOnlyOnceFinished) {
  testing::TempDir dir;
  const auto path = dir.path() / "draws.npy";
  NpyRowWriter writer(path, 3);
  const double rows[4][3] = {{1.5, -2.0, 3.25}, {0.1, 1e-300, -1e300}, {4, 5, 6}, {-0.0, 7, 8}};
  for (const auto& row : rows) writer.append(row);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::exists(atomic_temp_path(path)));
  writer.finish();
  EXPECT_FALSE(std::filesystem::exists(atomic_temp_path(path)));
  const std::string bytes = testing::TempDir::read(path);
  ASSERT_EQ(bytes.size(), NpyRowWriter::kHeaderBytes + 4 * 3 * sizeof(double));
  EXPECT_EQ(bytes[NpyRowWriter::kHeaderBytes - 1], '\n');  // the dict ends the header, values start at 128 (a multiple of 64)
  const NdArray a = read_npy(path);
  ASSERT_EQ(a.shape, (std::vector<Index>{4, 3}));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(a.values[static_cast<std::size_t>(3 * r + c)], rows[r][c]) << r << "," << c;
}

// A writer that never finishes (an exception while drawing) leaves neither file behind.
TEST(NpyRowWriter, AWriterDestroyedUnfinishedLeavesNoFile) {
  testing::TempDir dir;
  const auto path = dir.path() / "draws.npy";
  {
    NpyRowWriter writer(path, 2);
    const double row[2] = {1, 2};
    writer.append(row);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(atomic_temp_path(path)));
}

// The header of any row count up to 19 digits fits the fixed 128 bytes, so rewriting it never moves the values.
TEST(NpyRowWriter, TheHeaderIsTheSameLengthForEveryRowCount) {
  for (const Index rows : {Index{0}, Index{7}, Index{1000000}, std::numeric_limits<Index>::max()})
    EXPECT_EQ(NpyRowWriter::header(rows, 10000001).size(), NpyRowWriter::kHeaderBytes) << rows;
  const std::string h = NpyRowWriter::header(12, 34);
  EXPECT_NE(h.find("'shape': (12, 34)"), std::string::npos) << h;
}

}  // namespace
}  // namespace uqnn
