#include "uqnn/io/draws_csv.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/io/user_file.hpp"

// The parser lives in its own namespace: its helpers (where, column, Row, ...) have common names and
// the unity build compiles several files of the library in one translation unit.
namespace uqnn::draws_csv_detail {
namespace {

/// The fields of one line by the one CSV tokenizer (io/csv.hpp); InputError "<at>..." when malformed.
struct LineFields {
  std::vector<std::string_view> fields;
  std::vector<std::string> unquoted;
  void split(std::string_view line, const std::string& at) {
    unquoted.clear();
    unquoted.reserve(line.size() + 1);
    std::string error;
    if (!split_csv_fields(line, fields, unquoted, error)) throw InputError(at + error);
  }
};

/// "<source>:<line>: " prefix for messages, the line 1-based.
std::string where(const std::string& source, std::size_t line) {
  return source + ":" + std::to_string(line) + ": ";
}

/// "column 'name' (field k)" with k 1-based.
std::string column(std::string_view name, std::size_t index) {
  return "column '" + std::string(name) + "' (field " + std::to_string(index + 1) + ")";
}

double parse_number(std::string_view field, const std::string& context) {
  double value = 0.0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || error != std::errc() || end != field.data() + field.size()) {
    throw InputError(context + ": '" + std::string(field) + "' is not a number");
  }
  return value;
}

Index parse_id(std::string_view field, const std::string& context) {
  long long value = -1;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || error != std::errc() || end != field.data() + field.size() || value < 0) {
    throw InputError(context + ": '" + std::string(field) + "' is not a non-negative integer");
  }
  return static_cast<Index>(value);
}

struct Row {
  std::size_t line = 0;
  std::vector<double> values;
};

}  // namespace

namespace {

/// A CSV file's header and `# key = value` comment lines (CmdStan writes its settings so); each
/// data line goes to `on_row(at, fields)`. Blank lines are skipped; CRLF is accepted.
class CsvScanner {
 public:
  CsvScanner(std::istream& in, std::string source) : in_(in), source_(std::move(source)) {}

  /// The first line that is neither blank nor a comment, split into names; InputError when there is none.
  std::vector<std::string> header(const std::string& expected) {
    std::string text;
    while (next_line(text)) {
      LineFields names;
      names.split(text, where(source_, line_) + "header: ");
      header_line_ = line_;
      return {names.fields.begin(), names.fields.end()};
    }
    throw InputError(source_ + ": empty file, expected a header " + expected);
  }

  template <typename OnRow>
  void rows(std::size_t num_fields, OnRow on_row) {
    std::string text;
    LineFields line;
    while (next_line(text)) {
      const std::string at = where(source_, line_);
      line.split(text, at);
      if (line.fields.size() != num_fields) {
        throw InputError(at + "expected " + std::to_string(num_fields) + " fields as in the header, found " +
                         std::to_string(line.fields.size()));
      }
      on_row(at, line.fields);
    }
  }

  /// "<source>:<header line>: "
  std::string header_at() const { return where(source_, header_line_); }
  std::size_t line() const { return line_; }
  /// The value of a `# key = value` comment seen so far ("" when absent); CmdStan appends
  /// " (Default)" to defaults, which is dropped.
  std::string comment(const std::string& key) const {
    const auto it = comments_.find(key);
    return it == comments_.end() ? std::string() : it->second;
  }

 private:
  /// std::getline, but an InputError at a line longer than kUserFileMaxLineBytes: a binary file, or
  /// /dev/zero, would otherwise grow `text` without bound.
  bool read_line(std::string& text) {
    text.clear();
    std::streambuf* buffer = in_.rdbuf();
    bool any = false;
    for (int c = buffer->sbumpc(); c != std::char_traits<char>::eof(); c = buffer->sbumpc()) {
      any = true;
      if (c == '\n') return true;
      if (text.size() >= kUserFileMaxLineBytes)
        throw InputError(fmt::format("{}line longer than {} MiB: is this a text file?", where(source_, line_ + 1),
                                     kUserFileMaxLineBytes >> 20));
      text.push_back(static_cast<char>(c));
    }
    in_.setstate(std::ios::eofbit);
    return any;
  }

  bool next_line(std::string& text) {
    while (read_line(text)) {
      ++line_;
      // A quoted field may hold line breaks (RFC 4180): the record goes on while its quote is open.
      bool quote_open = false;
      std::string more;
      while (csv_record_end(text, 0, &quote_open) == text.size() && quote_open && read_line(more)) {
        ++line_;
        text += "\n" + more;
      }
      if (!text.empty() && text.back() == '\r') text.pop_back();
      const std::string_view t = trim_field(text);
      if (t.empty()) continue;
      if (t.front() == '#') {
        remember_comment(t.substr(1));
        continue;
      }
      return true;
    }
    return false;
  }
  void remember_comment(std::string_view c) {
    const auto eq = c.find('=');
    if (eq == std::string_view::npos) return;
    std::string_view value = trim_field(c.substr(eq + 1));
    if (const auto d = value.find(" (Default)"); d != std::string_view::npos) value = value.substr(0, d);
    comments_.emplace(std::string(trim_field(c.substr(0, eq))), std::string(value));  // the first occurrence wins
  }

  std::istream& in_;
  std::string source_;
  std::size_t line_ = 0, header_line_ = 0;
  std::map<std::string, std::string> comments_;
};

/// InputError for an empty or repeated quantity name among header[first..].
void check_names(const std::vector<std::string>& header, std::size_t first, const std::string& at) {
  for (std::size_t k = first; k < header.size(); ++k) {
    if (header[k].empty()) throw InputError(at + column("", k) + " has no name");
    for (std::size_t previous = first; previous < k; ++previous) {
      if (header[previous] == header[k]) {
        throw InputError(at + column(header[k], k) + " repeats field " + std::to_string(previous + 1));
      }
    }
  }
}

bool is_long_header(const std::vector<std::string>& header) {
  return header.size() >= 2 && header[0] == "chain" && header[1] == "draw";
}

bool is_cmdstan_header(const std::vector<std::string>& header) {
  return std::find(header.begin(), header.end(), "lp__") != header.end();
}

DrawsTable parse_long(CsvScanner& scan, const std::vector<std::string>& header, const std::string& source);
DrawsTable parse_cmdstan(CsvScanner& scan, const std::vector<std::string>& header, const std::string& source);

}  // namespace

DrawsTable parse_draws_csv(std::istream& in, const std::string& source) {
  CsvScanner scan(in, source);
  const auto header = scan.header("'chain, draw, ...'");
  return parse_long(scan, header, source);
}

DrawsTable parse_cmdstan_csv(std::istream& in, const std::string& source) {
  CsvScanner scan(in, source);
  const auto header = scan.header("with lp__ (CmdStan's output CSV)");
  return parse_cmdstan(scan, header, source);
}

namespace {

DrawsTable parse_long(CsvScanner& scan, const std::vector<std::string>& header, const std::string& source) {
  const std::string at_header = scan.header_at();
  if (!is_long_header(header)) {
    throw InputError(at_header + "header must start with 'chain,draw' (found '" + header[0] +
                     (header.size() > 1 ? "," + header[1] : std::string()) + "'), or be CmdStan's with lp__");
  }
  if (header.size() < 3) throw InputError(at_header + "header has no quantity column after 'chain,draw'");
  check_names(header, 2, at_header);
  const std::size_t num_quantities = header.size() - 2;

  // Rows, keyed by chain then draw.
  std::map<Index, std::map<Index, Row>> chains;
  scan.rows(header.size(), [&](const std::string& at, const std::vector<std::string_view>& fields) {
    const Index chain = parse_id(fields[0], at + column("chain", 0));
    const Index draw = parse_id(fields[1], at + column("draw", 1));
    Row row{scan.line(), std::vector<double>(num_quantities)};
    for (std::size_t q = 0; q < num_quantities; ++q) {
      row.values[q] = parse_number(fields[q + 2], at + column(header[q + 2], q + 2));
    }
    const auto [existing, inserted] = chains[chain].emplace(draw, std::move(row));
    if (!inserted) {
      throw InputError(at + "chain " + std::to_string(chain) + ", draw " + std::to_string(draw) +
                       " already given on line " + std::to_string(existing->second.line));
    }
  });
  if (chains.empty()) throw InputError(source + ": no draws after the header");

  // Chains must be 0..M-1 with draws 0..S-1 each, S equal for all chains.
  const Index num_chains = static_cast<Index>(chains.size());
  const Index num_draws = static_cast<Index>(chains.begin()->second.size());
  Index expected_chain = 0;
  for (const auto& [chain, draws] : chains) {
    if (chain != expected_chain) {
      throw InputError(source + ": chain ids must be 0.." + std::to_string(num_chains - 1) + " without gaps; chain " +
                       std::to_string(expected_chain) + " is missing");
    }
    if (static_cast<Index>(draws.size()) != num_draws) {
      throw InputError(source + ": unequal chain lengths: chain 0 has " + std::to_string(num_draws) +
                       " draws, chain " + std::to_string(chain) + " has " + std::to_string(draws.size()));
    }
    const Index last_draw = draws.rbegin()->first;
    if (last_draw != num_draws - 1) {
      throw InputError(where(source, draws.rbegin()->second.line) + "chain " + std::to_string(chain) + " has " +
                       std::to_string(num_draws) + " draws but draw ids up to " + std::to_string(last_draw) +
                       " (expected 0.." + std::to_string(num_draws - 1) + ")");
    }
    ++expected_chain;
  }

  DrawsTable table;
  table.names.assign(header.begin() + 2, header.end());
  table.draws.assign(num_quantities, Mat(num_draws, num_chains));
  for (const auto& [chain, draws] : chains) {
    for (const auto& [draw, row] : draws) {
      for (std::size_t q = 0; q < num_quantities; ++q) table.draws[q](draw, chain) = row.values[q];
    }
  }
  return table;
}

DrawsTable parse_cmdstan(CsvScanner& scan, const std::vector<std::string>& header, const std::string& source) {
  const std::string at_header = scan.header_at();
  if (!is_cmdstan_header(header)) throw InputError(at_header + "header has no lp__: not CmdStan's output CSV");
  check_names(header, 0, at_header);
  std::vector<std::vector<double>> rows;
  scan.rows(header.size(), [&](const std::string& at, const std::vector<std::string_view>& fields) {
    std::vector<double>& row = rows.emplace_back(header.size());
    for (std::size_t q = 0; q < header.size(); ++q) row[q] = parse_number(fields[q], at + column(header[q], q));
  });
  // Settings from the comments (CmdStan writes them before the header).
  const auto integer = [&](const std::string& key, long fallback) {
    const std::string v = scan.comment(key);
    long value = fallback;
    if (!v.empty() && std::from_chars(v.data(), v.data() + v.size(), value).ec != std::errc()) value = fallback;
    return value;
  };
  std::size_t skip = 0;
  if (integer("save_warmup", 0) == 1) {
    skip = static_cast<std::size_t>(std::max(0L, integer("num_warmup", 0)) / std::max(1L, integer("thin", 1)));
    skip = std::min(skip, rows.size());
  }
  if (rows.size() == skip) throw InputError(source + ": no draws after the header" + (skip ? " and the warmup" : ""));
  DrawsTable table;
  table.names = header;
  table.max_depth = static_cast<int>(integer("max_depth", 0));
  const Index num_draws = static_cast<Index>(rows.size() - skip);
  table.draws.assign(header.size(), Mat(num_draws, 1));
  for (Index d = 0; d < num_draws; ++d)
    for (std::size_t q = 0; q < header.size(); ++q) table.draws[q](d, 0) = rows[skip + static_cast<std::size_t>(d)][q];
  return table;
}

}  // namespace

DrawsTable read_draws_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the draws file");
  CsvScanner scan(in, path);
  const auto header = scan.header("'chain, draw, ...' or CmdStan's with lp__");
  return !is_long_header(header) && is_cmdstan_header(header) ? parse_cmdstan(scan, header, path)
                                                              : parse_long(scan, header, path);
}

DrawsTable read_draws_csv(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("no draws file given");
  DrawsTable table = read_draws_csv(paths.front());
  if (paths.size() == 1) return table;
  if (table.num_chains() != 1 || !is_cmdstan_header(table.names))
    throw InputError(paths.front() + ": several files must each be one chain of CmdStan's output CSV (a file with "
                     "columns chain,draw holds every chain already)");
  for (std::size_t f = 1; f < paths.size(); ++f) {
    const DrawsTable chain = read_draws_csv(paths[f]);
    if (chain.names != table.names || chain.num_chains() != 1)
      throw InputError(paths[f] + ": its columns differ from those of " + paths.front());
    if (chain.num_draws() != table.num_draws())
      throw InputError(paths[f] + ": " + std::to_string(chain.num_draws()) + " draws, but " + paths.front() + " has " +
                       std::to_string(table.num_draws()) + ": chains must be equally long");
    for (std::size_t q = 0; q < table.names.size(); ++q) {
      Mat joined(table.num_draws(), table.draws[q].cols() + 1);
      joined << table.draws[q], chain.draws[q];
      table.draws[q] = std::move(joined);
    }
  }
  return table;
}

}  // namespace uqnn::draws_csv_detail

namespace uqnn {

DrawsTable parse_draws_csv(std::istream& in, const std::string& source) { return draws_csv_detail::parse_draws_csv(in, source); }
DrawsTable parse_cmdstan_csv(std::istream& in, const std::string& source) { return draws_csv_detail::parse_cmdstan_csv(in, source); }
DrawsTable read_draws_csv(const std::string& path) { return draws_csv_detail::read_draws_csv(path); }
DrawsTable read_draws_csv(const std::vector<std::string>& paths) { return draws_csv_detail::read_draws_csv(paths); }

}  // namespace uqnn
