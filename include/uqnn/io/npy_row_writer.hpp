#pragma once
/// @file NpyRowWriter: a float64 matrix written to a NumPy .npy file one row at a time, for a large
/// model's draws (draws.npy: one row of K parameters per draw).
///
/// Why: a draw of a network of 10 million weights is 80 MB as doubles and about 250 MB as a CSV
/// row, and a CSV header of K names is read back whole; a .npy file holds the doubles as they are
/// and NumPy maps it into memory (numpy.load(mmap_mode="r")). Rows go out as they are given, so the
/// writer holds one row at most. The header, a fixed 128 bytes, is written first with zero rows and
/// rewritten with the final count by finish(); until then the file is `<path>.tmp.<pid>`
/// (io/atomic_file.hpp), and finish() renames it over `path`, so a reader never sees a file whose
/// header and length disagree. A writer destroyed without finish() removes its temporary file.
/// References: NumPy's NEP 1, "A simple file format for NumPy arrays" (format version 1.0).
#include <cstdio>
#include <filesystem>

#include "uqnn/core/types.hpp"

namespace uqnn {

class NpyRowWriter {
 public:
  /// The .npy header: magic, version 1.0, its length and the dict padded with spaces to 128 bytes.
  static constexpr std::size_t kHeaderBytes = 128;

  /// Opens `<path>.tmp.<pid>` for a [rows, columns] float64 matrix (C order, little-endian);
  /// InputError when it cannot be created.
  NpyRowWriter(std::filesystem::path path, Index columns);
  ~NpyRowWriter();
  NpyRowWriter(const NpyRowWriter&) = delete;
  NpyRowWriter& operator=(const NpyRowWriter&) = delete;

  /// Appends one row of `columns` values.
  void append(const double* row);
  /// Rewrites the header with the rows appended, flushes, syncs and renames the file over `path`.
  void finish();
  Index rows() const { return rows_; }
  Index columns() const { return columns_; }

  /// The header of a [rows, columns] float64 C-order matrix, kHeaderBytes long.
  static std::string header(Index rows, Index columns);

 private:
  std::filesystem::path path_, temp_;
  Index columns_ = 0;
  Index rows_ = 0;
  std::FILE* file_ = nullptr;
};

}  // namespace uqnn
