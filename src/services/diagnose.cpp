#include "uqnn/services/diagnose.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/draws_table.hpp"
#include "uqnn/diagnostics/summary.hpp"
#include "uqnn/diagnostics/warnings.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/draws_csv.hpp"
#include "uqnn/io/user_file.hpp"
#include "uqnn/plot/dei_figures.hpp"

namespace uqnn {

int diagnose(const DiagnoseRequest& request, std::ostream& out, std::ostream& err) {
  std::vector<std::string> paths = request.sources;
  if (paths.empty()) throw InputError("uqnn diagnose: give a run directory or draws CSV files");
  std::filesystem::path path = paths.front();
  bool run_directory = false;
  if (std::filesystem::is_directory(path)) {
    if (paths.size() > 1) throw InputError("uqnn diagnose: give one run directory, or CSV files only");
    // A run directory: its function-space summary (written by `uqnn fit`, with the run's
    // warnings), then optionally every weight.
    // dei-nuts runs: chain-wise LPPD traces and per-layer views as figures (Sommer et al. 2024).
    if (std::filesystem::exists(path / "dei_chains.json")) out << diagnose_dei_run(path, "png") << '\n';
    const auto summary = path / "diagnostics.txt";
    if (std::filesystem::exists(summary)) {
      std::ifstream in(summary);
      out << in.rdbuf();
      if (!request.all && request.json_out.empty()) return 0;
    }
    if (!std::filesystem::exists(path / "draws.csv") && std::filesystem::exists(path / "draws.npy"))
      throw InputError(fmt::format("uqnn diagnose {}: the run's draws are in draws.npy (a large model); the per-weight "
                                   "summary reads draws.csv (fit with --draws-format csv)",
                                   path.string()));
    path /= "draws.csv";
    paths = {path.string()};
    run_directory = true;
  }
  // Each file a regular one whose lines are bounded, checked in bounded memory before the reader
  // (which holds a line whole) sees it: /dev/zero grew without limit, a FIFO blocked for ever.
  for (const auto& p : paths) check_text_lines(p, p);
  // lp__ and the parameters are summarised; the sampler's columns (divergent__, treedepth__,
  // energy__) feed the warnings.
  const auto with_sampler = read_draws_csv(paths);
  const auto table = diagnostics::without_sampler_columns(with_sampler);
  const auto rows = diagnostics::summarize(table);
  const int depth = request.max_depth > 0 ? request.max_depth : with_sampler.max_depth > 0 ? with_sampler.max_depth : 10;
  const auto sampler = diagnostics::sampler_stats_summary(with_sampler, depth);
  out << fmt::format("{}{}: {} chains x {} draws, {} quantities\n", path.string(),
                     paths.size() > 1 ? fmt::format(" and {} more file(s)", paths.size() - 1) : std::string(),
                     table.num_chains(), table.num_draws(), table.names.size())
      << diagnostics::format_summary_table(rows, request.decimals);
  if (sampler.num_draws > 0) {
    std::string footer = fmt::format("divergences: {}; at max tree depth {}: {} draws", sampler.divergences, depth,
                                     sampler.draws_at_max_depth);
    if (!sampler.e_bfmi.empty()) {
      footer += "; E-BFMI per chain:";
      for (double b : sampler.e_bfmi) footer += fmt::format(" {:.2f}", b);
    }
    out << footer << '\n';
  }
  if (!request.json_out.empty()) atomic_write_text(request.json_out, diagnostics::to_json(rows).dump(2) + "\n");
  // Warnings last, on the error stream. A run directory's weights are not judged: weight-space
  // R-hat misleads for BNNs (its diagnostics.txt above judged lp__ and the function-space rows).
  auto warnings = diagnostics::draws_warnings(table);
  if (!run_directory)
    for (auto& w : diagnostics::convergence_warnings(rows, std::max<Index>(1, table.num_chains()), sampler)) warnings.push_back(std::move(w));
  err << diagnostics::format_warnings(warnings);
  // Non-finite (or overflowing) draws make every statistic of that quantity meaningless: not a
  // quiet success.
  const bool meaningless = std::any_of(warnings.begin(), warnings.end(), [](const auto& w) {
    return w.code == "non_finite_draws" || w.code == "overflow";
  });
  return meaningless ? kDiagnoseNonFiniteDraws : 0;
}

}  // namespace uqnn
