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
#include "uqnn/io/user_file.hpp"

namespace uqnn::cli {
namespace {

/// Exit code of `uqnn diagnose` when draws hold NaN or an infinity, or overflow (issue 17: 3, not
/// a success).
constexpr int kExitNonFiniteDraws = 3;

}  // namespace

Command add_diagnose(CLI::App& app) {
  auto* c = app.add_subcommand("diagnose",
                               "convergence summary (ArviZ columns) of MCMC draws: a `uqnn fit` directory, a long CSV "
                               "(chain, draw, one column per quantity) from any tool, or CmdStan's output CSV files (one per chain)");
  auto sources = std::make_shared<std::vector<std::string>>();
  auto max_depth = std::make_shared<int>(0);
  auto json_out = std::make_shared<std::string>();
  auto decimals = std::make_shared<int>(3);
  c->add_option("source", *sources, "run directory, draws CSV, or CmdStan CSV files (one chain each)")
      ->required()
      ->check(CLI::ExistingPath);
  c->add_option("--max-depth", *max_depth,
                "NUTS' maximum tree depth, for the tree-depth warning of CSV files with treedepth__ (default: the file's "
                "max_depth comment, else Stan's 10)")
      ->check(CLI::Range(1, 100));
  c->add_option("--json", *json_out, "also write the table with full precision to this JSON file");
  c->add_option("--decimals", *decimals, "decimals in the printed table")->capture_default_str()->check(CLI::Range(0, 17));
  auto all = std::make_shared<bool>(false);
  c->add_flag("--all", *all, "for a run directory: also the table of every parameter (weight-space R-hat misleads for BNNs)");
  return [sources, json_out, decimals, all, max_depth]() {
    std::vector<std::string> paths = *sources;
    std::filesystem::path path = paths.front();
    bool run_directory = false;
    if (std::filesystem::is_directory(path)) {
      if (paths.size() > 1) throw InputError("uqnn diagnose: give one run directory, or CSV files only");
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
      paths = {path.string()};
      run_directory = true;
    }
    // Each file a regular one whose lines are bounded, checked in bounded memory before the reader
    // (which holds a line whole) sees it: /dev/zero grew without limit, a FIFO blocked for ever.
    for (const auto& p : paths) check_text_lines(p, p);
    // lp__ and the parameters are summarised; the sampler's columns (divergent__, treedepth__,
    // energy__) feed the warnings.
    const auto with_sampler = diagnostics::read_draws_csv(paths);
    const auto table = diagnostics::without_sampler_columns(with_sampler);
    const auto rows = diagnostics::summarize(table);
    const int depth = *max_depth > 0 ? *max_depth : with_sampler.max_depth > 0 ? with_sampler.max_depth : 10;
    const auto sampler = diagnostics::sampler_stats_summary(with_sampler, depth);
    std::cout << fmt::format("{}{}: {} chains x {} draws, {} quantities\n", path.string(),
                             paths.size() > 1 ? fmt::format(" and {} more file(s)", paths.size() - 1) : std::string(),
                             table.num_chains(), table.num_draws(), table.names.size())
              << diagnostics::format_summary_table(rows, *decimals);
    if (sampler.num_draws > 0) {
      std::string footer = fmt::format("divergences: {}; at max tree depth {}: {} draws", sampler.divergences, depth,
                                       sampler.draws_at_max_depth);
      if (!sampler.e_bfmi.empty()) {
        footer += "; E-BFMI per chain:";
        for (double b : sampler.e_bfmi) footer += fmt::format(" {:.2f}", b);
      }
      std::cout << footer << '\n';
    }
    if (!json_out->empty()) atomic_write_text(*json_out, diagnostics::to_json(rows).dump(2) + "\n");
    // Warnings last, on stderr. A run directory's weights are not judged: weight-space R-hat
    // misleads for BNNs (its diagnostics.txt above judged lp__ and the function-space rows).
    auto warnings = diagnostics::draws_warnings(table);
    if (!run_directory)
      for (auto& w : diagnostics::convergence_warnings(rows, std::max<Index>(1, table.num_chains()), sampler)) warnings.push_back(std::move(w));
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
