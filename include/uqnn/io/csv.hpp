#pragma once
/// @file Numeric CSV tables: one header row of column names, then rows of finite numbers.
///
/// Accepted input: comma-separated fields, LF or CRLF line endings, optional UTF-8 byte-order
/// mark, spaces around fields, fields optionally in double quotes (RFC 4180: `""` inside a quoted
/// field is a literal quote, and a quoted field may hold commas and line breaks), blank lines ignored
/// (as pandas does). Bounds, so that a wrong file (a binary, /dev/zero) is an error and not an
/// exhausted memory: a line of at most kCsvMaxLineBytes, at most kCsvMaxColumns columns. Every data field must be a
/// finite decimal number; missing values, NaN and infinity are rejected with an InputError naming the
/// file, the line (1-based, the header is line 1), the column and the offending text, e.g.
/// `data.csv:17: column 'x2' (3rd field): 'abc' is not a number`.
/// Why so strict: a silently dropped or defaulted value in a benchmark file changes every downstream
/// number; a precise message costs the user seconds.
/// References: RFC 4180 (CSV); pandas.read_csv behaviour for blank lines and whitespace.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn {

/// The longest line read_csv accepts (64 MiB) and the most columns (one million).
inline constexpr std::size_t kCsvMaxLineBytes = std::size_t{64} << 20;
inline constexpr std::size_t kCsvMaxColumns = 1'000'000;

/// `s` without the spaces and tabs around it, nor the '\r' of a CRLF line end: how fields, header
/// names and the values of other line-based formats (split files, CmdStan comments) are trimmed.
std::string_view trim_field(std::string_view s);

/// A numeric table read from a CSV file: `values(row, column)`, rows are the data rows in file order.
struct CsvTable {
  std::vector<std::string> column_names;  ///< header names, unquoted and trimmed
  Mat values;                             ///< [num_rows, num_columns]
  std::string source;                     ///< file name used in error messages

  Index num_rows() const { return values.rows(); }
  Index num_columns() const { return static_cast<Index>(column_names.size()); }
  /// Position of the column called `name`, or -1 if there is none.
  Index find_column(std::string_view name) const;
};

/// Reads a CSV file (see the file comment for the accepted format).
/// Throws uqnn::InputError for a missing/unreadable file, an empty file, a header without data rows,
/// an empty or duplicate column name, a row with the wrong number of fields, or a field that is not
/// a finite number.
CsvTable read_csv(const std::filesystem::path& path);

/// The one CSV tokenizer (data files, draws files, CmdStan output): splits one line into fields.
/// A field may be wrapped in double quotes (spaces outside the quotes are ignored, `""` inside is a
/// quote; a comma inside quotes does not split); unquoted fields are trimmed of spaces and tabs.
/// `fields` views `line` or `unquoted` (which the caller reserves to line.size() + 1 so the views stay
/// valid). Returns false and sets `error` for an unterminated quote or text after a closing quote.
bool split_csv_fields(std::string_view line, std::vector<std::string_view>& fields, std::vector<std::string>& unquoted,
                      std::string& error);

/// Where the CSV record that starts at `pos` ends: at the first line feed outside a quoted field, or
/// at text.size(). `quote_open` (when given) tells whether a quoted field is still open there, i.e.
/// the record continues on the next line.
std::size_t csv_record_end(std::string_view text, std::size_t pos = 0, bool* quote_open = nullptr);

/// A name as a CSV field: in double quotes (`"` doubled) when it holds a comma, quote or line break
/// or starts or ends with a space; as is otherwise.
std::string quote_csv_field(const std::string& name);

/// Parses CSV text already in memory; `source` names it in error messages (e.g. the file name).
CsvTable parse_csv(std::string_view text, const std::string& source);

/// Writes a header row and `values` ([num_rows, column_names.size()]) atomically (see
/// atomic_file.hpp), LF line endings, each number in the shortest form that reads back to the same
/// double (at most 17 significant digits). Names containing a comma, quote or surrounding spaces are
/// quoted. Non-finite values are written as `nan`/`inf`/`-inf` (read_csv rejects them).
/// Throws std::invalid_argument when the column count does not match the names.
void write_csv(const std::filesystem::path& path, const std::vector<std::string>& column_names, const Mat& values);

/// Formats one double in the shortest text that round-trips exactly (e.g. `0.1`, `1e-300`).
std::string format_double(double value);

/// "1st", "2nd", "3rd", "4th", ..., "11th", "21st": used in error messages that name a field.
std::string ordinal(Index n);

}  // namespace uqnn
