#pragma once
/// @file The sampler's columns of a DrawsTable (core/draws_table.hpp). The diagnostics are pure
/// functions on draws: io/draws_csv.hpp reads the files (long CSV, CmdStan's output CSV) into a table.
#include <string>

#include "uqnn/core/draws_table.hpp"

namespace uqnn::diagnostics {

/// True for a sampler column (Stan's `accept_stat__`, `divergent__`, ...): a name ending in "__"
/// other than lp__, which is a quantity to judge.
bool is_sampler_column(const std::string& name);

/// The table without its sampler columns (is_sampler_column): the quantities to summarise.
DrawsTable without_sampler_columns(const DrawsTable& table);

}  // namespace uqnn::diagnostics
