#pragma once
/// @file Split: row indices of the training, validation and test sets.
///
/// Two sources: a seeded random split by fractions (`random_split`), or the published split files
/// of the UCI benchmarks (`read_split`, one 0-based row index per line, e.g.
/// data/uci/splits/yacht/train_0.txt). Index lists are sorted ascending in random splits,
/// and kept in file order when read, so subsets preserve the data's row order.
/// References: Hernández-Lobato & Adams (2015), ICML (the UCI splits: first round(0.9 n) of a random
/// permutation for training); Gal & Ghahramani (2016), ICML.
#include <cstdint>
#include <filesystem>

#include "uqnn/core/types.hpp"

namespace uqnn {

/// Row indices (0-based, into the data rows) of each part; `validation` may be empty.
struct Split {
  IndexVec train;
  IndexVec validation;
  IndexVec test;
  IndexVec calibration;  ///< held out for conformal calibration (empty unless asked for)
};

/// Settings of random_split.
struct SplitParams {
  double train_fraction = 0.8;       ///< in (0, 1]
  double validation_fraction = 0.1;  ///< in [0, 1]; 0 means no validation set
  double test_fraction = 0.1;        ///< in [0, 1]; 0 means no test set
  std::uint64_t seed = 0;            ///< same seed and row count give the same split
  /// Throws std::invalid_argument naming the parameter and its valid range; also when the three
  /// fractions sum to more than 1.
  void validate() const;
};

/// Random split of rows 0..num_rows-1: a permutation from Rng(seed, kSplitStream) is cut at
/// round(train_fraction n), round((train + validation) n) and round((train + validation + test) n);
/// when the fractions sum to 1 every row is used. Each part is sorted ascending.
/// Throws std::invalid_argument (after validate()) when a part with a non-zero fraction gets no rows.
Split random_split(Index num_rows, const SplitParams& params);

/// Rng stream reserved for splitting, so a split never shares random numbers with chain 0.
inline constexpr std::uint64_t kSplitStream = 0x73706c6974;  // "split"

/// The "gap" split of Foong et al. (2019, "In-between" uncertainty): the rows sorted by input
/// `dimension` (ties by row), the middle third (positions round(n/3) to round(2n/3) - 1) held out
/// for testing and the outer two thirds for training, so that the test rows lie between the
/// training clusters. One split per input dimension. Throws InputError for a dimension outside
/// [0, inputs.rows() - 1] or fewer than 3 rows.
Split gap_split(const Mat& inputs, Index dimension);

/// Reads one 0-based row index per line (spaces, CRLF and blank lines allowed) for data with
/// `num_rows` rows. Throws uqnn::InputError naming the file and line for a missing or empty file, a
/// line that is not a whole number, an index outside [0, num_rows - 1], or an index listed twice.
IndexVec read_index_file(const std::filesystem::path& path, Index num_rows);

/// Writes one index per line, atomically (see atomic_file.hpp).
void write_index_file(const std::filesystem::path& path, const IndexVec& rows);

/// Reads a train and a test file (and optionally a validation file: pass an empty path to skip)
/// and checks that no row is in two parts (InputError naming the row and both files).
Split read_split(const std::filesystem::path& train_path, const std::filesystem::path& test_path, Index num_rows,
                 const std::filesystem::path& validation_path = {});

}  // namespace uqnn
