#pragma once
/// @file DrawsTable: draws of named scalar quantities from the same chains, in the layout every
/// diagnostic takes. A plain value type in core so that the readers of draws files (io/draws_csv.hpp)
/// and the diagnostics (pure functions on draws) share it without either seeing the other.
#include <stdexcept>
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn {

/// `draws[q]` holds quantity `names[q]` as a matrix `[draws, chains]` (column j = chain j, rows in
/// draw order).
struct DrawsTable {
  std::vector<std::string> names;  ///< quantity names, in the file's column order
  std::vector<Mat> draws;          ///< one [draws, chains] matrix per name
  /// NUTS' maximum tree depth when the file says it (CmdStan's `max_depth = N` comment); 0 otherwise.
  int max_depth = 0;

  /// The draws of quantity `name`; throws std::out_of_range naming it when absent.
  const Mat& at(const std::string& name) const {
    for (std::size_t q = 0; q < names.size(); ++q)
      if (names[q] == name) return draws[q];
    throw std::out_of_range("no quantity named '" + name + "' in the draws table");
  }
  Index num_chains() const { return draws.empty() ? 0 : draws.front().cols(); }
  Index num_draws() const { return draws.empty() ? 0 : draws.front().rows(); }
};

}  // namespace uqnn
