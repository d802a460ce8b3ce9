#pragma once
// The golden tables of the diagnostics tests (tests/reference/stan-diagnostics/expected.csv and
// tests/reference/diagnostics/{posterior,arviz}.csv): a header `case,param,<column>...`, then one
// row per case and parameter. Shared by golden_test.cpp and posterior_golden_test.cpp.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace uqnn::diagnostics::testing {

/// One row: case, param and the numeric columns by name ("nan", R's NA, reads as NaN).
struct GoldenRow {
  std::string case_name, param;
  std::map<std::string, double> values;
};

inline std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(' ');
  const auto last = s.find_last_not_of(" \r");
  return first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
}

inline std::vector<std::string> comma_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, ',')) fields.push_back(trimmed(field));
  return fields;
}

/// Reads a golden table; blank lines and lines starting with '#' are skipped. Empty when the file
/// is missing.
inline std::vector<GoldenRow> read_golden(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> header;
  std::vector<GoldenRow> rows;
  while (std::getline(in, line)) {
    if (trimmed(line).empty() || line[0] == '#') continue;
    const std::vector<std::string> fields = comma_fields(line);
    if (header.empty()) {
      header = fields;
      continue;
    }
    GoldenRow row{fields.at(0), fields.at(1), {}};
    for (std::size_t k = 2; k < header.size(); ++k) row.values[header[k]] = std::stod(fields.at(k));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace uqnn::diagnostics::testing
