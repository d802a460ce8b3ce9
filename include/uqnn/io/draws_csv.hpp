#pragma once
/// @file Readers of draws files into a DrawsTable: the long CSV layout `chain, draw, <one column per
/// quantity>` (0-based chain and draw, one row per draw) and CmdStan's output CSV (one file per
/// chain: `#` comment lines, lp__ and the sampler's `__` columns, then the parameters). The
/// diagnostics take the parsed table; only this reader sees files.
#include <istream>
#include <string>
#include <vector>

#include "uqnn/core/draws_table.hpp"

namespace uqnn {

/// Parses the long CSV layout: a header whose first two fields are `chain` and `draw` followed by
/// at least one quantity name, then one row per draw. Lines starting with '#' are comments. Fields are separated by commas; spaces
/// around a field and blank lines are ignored. chain ids must be 0..M-1 and each chain's draw ids
/// 0..S-1, every (chain, draw) pair exactly once, in any row order; all chains need the same S.
/// Throws uqnn::InputError naming `source`, the line and the column for a missing chain/draw header,
/// a ragged row, a non-numeric or non-integer field, a duplicate row, a gap in the chain or draw
/// ids, or unequal chain lengths.
/// References: Stan CSV / ArviZ `from_dataframe` long layout (one row per chain and draw).
DrawsTable parse_draws_csv(std::istream& in, const std::string& source = "<input>");

/// Parses one chain of CmdStan's output CSV: comment lines (`# key = value`, of which max_depth,
/// save_warmup, num_warmup and thin are read: warmup draws saved with save_warmup = 1 are
/// dropped), a header containing lp__, one row per draw. Errors as parse_draws_csv.
DrawsTable parse_cmdstan_csv(std::istream& in, const std::string& source = "<input>");

/// Reads a file with parse_draws_csv, or with parse_cmdstan_csv when its header has no
/// `chain,draw` but has lp__; throws uqnn::InputError when it cannot be opened.
DrawsTable read_draws_csv(const std::string& path);

/// Several files: one long-layout file, or CmdStan CSV files with one chain each (chain c from the
/// c-th file), which must have the same columns and the same number of draws.
DrawsTable read_draws_csv(const std::vector<std::string>& paths);

}  // namespace uqnn
