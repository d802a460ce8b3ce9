#pragma once
/// @file Draws of named scalar quantities, and a reader for the long CSV layout
/// `chain, draw, <one column per quantity>` (0-based chain and draw, one row per draw).
#include <istream>
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn::diagnostics {

/// Draws of several named scalar quantities from the same chains. `draws[q]` holds quantity
/// `names[q]` as a matrix `[draws, chains]` (column j = chain j, rows in draw order), the layout
/// every diagnostic takes.
struct DrawsTable {
  std::vector<std::string> names;  ///< quantity names, in the file's column order
  std::vector<Mat> draws;          ///< one [draws, chains] matrix per name

  /// The draws of quantity `name`; throws std::out_of_range naming it when absent.
  const Mat& at(const std::string& name) const;
  Index num_chains() const { return draws.empty() ? 0 : draws.front().cols(); }
  Index num_draws() const { return draws.empty() ? 0 : draws.front().rows(); }
};

/// Parses the long CSV layout: a header whose first two fields are `chain` and `draw` followed by
/// at least one quantity name, then one row per draw. Fields are separated by commas; spaces
/// around a field and blank lines are ignored. chain ids must be 0..M-1 and each chain's draw ids
/// 0..S-1, every (chain, draw) pair exactly once, in any row order; all chains need the same S.
/// Throws uqnn::InputError naming `source`, the line and the column for a missing chain/draw header,
/// a ragged row, a non-numeric or non-integer field, a duplicate row, a gap in the chain or draw
/// ids, or unequal chain lengths.
/// References: Stan CSV / ArviZ `from_dataframe` long layout (one row per chain and draw).
DrawsTable parse_draws_csv(std::istream& in, const std::string& source = "<input>");

/// Reads a file with parse_draws_csv; throws uqnn::InputError when it cannot be opened.
DrawsTable read_draws_csv(const std::string& path);

}  // namespace uqnn::diagnostics
