#include "uqnn/data/dataset.hpp"

#include <algorithm>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn {
namespace {

std::string quoted_names(const std::vector<std::string>& names) {
  std::string joined;
  for (std::size_t j = 0; j < names.size(); ++j) joined += (j ? ", " : "") + ("'" + names[j] + "'");
  return joined;
}

/// Column positions of `names` in `table`; `role` is "input" or "target" for messages.
std::vector<Index> resolve(const CsvTable& table, const std::vector<std::string>& names, const std::string& role) {
  std::vector<Index> columns;
  for (std::size_t k = 0; k < names.size(); ++k) {
    const Index j = table.find_column(names[k]);
    if (j < 0)
      throw InputError(table.source + ": no column named '" + names[k] + "' (requested as " + role +
                       "); available columns: " + quoted_names(table.column_names));
    for (std::size_t prev = 0; prev < k; ++prev)
      if (names[prev] == names[k])
        throw InputError(table.source + ": column '" + names[k] + "' is listed twice as " + role);
    columns.push_back(j);
  }
  return columns;
}

Mat gather_columns(const CsvTable& table, const std::vector<Index>& columns) {
  // The table is [rows, columns]; a dataset is [features, examples], hence the transpose.
  Mat out(static_cast<Index>(columns.size()), table.num_rows());
  for (std::size_t k = 0; k < columns.size(); ++k) out.row(static_cast<Index>(k)) = table.values.col(columns[k]).transpose();
  return out;
}

}  // namespace

Dataset Dataset::subset(const IndexVec& rows) const {
  Dataset out;
  out.inputs.resize(input_dim(), static_cast<Index>(rows.size()));
  out.targets.resize(target_dim(), static_cast<Index>(rows.size()));
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Index i = rows[k];
    if (i < 0 || i >= size())
      throw std::out_of_range("Dataset::subset: row index " + std::to_string(i) + " (position " + std::to_string(k) +
                              ") is outside [0, " + std::to_string(size() - 1) + "]");
    out.inputs.col(static_cast<Index>(k)) = inputs.col(i);
    out.targets.col(static_cast<Index>(k)) = targets.col(i);
  }
  out.input_names = input_names;
  out.target_names = target_names;
  out.source = source;
  return out;
}

Dataset make_dataset(const CsvTable& table, const std::vector<std::string>& target_columns,
                     const std::vector<std::string>& input_columns) {
  if (table.num_columns() < 2)
    throw InputError(table.source + ": needs at least two columns (inputs and a target), found " +
                     std::to_string(table.num_columns()) + ": " + quoted_names(table.column_names));
  const std::vector<std::string> target_names =
      target_columns.empty() ? std::vector<std::string>{table.column_names.back()} : target_columns;
  const std::vector<Index> targets = resolve(table, target_names, "target");

  std::vector<std::string> input_names = input_columns;
  if (input_names.empty()) {
    for (Index j = 0; j < table.num_columns(); ++j)
      if (std::find(targets.begin(), targets.end(), j) == targets.end()) input_names.push_back(table.column_names[j]);
    if (input_names.empty())
      throw InputError(table.source + ": every column is a target, so no input column is left; available columns: " +
                       quoted_names(table.column_names));
  }
  const std::vector<Index> inputs = resolve(table, input_names, "input");
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (std::find(targets.begin(), targets.end(), inputs[k]) != targets.end())
      throw InputError(table.source + ": column '" + input_names[k] + "' is both an input and a target");

  Dataset data;
  data.inputs = gather_columns(table, inputs);
  data.targets = gather_columns(table, targets);
  data.input_names = std::move(input_names);
  data.target_names = target_names;
  data.source = table.source;
  return data;
}

std::filesystem::path dataset_file(const std::filesystem::path& dir, const std::string& name) {
  const std::filesystem::path plain = dir / (name + ".csv"), gzipped = dir / (name + ".csv.gz");
  return !std::filesystem::exists(plain) && std::filesystem::exists(gzipped) ? gzipped : plain;
}

Dataset load_dataset(const std::filesystem::path& path, const std::vector<std::string>& target_columns,
                     const std::vector<std::string>& input_columns) {
  return make_dataset(read_csv(path), target_columns, input_columns);
}

}  // namespace uqnn
