#include "uqnn/data/split.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "uqnn/core/error.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"

namespace uqnn {
namespace {

std::string fraction_text(double x) { return fmt::format("{}", x); }

}  // namespace

void SplitParams::validate() const {
  require(std::isfinite(train_fraction) && train_fraction > 0.0 && train_fraction <= 1.0, "train_fraction",
          "in (0, 1], got " + fraction_text(train_fraction));
  require(std::isfinite(validation_fraction) && validation_fraction >= 0.0 && validation_fraction <= 1.0,
          "validation_fraction", "in [0, 1], got " + fraction_text(validation_fraction));
  require(std::isfinite(test_fraction) && test_fraction >= 0.0 && test_fraction <= 1.0, "test_fraction",
          "in [0, 1], got " + fraction_text(test_fraction));
  const double sum = train_fraction + validation_fraction + test_fraction;
  require(sum <= 1.0 + 1e-12, "train_fraction + validation_fraction + test_fraction",
          "at most 1, got " + fraction_text(train_fraction) + " + " + fraction_text(validation_fraction) + " + " +
              fraction_text(test_fraction) + " = " + fraction_text(sum));
}

Split random_split(Index num_rows, const SplitParams& params) {
  params.validate();
  if (num_rows <= 0) throw std::invalid_argument("random_split: the data has no rows");
  const double n = static_cast<double>(num_rows);
  auto cut = [&](double fraction) { return std::min<Index>(num_rows, static_cast<Index>(std::llround(fraction * n))); };
  const Index end_train = cut(params.train_fraction);
  const Index end_validation = cut(params.train_fraction + params.validation_fraction);
  // Fractions summing to 1 up to rounding use every row.
  const double total = params.train_fraction + params.validation_fraction + params.test_fraction;
  const Index end_test = std::abs(total - 1.0) <= 1e-12 ? num_rows : cut(total);

  auto check_nonempty = [&](const char* name, double fraction, Index count) {
    if (fraction > 0.0 && count == 0)
      throw std::invalid_argument(std::string(name) + " = " + fraction_text(fraction) + " of " +
                                  std::to_string(num_rows) + " rows gives no rows; use a larger fraction or 0");
  };
  check_nonempty("train_fraction", params.train_fraction, end_train);
  check_nonempty("validation_fraction", params.validation_fraction, end_validation - end_train);
  check_nonempty("test_fraction", params.test_fraction, end_test - end_validation);

  Rng rng(params.seed, kSplitStream);
  const IndexVec permutation = rng.permutation(num_rows);
  Split split;
  split.train.assign(permutation.begin(), permutation.begin() + end_train);
  split.validation.assign(permutation.begin() + end_train, permutation.begin() + end_validation);
  split.test.assign(permutation.begin() + end_validation, permutation.begin() + end_test);
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.validation.begin(), split.validation.end());
  std::sort(split.test.begin(), split.test.end());
  return split;
}

Split gap_split(const Mat& inputs, Index dimension) {
  const Index n = inputs.cols();
  if (dimension < 0 || dimension >= inputs.rows())
    throw InputError("--split-index " + std::to_string(dimension) + " is not an input dimension: the gap split holds out the "
                     "middle third of one input, in [0, " + std::to_string(inputs.rows() - 1) + "]");
  if (n < 3) throw InputError("--split gap needs at least 3 rows, the data has " + std::to_string(n));
  IndexVec order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return inputs(dimension, a) < inputs(dimension, b); });
  const auto first = static_cast<std::size_t>(std::llround(static_cast<double>(n) / 3));
  const auto last = static_cast<std::size_t>(std::llround(2 * static_cast<double>(n) / 3));
  Split split;
  for (std::size_t k = 0; k < order.size(); ++k) (k >= first && k < last ? split.test : split.train).push_back(order[k]);
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.test.begin(), split.test.end());
  return split;
}

IndexVec read_index_file(const std::filesystem::path& path, Index num_rows) {
  const std::string source = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    throw InputError(source + ": cannot open split file (" + std::strerror(error) + ")");
  }
  const std::string valid = num_rows > 0 ? "[0, " + std::to_string(num_rows - 1) + "]" : "(none: the data has no rows)";
  IndexVec rows;
  std::unordered_map<Index, Index> first_line;  // row index -> line where it first appeared
  std::string text;
  Index line_number = 0;
  while (std::getline(in, text)) {
    ++line_number;
    const std::string_view token = trim_field(text);
    if (token.empty()) continue;
    long long value = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    const std::string where = source + ":" + std::to_string(line_number) + ": ";
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == token.data() + token.size() &&
                                                 (value < 0 || value >= num_rows)))
      throw InputError(where + "row index " + std::string(token) + " is out of range: the data has " +
                       std::to_string(num_rows) + " rows, so valid indices are " + valid);
    if (ec != std::errc() || end != token.data() + token.size())
      throw InputError(where + "'" + std::string(token) + "' is not a row index (expected one whole number per line in " +
                       valid + ")");
    const auto [it, inserted] = first_line.emplace(static_cast<Index>(value), line_number);
    if (!inserted)
      throw InputError(where + "row index " + std::to_string(value) + " appears twice (lines " +
                       std::to_string(it->second) + " and " + std::to_string(line_number) + ")");
    rows.push_back(static_cast<Index>(value));
  }
  if (in.bad()) throw InputError(source + ": read error");
  if (rows.empty()) throw InputError(source + ": split file contains no row indices");
  return rows;
}

void write_index_file(const std::filesystem::path& path, const IndexVec& rows) {
  atomic_write(path, [&](std::ostream& out) {
    fmt::memory_buffer buffer;
    for (const Index i : rows) fmt::format_to(std::back_inserter(buffer), "{}\n", i);
    out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  });
}

Split read_split(const std::filesystem::path& train_path, const std::filesystem::path& test_path, Index num_rows,
                 const std::filesystem::path& validation_path) {
  Split split;
  split.train = read_index_file(train_path, num_rows);
  split.test = read_index_file(test_path, num_rows);
  if (!validation_path.empty()) split.validation = read_index_file(validation_path, num_rows);

  std::unordered_map<Index, const std::filesystem::path*> owner;
  auto claim = [&](const IndexVec& rows, const std::filesystem::path& path) {
    for (const Index i : rows) {
      const auto [it, inserted] = owner.emplace(i, &path);
      if (!inserted)
        throw InputError("row index " + std::to_string(i) + " is in both '" + it->second->string() + "' and '" +
                         path.string() + "'; the parts of a split must not overlap");
    }
  };
  claim(split.train, train_path);
  if (!validation_path.empty()) claim(split.validation, validation_path);
  claim(split.test, test_path);
  return split;
}

}  // namespace uqnn
