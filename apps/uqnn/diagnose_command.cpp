#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/draws_table.hpp"
#include "uqnn/diagnostics/summary.hpp"
#include "uqnn/diagnostics/warnings.hpp"
#include "uqnn/plot/dei_figures.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn::cli {
namespace {

/// Exit code of `uqnn diagnose` when draws hold NaN or an infinity, or overflow (issue 17: 3, not
/// a success).
constexpr int kExitNonFiniteDraws = 3;

}  // namespace

Command add_diagnose(CLI::App& app) {
  auto* c = app.add_subcommand("diagnose",
                               "convergence summary (ArviZ columns) of MCMC draws: a `uqnn fit` directory or a long CSV "
                               "(chain, draw, one column per quantity) from any tool");
  auto source = std::make_shared<std::string>();
  auto json_out = std::make_shared<std::string>();
  auto decimals = std::make_shared<int>(3);
  c->add_option("source", *source, "run directory or draws CSV")->required()->check(CLI::ExistingPath);
  c->add_option("--json", *json_out, "also write the table with full precision to this JSON file");
  c->add_option("--decimals", *decimals, "decimals in the printed table")->capture_default_str();
  auto all = std::make_shared<bool>(false);
  c->add_flag("--all", *all, "for a run directory: also the table of every parameter (weight-space R-hat misleads for BNNs)");
  return [source, json_out, decimals, all]() {
    std::filesystem::path path = *source;
    bool run_directory = false;
    if (std::filesystem::is_directory(path)) {
      // A run directory: its function-space summary (written by `uqnn fit`, with the run's
      // warnings), then optionally every weight.
      // dei-nuts runs: chain-wise LPPD traces and per-layer views as figures (seed 003).
      if (std::filesystem::exists(path / "dei_chains.json")) std::cout << diagnose_dei_run(path, "png") << '\n';
      const auto summary = path / "diagnostics.txt";
      if (std::filesystem::exists(summary)) {
        std::ifstream in(summary);
        std::cout << in.rdbuf();
        if (!*all && json_out->empty()) return 0;
      }
      path /= "draws.csv";
      run_directory = true;
    }
    const auto table = diagnostics::read_draws_csv(path.string());
    const auto rows = diagnostics::summarize(table);
    std::cout << fmt::format("{}: {} chains x {} draws, {} quantities\n", path.string(), table.num_chains(), table.num_draws(),
                             table.names.size())
              << diagnostics::format_summary_table(rows, *decimals);
    if (!json_out->empty()) atomic_write_text(*json_out, diagnostics::to_json(rows).dump(2) + "\n");
    // Warnings last, on stderr. A run directory's weights are not judged: weight-space R-hat
    // misleads for BNNs (its diagnostics.txt above judged lp__ and the function-space rows).
    auto warnings = diagnostics::draws_warnings(table);
    if (!run_directory)
      for (auto& w : diagnostics::convergence_warnings(rows, std::max<Index>(1, table.num_chains()))) warnings.push_back(std::move(w));
    std::cerr << diagnostics::format_warnings(warnings);
    // Non-finite (or overflowing) draws make every statistic of that quantity meaningless: not a
    // quiet success.
    const bool meaningless = std::any_of(warnings.begin(), warnings.end(), [](const auto& w) {
      return w.code == "non_finite_draws" || w.code == "overflow";
    });
    return meaningless ? kExitNonFiniteDraws : 0;
  };
}

}  // namespace uqnn::cli
