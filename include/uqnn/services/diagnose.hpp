#pragma once
/// @file `uqnn diagnose`'s work: the convergence summary (ArviZ's columns) of draws held in files,
/// a `uqnn fit` run directory, a long CSV from any tool, or CmdStan's output CSV (one file per
/// chain), with Stan's sampler-statistics footer and the warnings. The CLI only parses its flags.
#include <ostream>
#include <string>
#include <vector>

namespace uqnn {

struct DiagnoseRequest {
  std::vector<std::string> sources;  ///< one run directory, or draws CSV files
  int max_depth = 0;                 ///< NUTS' maximum tree depth; 0: the file's, else Stan's 10
  std::string json_out;              ///< also write the table with full precision here (empty: no)
  int decimals = 3;                  ///< decimals in the printed table
  bool all = false;                  ///< a run directory: also the table of every parameter
};

/// Exit status of diagnose() when draws hold NaN or an infinity, or overflow: not a success.
constexpr int kDiagnoseNonFiniteDraws = 3;

/// Writes the summary to `out` and the warnings to `err`; returns the exit status (0, or
/// kDiagnoseNonFiniteDraws). Throws InputError for files it cannot read.
int diagnose(const DiagnoseRequest& request, std::ostream& out, std::ostream& err);

}  // namespace uqnn
