#include "uqnn/diagnostics/draws_table.hpp"

#include <charconv>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string_view>

#include "uqnn/core/error.hpp"
#include "uqnn/io/csv.hpp"

namespace uqnn::diagnostics {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

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

const Mat& DrawsTable::at(const std::string& name) const {
  for (std::size_t q = 0; q < names.size(); ++q) {
    if (names[q] == name) return draws[q];
  }
  throw std::out_of_range("no quantity named '" + name + "' in the draws table");
}

DrawsTable parse_draws_csv(std::istream& in, const std::string& source) {
  std::string text;
  std::size_t line_number = 0;

  // Header: the first non-blank line.
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, text)) {
    ++line_number;
    if (!text.empty() && text.back() == '\r') text.pop_back();  // CRLF files
    if (trim(text).empty()) continue;
    LineFields names;
    names.split(text, where(source, line_number) + "header: ");
    header.assign(names.fields.begin(), names.fields.end());
  }
  if (header.empty()) throw InputError(source + ": empty file, expected a header 'chain, draw, ...'");
  if (header.size() < 2 || header[0] != "chain" || header[1] != "draw") {
    throw InputError(where(source, line_number) + "header must start with 'chain,draw' (found '" +
                     header[0] + (header.size() > 1 ? "," + header[1] : std::string()) + "')");
  }
  if (header.size() < 3) {
    throw InputError(where(source, line_number) + "header has no quantity column after 'chain,draw'");
  }
  for (std::size_t k = 2; k < header.size(); ++k) {
    if (header[k].empty()) throw InputError(where(source, line_number) + column("", k) + " has no name");
    for (std::size_t previous = 2; previous < k; ++previous) {
      if (header[previous] == header[k]) {
        throw InputError(where(source, line_number) + column(header[k], k) + " repeats field " +
                         std::to_string(previous + 1));
      }
    }
  }
  const std::size_t num_quantities = header.size() - 2;

  // Rows, keyed by chain then draw.
  std::map<Index, std::map<Index, Row>> chains;
  LineFields line;
  while (std::getline(in, text)) {
    ++line_number;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (trim(text).empty()) continue;
    const std::string at = where(source, line_number);
    line.split(text, at);
    const auto& fields = line.fields;
    if (fields.size() != header.size()) {
      throw InputError(at + "expected " + std::to_string(header.size()) + " fields as in the header, found " +
                       std::to_string(fields.size()));
    }
    const Index chain = parse_id(fields[0], at + column("chain", 0));
    const Index draw = parse_id(fields[1], at + column("draw", 1));
    Row row{line_number, std::vector<double>(num_quantities)};
    for (std::size_t q = 0; q < num_quantities; ++q) {
      row.values[q] = parse_number(fields[q + 2], at + column(header[q + 2], q + 2));
    }
    const auto [existing, inserted] = chains[chain].emplace(draw, std::move(row));
    if (!inserted) {
      throw InputError(at + "chain " + std::to_string(chain) + ", draw " + std::to_string(draw) +
                       " already given on line " + std::to_string(existing->second.line));
    }
  }
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

DrawsTable read_draws_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the draws file");
  return parse_draws_csv(in, path);
}

}  // namespace uqnn::diagnostics
