#include "uqnn/io/csv.hpp"
#include "uqnn/io/user_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

bool is_blank(std::string_view line) { return trim_field(line).empty(); }

}  // namespace

std::string_view trim_field(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && (is_space(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool split_csv_fields(std::string_view line, std::vector<std::string_view>& fields, std::vector<std::string>& unquoted,
                      std::string& error) {
  fields.clear();
  std::size_t pos = 0;
  const std::size_t n = line.size();
  while (true) {
    std::size_t start = pos;
    while (start < n && is_space(line[start])) ++start;
    if (start < n && line[start] == '"') {
      std::string value;
      std::size_t i = start + 1;
      bool closed = false;
      while (i < n) {
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            value.push_back('"');
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        value.push_back(line[i++]);
      }
      if (!closed) {
        error = "unterminated quote in the " + ordinal(static_cast<Index>(fields.size()) + 1) + " field";
        return false;
      }
      while (i < n && is_space(line[i])) ++i;
      if (i < n && line[i] != ',') {
        error = "unexpected text after the closing quote of the " + ordinal(static_cast<Index>(fields.size()) + 1) +
                " field";
        return false;
      }
      unquoted.push_back(std::move(value));
      fields.push_back(unquoted.back());  // std::string storage is stable: `unquoted` reserved by caller
      if (i >= n) return true;
      pos = i + 1;
    } else {
      const std::size_t comma = line.find(',', pos);
      const std::size_t end = comma == std::string_view::npos ? n : comma;
      fields.push_back(trim_field(line.substr(pos, end - pos)));
      if (comma == std::string_view::npos) return true;
      pos = comma + 1;
    }
  }
}

std::size_t csv_record_end(std::string_view text, std::size_t pos, bool* quote_open) {
  bool in_quotes = false, field_start = true;
  std::size_t i = pos;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c != '"') continue;
      if (i + 1 < text.size() && text[i + 1] == '"') ++i;  // "" is a literal quote
      else in_quotes = false;
    } else if (c == '\n') {
      break;
    } else if (c == ',') {
      field_start = true;
    } else if (c == '"' && field_start) {
      in_quotes = true;  // a quote opens a quoted field only at the field's start (after spaces)
    } else if (!is_space(c)) {
      field_start = false;
    }
  }
  if (quote_open) *quote_open = in_quotes;
  return i;
}

/// Parses a finite double occupying the whole of `text`; returns an explanation when it is not one.
bool parse_number(std::string_view text, double& value, const char*& problem) {
  std::string_view digits = text;
  // std::from_chars takes a leading '-' but not '+'; accept one '+' (as strtod does), not "+-1".
  if (!digits.empty() && digits.front() == '+') {
    digits.remove_prefix(1);
    if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) digits = {};
  }
  if (digits.empty()) {
    problem = "is not a number";
    return false;
  }
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) {
    problem = "is out of the range of a double (about 1e-308 to 1e308 in magnitude)";
    return false;
  }
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    problem = "is not a number";
    return false;
  }
  if (!std::isfinite(value)) {
    problem = "is not a finite number (NaN and infinity are not allowed)";
    return false;
  }
  return true;
}

std::string quote_csv_field(const std::string& name) {
  const bool needs_quotes = name.find_first_of(",\"\r\n") != std::string::npos ||
                            (!name.empty() && (is_space(name.front()) || is_space(name.back())));
  if (!needs_quotes) return name;
  std::string quoted = "\"";
  for (char c : name) {
    if (c == '"') quoted.push_back('"');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}


std::string ordinal(Index n) {
  const Index last_two = n % 100, last = n % 10;
  const char* suffix = "th";
  if (last_two < 11 || last_two > 13) {
    if (last == 1) suffix = "st";
    else if (last == 2) suffix = "nd";
    else if (last == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

Index CsvTable::find_column(std::string_view name) const {
  for (std::size_t j = 0; j < column_names.size(); ++j)
    if (column_names[j] == name) return static_cast<Index>(j);
  return -1;
}

namespace {

/// Gives the records of a CSV text one at a time (a quoted field may hold line breaks, so a record
/// can span lines); the view stays valid until the next call.
using NextRecord = std::function<bool(std::string_view& record)>;

/// The records of a CSV file, read in blocks of 1 MiB: only the record being parsed and the rest of
/// its block are in memory, never the whole file. A record longer than kCsvMaxLineBytes (a binary,
/// /dev/zero, a pipe that never ends its line) is an error instead of filling memory.
class StreamedRecords {
 public:
  StreamedRecords(std::ifstream& in, std::string source) : in_(in), source_(std::move(source)) {}
  bool next(std::string_view& record) {
    for (;;) {
      const std::size_t end = csv_record_end(buffer_, pos_);
      if (end < buffer_.size() || (eof_ && pos_ < buffer_.size())) {
        record = std::string_view(buffer_).substr(pos_, end - pos_);
        lines_ += 1 + static_cast<std::size_t>(std::count(record.begin(), record.end(), '\n'));
        pos_ = end < buffer_.size() ? end + 1 : buffer_.size();
        return true;
      }
      if (eof_) return false;
      buffer_.erase(0, pos_);  // the records before pos_ were parsed: keep only the pending one
      pos_ = 0;
      if (buffer_.size() > kCsvMaxLineBytes)
        throw InputError(fmt::format("{}:{}: line longer than {} MiB: is this a CSV file?", source_, lines_ + 1,
                                     kCsvMaxLineBytes >> 20));
      const std::size_t kept = buffer_.size();
      buffer_.resize(kept + kBlock);
      in_.read(buffer_.data() + kept, static_cast<std::streamsize>(kBlock));
      const auto got = static_cast<std::size_t>(in_.gcount());
      buffer_.resize(kept + got);
      if (in_.bad()) throw InputError(source_ + ": read error");
      if (got == 0 || !in_) eof_ = true;
      if (first_block_) {
        first_block_ = false;
        if (buffer_.compare(0, 3, "\xEF\xBB\xBF") == 0) buffer_.erase(0, 3);  // UTF-8 BOM
      }
    }
  }

 private:
  static constexpr std::size_t kBlock = std::size_t{1} << 20;
  std::ifstream& in_;
  std::string source_;
  std::string buffer_;
  std::size_t pos_ = 0, lines_ = 0;
  bool eof_ = false, first_block_ = true;
};

/// The table of the records `next_record` gives; `size_hint` (bytes of text, 0 if unknown) sizes the
/// value buffer.
/// The offset of the first byte that does not begin a valid UTF-8 sequence, or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || (length == 2 && c < 0xC2) || i + length > s.size()) return i;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    i += length;
  }
  return std::string_view::npos;
}

CsvTable parse_records(const NextRecord& next_record, const std::string& source, std::size_t size_hint) {
  CsvTable table;
  table.source = source;

  Index line_number = 0;       // of the current record's first line (messages name it)
  Index next_line_number = 1;  // a quoted field with line breaks spans several lines
  auto next_line = [&](std::string_view& line) {
    if (!next_record(line)) return false;
    line_number = next_line_number;
    next_line_number += 1 + static_cast<Index>(std::count(line.begin(), line.end(), '\n'));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return true;
  };
  auto where = [&]() { return source + ":" + std::to_string(line_number) + ": "; };

  std::vector<std::string_view> fields;
  std::vector<std::string> unquoted;
  std::string error;

  // Header: the first non-blank line.
  std::string_view line;
  bool have_header = false;
  while (next_line(line)) {
    if (!is_blank(line)) {
      have_header = true;
      break;
    }
  }
  if (!have_header)
    throw InputError(source + ": file is empty (expected a header row of column names and at least one data row)");
  unquoted.reserve(line.size() + 1);  // at most one quoted field per character: views stay valid
  if (!split_csv_fields(line, fields, unquoted, error)) throw InputError(where() + "header: " + error);
  const Index header_line = line_number;
  if (fields.size() > kCsvMaxColumns)
    throw InputError(where() + fmt::format("header: {} columns, more than the {} uqnn reads", fields.size(), kCsvMaxColumns));
  std::unordered_map<std::string_view, std::size_t> seen;
  for (std::size_t j = 0; j < fields.size(); ++j) {
    const std::string_view name = fields[j];
    if (name.empty())
      throw InputError(where() + "header: the " + ordinal(static_cast<Index>(j) + 1) +
                       " column name is empty; every column needs a name");
    // Names go into model.json and NetCDF: a Latin-1 "é" failed only when those were written.
    if (const std::size_t bad = invalid_utf8_at(name); bad != std::string_view::npos)
      throw InputError(where() + fmt::format("header: the {} column name is not UTF-8 (byte 0x{:02X} at its {} byte): save "
                                             "the file as UTF-8",
                                             ordinal(static_cast<Index>(j) + 1), static_cast<unsigned char>(name[bad]),
                                             ordinal(static_cast<Index>(bad) + 1)));
    const auto [it, inserted] = seen.emplace(name, j);
    if (!inserted)
      throw InputError(where() + "header: column name '" + std::string(name) + "' appears twice (" +
                       ordinal(static_cast<Index>(it->second) + 1) + " and " + ordinal(static_cast<Index>(j) + 1) +
                       " fields); column names must be unique");
    table.column_names.emplace_back(name);
  }
  const std::size_t num_columns = table.column_names.size();

  // Data rows, stored row-major while reading, then copied into the column-major Mat.
  std::vector<double> buffer;
  buffer.reserve(num_columns * std::max<std::size_t>(16, size_hint / (8 * num_columns + 1)));
  std::size_t num_rows = 0;
  while (next_line(line)) {
    if (is_blank(line)) continue;
    unquoted.clear();
    unquoted.reserve(line.size() + 1);
    if (!split_csv_fields(line, fields, unquoted, error)) throw InputError(where() + error);
    if (fields.size() != num_columns)
      throw InputError(where() + "expected " + std::to_string(num_columns) + " fields (as in the header on line " +
                       std::to_string(header_line) + "), found " + std::to_string(fields.size()));
    for (std::size_t j = 0; j < num_columns; ++j) {
      double value = 0.0;
      const char* problem = nullptr;
      if (!parse_number(fields[j], value, problem)) {
        const std::string shown = fields[j].empty() ? "empty field" : "'" + std::string(fields[j]) + "'";
        throw InputError(where() + "column '" + table.column_names[j] + "' (" + ordinal(static_cast<Index>(j) + 1) +
                         " field): " + shown + " " + (fields[j].empty() ? "is not a number (missing values are not supported)" : problem));
      }
      buffer.push_back(value);
    }
    ++num_rows;
  }
  if (num_rows == 0)
    throw InputError(source + ": has a header row (" + std::to_string(num_columns) +
                     " columns) but no data rows");

  table.values = Eigen::Map<const RowMajorMatT<double>>(buffer.data(), static_cast<Index>(num_rows),
                                                        static_cast<Index>(num_columns));
  return table;
}

}  // namespace

CsvTable parse_csv(std::string_view text, const std::string& source) {
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  std::size_t pos = 0;
  const NextRecord next = [&](std::string_view& record) {
    if (pos >= text.size()) return false;
    const std::size_t end = csv_record_end(text, pos);
    record = text.substr(pos, end - pos);
    pos = end == text.size() ? text.size() : end + 1;
    return true;
  };
  return parse_records(next, source, text.size());
}

namespace {

/// A gzip file's decompressed text, at most kMaxGzipBytes (a larger one is an input error, not an
/// allocation failure).
std::string read_gzip(const std::filesystem::path& path, const std::string& source) {
  constexpr std::size_t kMaxGzipBytes = std::size_t{1} << 30;
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw InputError(source + ": cannot open file (" + std::strerror(errno) + ")");
  std::string text;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) {
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxGzipBytes) {
      gzclose(file);
      throw InputError(fmt::format("{}: decompresses to more than {} bytes", source, kMaxGzipBytes));
    }
  }
  int code = Z_OK;
  const std::string message = n < 0 ? gzerror(file, &code) : "";
  gzclose(file);
  if (n < 0) throw InputError(source + ": not a valid gzip file (" + message + ")");
  return text;
}

}  // namespace

CsvTable read_csv(const std::filesystem::path& path) {
  const std::string source = path.string();
  // Before opening: a FIFO without a writer blocks open(2) beyond any signal's reach, a device never ends.
  check_user_file(path, source);
  if (path.extension() == ".gz") return parse_csv(read_gzip(path, source), source);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    throw InputError(source + ": cannot open file (" + std::strerror(error) + ")");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(source + ": is a directory, not a CSV file");
  const auto size = std::filesystem::file_size(path, ec);
  StreamedRecords records(in, source);
  return parse_records([&records](std::string_view& record) { return records.next(record); }, source,
                       ec ? 0 : static_cast<std::size_t>(size));
}

std::string format_double(double value) { return fmt::format("{}", value); }

void write_csv(const std::filesystem::path& path, const std::vector<std::string>& column_names, const Mat& values) {
  if (values.cols() != static_cast<Index>(column_names.size()))
    throw std::invalid_argument("write_csv: values has " + std::to_string(values.cols()) + " columns but " +
                                std::to_string(column_names.size()) + " column names were given");
  atomic_write(path, [&](std::ostream& out) {
    fmt::memory_buffer buffer;
    for (std::size_t j = 0; j < column_names.size(); ++j) {
      if (j) buffer.push_back(',');
      const std::string name = quote_csv_field(column_names[j]);
      buffer.append(name.data(), name.data() + name.size());
    }
    buffer.push_back('\n');
    for (Index i = 0; i < values.rows(); ++i) {
      for (Index j = 0; j < values.cols(); ++j) {
        if (j) buffer.push_back(',');
        fmt::format_to(std::back_inserter(buffer), "{}", values(i, j));
      }
      buffer.push_back('\n');
      if (buffer.size() > (1u << 20)) {
        out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        buffer.clear();
      }
    }
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  });
}

}  // namespace uqnn
