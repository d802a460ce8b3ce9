#include "uqnn/io/csv.hpp"

#include <gtest/gtest.h>
#include <zlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/core/rng.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

using testing::TempDir;

/// Reads `contents` from a file called data.csv and returns the InputError message ("" if none).
std::string read_error(const std::string& contents, const std::string& name = "data.csv") {
  TempDir dir;
  const auto file = dir.write(name, contents);
  try {
    read_csv(file);
  } catch (const InputError& e) {
    const std::string message = e.what();
    // Error messages name the file as the user gave it.
    EXPECT_EQ(message.rfind(file.string(), 0), 0u) << message;
    return message.substr(file.parent_path().string().size() + 1);  // strip the temp directory
  }
  ADD_FAILURE() << "expected an InputError for:\n" << contents;
  return "";
}

TEST(Csv, ReadsHeaderAndValuesRowMajorInFileOrder) {
  TempDir dir;
  const auto table = read_csv(dir.write("t.csv", "a,b,c\n1,2,3\n4.5,-5e-3,+6\n"));
  EXPECT_EQ(table.column_names, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(table.num_rows(), 2);
  ASSERT_EQ(table.num_columns(), 3);
  EXPECT_EQ(table.values(0, 0), 1.0);
  EXPECT_EQ(table.values(0, 2), 3.0);
  EXPECT_EQ(table.values(1, 0), 4.5);
  EXPECT_EQ(table.values(1, 1), -5e-3);
  EXPECT_EQ(table.values(1, 2), 6.0);
  EXPECT_EQ(table.find_column("b"), 1);
  EXPECT_EQ(table.find_column("z"), -1);
  EXPECT_EQ(table.source, (dir.path() / "t.csv").string());
}

TEST(Csv, HandlesCrlfSpacesQuotesBomBlankLinesAndNoFinalNewline) {
  const auto table = parse_csv("\xEF\xBB\xBF \"x 1\" , \"say \"\"hi\"\"\",\"a,b\"\r\n 1 , 2 ,3\r\n\r\n4,\"5\",6", "mem");
  EXPECT_EQ(table.column_names, (std::vector<std::string>{"x 1", "say \"hi\"", "a,b"}));
  ASSERT_EQ(table.num_rows(), 2);
  EXPECT_EQ(table.values(0, 0), 1.0);
  EXPECT_EQ(table.values(0, 1), 2.0);
  EXPECT_EQ(table.values(1, 1), 5.0);
  EXPECT_EQ(table.values(1, 2), 6.0);
}

TEST(Csv, ParsesDoublesExactly) {
  const auto table = parse_csv("v\n0.1\n1e-300\n1.7976931348623157e308\n4.9406564584124654e-324\n", "mem");
  EXPECT_EQ(table.values(0, 0), 0.1);
  EXPECT_EQ(table.values(1, 0), 1e-300);
  EXPECT_EQ(table.values(2, 0), std::numeric_limits<double>::max());
  EXPECT_EQ(table.values(3, 0), std::numeric_limits<double>::denorm_min());
}

TEST(Csv, MissingFile) {
  TempDir dir;
  const auto file = dir.path() / "absent.csv";
  try {
    read_csv(file);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), file.string() + ": cannot open file (No such file or directory)");
  }
}

TEST(Csv, EmptyFile) {
  EXPECT_EQ(read_error(""), "data.csv: file is empty (expected a header row of column names and at least one data row)");
  EXPECT_EQ(read_error("\n  \r\n"),
            "data.csv: file is empty (expected a header row of column names and at least one data row)");
}

TEST(Csv, HeaderOnly) {
  EXPECT_EQ(read_error("a,b\n"), "data.csv: has a header row (2 columns) but no data rows");
  EXPECT_EQ(read_error("a,b\r\n\r\n"), "data.csv: has a header row (2 columns) but no data rows");
}

TEST(Csv, RaggedRowNamesLineAndFieldCounts) {
  EXPECT_EQ(read_error("a,b,c\n1,2,3\n4,5\n"), "data.csv:3: expected 3 fields (as in the header on line 1), found 2");
  EXPECT_EQ(read_error("a,b,c\n1,2,3\n4,5,6,7\n"), "data.csv:3: expected 3 fields (as in the header on line 1), found 4");
  // Blank lines still count towards the line number.
  EXPECT_EQ(read_error("a,b,c\n\n1,2,3\n\n4,5\n"), "data.csv:5: expected 3 fields (as in the header on line 1), found 2");
}

TEST(Csv, NonNumericFieldNamesLineColumnAndText) {
  std::string text = "x0,x1,x2\n";
  for (int i = 0; i < 15; ++i) text += "1,2,3\n";
  text += "1,2,abc\n";  // line 17
  EXPECT_EQ(read_error(text), "data.csv:17: column 'x2' (3rd field): 'abc' is not a number");
  EXPECT_EQ(read_error("a,b\r\n1,2x\r\n"), "data.csv:2: column 'b' (2nd field): '2x' is not a number");
  EXPECT_EQ(read_error("a,b\n1,+-2\n"), "data.csv:2: column 'b' (2nd field): '+-2' is not a number");
  EXPECT_EQ(read_error("a,b\n,2\n"),
            "data.csv:2: column 'a' (1st field): empty field is not a number (missing values are not supported)");
  EXPECT_EQ(read_error("a,b\n1,1e999\n"),
            "data.csv:2: column 'b' (2nd field): '1e999' is out of the range of a double (about 1e-308 to 1e308 in magnitude)");
}

TEST(Csv, QuotedFieldsMayHoldLineBreaksAndLaterLinesKeepTheirNumbers) {
  TempDir dir;
  const auto file = dir.write("data.csv", "\"inlet\r\ntemp, K\",\"y \"\"raw\"\"\"\r\n\"1\",2\r\n3,4\r\n");
  const auto table = read_csv(file);
  EXPECT_EQ(table.column_names, (std::vector<std::string>{"inlet\r\ntemp, K", "y \"raw\""}));
  ASSERT_EQ(table.values.rows(), 2);
  EXPECT_EQ(table.values(0, 0), 1.0);
  EXPECT_EQ(table.values(1, 1), 4.0);
  // The header spans lines 1-2, so the bad row is line 4.
  EXPECT_EQ(read_error("\"a\nb\",c\n1,2\n3,x\n"), "data.csv:4: column 'c' (2nd field): 'x' is not a number");
  // A quote inside an unquoted field opens nothing: the next line is the next record.
  EXPECT_EQ(read_error("a,b\"c\n1,2\n3,\n"),
            "data.csv:3: column 'b\"c' (2nd field): empty field is not a number (missing values are not supported)");
  // A quote that never closes names the line it opened on.
  EXPECT_EQ(read_error("a,b\n1,2\n\"3,4\n5,6\n"), "data.csv:3: unterminated quote in the 1st field");
  // What write_csv quotes reads back.
  Mat values(1, 2);
  values << 1.5, -2;
  write_csv(dir.path() / "out.csv", {"line\nbreak", "plain"}, values);
  EXPECT_EQ(read_csv(dir.path() / "out.csv").column_names, (std::vector<std::string>{"line\nbreak", "plain"}));
}

TEST(Csv, AFileIsReadInBlocksAndGivesWhatTheWholeTextGives) {
  // About 5 MiB (five of read_csv's 1 MiB blocks): a BOM, CRLF line ends and a quoted header with a
  // line break at the start, long quoted fields with doubled quotes and line breaks throughout, so
  // that records straddle block boundaries at every kind of character.
  std::string text = "\xEF\xBB\xBF\"x\r\n(long)\",\"y \"\"q\"\"\",\"z\"\r\n";
  Rng rng(3);
  Index rows = 0;
  while (text.size() < (std::size_t{5} << 20)) {
    const std::string pad(static_cast<std::size_t>(rng.uniform_index(300)), ' ');
    text += fmt::format("{}{:.17g},\"{:.17g}\"{},{}\r\n", pad, rng.normal(), rng.normal(), pad, rows);
    ++rows;
  }
  TempDir dir;
  const auto file = dir.write("big.csv", text);
  const CsvTable streamed = read_csv(file), whole = parse_csv(text, file.string());
  EXPECT_EQ(streamed.column_names, (std::vector<std::string>{"x\r\n(long)", "y \"q\"", "z"}));
  EXPECT_EQ(streamed.column_names, whole.column_names);
  ASSERT_EQ(streamed.values.rows(), rows);
  EXPECT_TRUE(streamed.values == whole.values);  // bitwise
  EXPECT_EQ(streamed.values(rows - 1, 2), static_cast<double>(rows - 1));
  // A bad value in the last block is named by its line (the header spans lines 1-2).
  text += "1,2,oops\n";
  EXPECT_EQ(read_error(text), fmt::format("data.csv:{}: column 'z' (3rd field): 'oops' is not a number", rows + 3));
}

TEST(Csv, AFileWithoutLineBreaksStopsAtTheLineBound) {
  // A regular file of 65 MiB without a line break (a device such as /dev/zero is refused first).
  const auto path = std::filesystem::temp_directory_path() / ("uqnn_long_line_" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string block(std::size_t{1} << 20, 'x');
    for (int i = 0; i < 65; ++i) out << block;
  }
  try {
    read_csv(path);
    FAIL() << "a 65 MiB line was read";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ":1: line longer than 64 MiB: is this a CSV file?");
  }
  std::filesystem::remove(path);
}

TEST(Csv, DevicesFifosAndDirectoriesAreRefusedBeforeTheyAreOpened) {
  // A FIFO without a writer blocked in open(2), beyond the reach of SIGINT and SIGTERM; /dev/zero
  // never ends. Both are refused without being opened (this test would hang on the FIFO otherwise).
  const auto fifo = std::filesystem::temp_directory_path() / ("uqnn_fifo_" + std::to_string(::getpid()) + ".csv");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto message = [](const std::filesystem::path& p) {
    try {
      read_csv(p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_EQ(message(fifo), fifo.string() + ": is a FIFO (named pipe), not a file: give a regular file");
  std::filesystem::remove(fifo);
  if (std::filesystem::exists("/dev/zero")) {
    EXPECT_EQ(message("/dev/zero"), "/dev/zero: is a device, not a file: give a regular file");
  }
  EXPECT_EQ(message(std::filesystem::temp_directory_path()),
            std::filesystem::temp_directory_path().string() + ": is a directory, not a file: give a regular file");
}

TEST(Csv, MoreColumnsThanTheBoundIsAnError) {
  std::string header = "c0";
  for (std::size_t j = 1; j <= kCsvMaxColumns; ++j) header += ",c" + std::to_string(j);
  try {
    parse_csv(header + "\n", "wide.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "wide.csv:1: header: 1000001 columns, more than the 1000000 uqnn reads");
  }
}

TEST(Csv, NanAndInfinityAreRejected) {
  for (const std::string token : {"nan", "NaN", "inf", "-inf", "Infinity"}) {
    EXPECT_EQ(read_error("a,b\n1,2\n3," + token + "\n"),
              "data.csv:3: column 'b' (2nd field): '" + token + "' is not a finite number (NaN and infinity are not allowed)");
  }
}

TEST(Csv, DuplicateAndEmptyColumnNames) {
  EXPECT_EQ(read_error("a,b,\"a\"\n1,2,3\n"),
            "data.csv:1: header: column name 'a' appears twice (1st and 3rd fields); column names must be unique");
  EXPECT_EQ(read_error("a,,c\n1,2,3\n"), "data.csv:1: header: the 2nd column name is empty; every column needs a name");
  EXPECT_EQ(read_error("a,\"b\n1,2\n"), "data.csv:1: header: unterminated quote in the 2nd field");
}

TEST(Csv, Ordinals) {
  EXPECT_EQ(ordinal(1), "1st");
  EXPECT_EQ(ordinal(2), "2nd");
  EXPECT_EQ(ordinal(3), "3rd");
  EXPECT_EQ(ordinal(4), "4th");
  EXPECT_EQ(ordinal(11), "11th");
  EXPECT_EQ(ordinal(12), "12th");
  EXPECT_EQ(ordinal(13), "13th");
  EXPECT_EQ(ordinal(21), "21st");
  EXPECT_EQ(ordinal(112), "112th");
}

TEST(Csv, WriteThenReadRoundTripsEveryBit) {
  TempDir dir;
  Mat values(3, 3);
  values << 0.1, 1.0 / 3.0, -2.5e-310, 1e300, std::nextafter(1.0, 2.0), 123456789.123456789, -0.0, 42, M_PI;
  const auto file = dir.path() / "out.csv";
  write_csv(file, {"plain", "with,comma", " spaced"}, values);
  const auto text = TempDir::read(file);
  EXPECT_EQ(text.substr(0, text.find('\n')), "plain,\"with,comma\",\" spaced\"");
  const auto table = read_csv(file);
  EXPECT_EQ(table.column_names, (std::vector<std::string>{"plain", "with,comma", " spaced"}));
  ASSERT_EQ(table.values.rows(), 3);
  ASSERT_EQ(table.values.cols(), 3);
  for (Index i = 0; i < 3; ++i)
    for (Index j = 0; j < 3; ++j) EXPECT_EQ(table.values(i, j), values(i, j)) << i << "," << j;
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".tmp." + std::to_string(::getpid())));
}

TEST(Csv, FormatDoubleIsShortestRoundTrip) {
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(2.0), "2");
  EXPECT_EQ(format_double(1.0 / 3.0), "0.3333333333333333");
  const double x = 0.1 + 0.2;
  EXPECT_EQ(std::stod(format_double(x)), x);
}

TEST(Csv, WriteRejectsMismatchedColumnCount) {
  TempDir dir;
  EXPECT_THROW(write_csv(dir.path() / "x.csv", {"a"}, Mat::Zero(2, 2)), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x.csv"));
}

// A gzip-compressed CSV reads as its text does; a damaged one is an input error naming the file.
TEST(Csv, GzipFilesReadAsTheirTextAndDamagedOnesAreInputErrors) {
  TempDir dir;
  const std::string text = "a,y\n1.5,2\n-3,4e2\n";
  {
    gzFile f = gzopen((dir.path() / "t.csv.gz").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  }
  const CsvTable gz = read_csv(dir.path() / "t.csv.gz");
  const CsvTable plain = parse_csv(text, "t.csv");
  EXPECT_EQ(gz.column_names, plain.column_names);
  EXPECT_EQ(gz.values, plain.values);
  std::ofstream(dir.path() / "bad.csv.gz", std::ios::binary) << "\x1f\x8b\x08 not really gzip";
  EXPECT_THROW(read_csv(dir.path() / "bad.csv.gz"), InputError);
}

TEST(Csv, ProteinLoadsWithExpectedShape) {
  const std::filesystem::path file = std::filesystem::path(UQNN_DATA_DIR) / "uci/protein.csv.gz";  // shipped gzipped
  const auto table = read_csv(file);  // 45,730 x 10; takes a few tens of milliseconds in Release
  EXPECT_EQ(table.num_rows(), 45730);
  EXPECT_EQ(table.num_columns(), 10);
  EXPECT_EQ(table.column_names.front(), "F1");
  EXPECT_EQ(table.column_names.back(), "y");
  EXPECT_EQ(table.values(0, 0), 13558.3);  // first data row: 13558.3,4305.35,...,17.284
  EXPECT_EQ(table.values(0, 9), 17.284);
  EXPECT_EQ(table.values(1, 4), 803446.6966);
}

}  // namespace
}  // namespace uqnn
