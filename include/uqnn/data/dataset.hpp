#pragma once
/// @file Dataset: inputs and targets in the project's column-per-example layout.
///
/// Built from a CsvTable by naming the input and target columns; by default the target is the last
/// column (the convention of every UCI file in data/uci) and the inputs are all others.
/// Why a plain struct: models, likelihoods and metrics only need the two matrices; the names travel
/// along so that reports and the standardiser can label columns.
#include <filesystem>
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/io/csv.hpp"

namespace uqnn {

struct Dataset {
  Mat inputs;                             ///< [input_dim, n], one column per example
  Mat targets;                            ///< [target_dim, n]
  std::vector<std::string> input_names;   ///< input_dim names
  std::vector<std::string> target_names;  ///< target_dim names
  std::string source;                     ///< where the data came from (file name), for messages

  Index size() const { return inputs.cols(); }
  Index input_dim() const { return inputs.rows(); }
  Index target_dim() const { return targets.rows(); }

  /// The examples at `rows` (0-based, in the given order; repeats allowed).
  /// Throws std::out_of_range naming the first index outside [0, size()).
  Dataset subset(const IndexVec& rows) const;
};

/// Selects columns of `table` by name. `target_columns` empty: the last column. `input_columns`
/// empty: every column that is not a target, in file order.
/// Throws uqnn::InputError naming the file and listing the available columns when a name is unknown,
/// and when a column is listed twice or as both input and target, or no input column remains.
Dataset make_dataset(const CsvTable& table, const std::vector<std::string>& target_columns = {},
                     const std::vector<std::string>& input_columns = {});

/// The file of data set `name` in `dir`: NAME.csv, or NAME.csv.gz when only the compressed copy
/// exists (data/uci ships the large sets gzipped; read_csv reads both).
std::filesystem::path dataset_file(const std::filesystem::path& dir, const std::string& name);

/// read_csv followed by make_dataset.
Dataset load_dataset(const std::filesystem::path& path, const std::vector<std::string>& target_columns = {},
                     const std::vector<std::string>& input_columns = {});

}  // namespace uqnn
