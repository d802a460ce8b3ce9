#include <iostream>

#include "commands.hpp"
#include "uqnn/services/diagnose.hpp"

namespace uqnn::cli {

Command add_diagnose(CLI::App& app) {
  auto* c = app.add_subcommand("diagnose",
                               "convergence summary (ArviZ columns) of MCMC draws: a `uqnn fit` directory, a long CSV "
                               "(chain, draw, one column per quantity) from any tool, or CmdStan's output CSV files (one per chain)");
  auto request = std::make_shared<DiagnoseRequest>();
  c->add_option("source", request->sources, "run directory, draws CSV, or CmdStan CSV files (one chain each)")
      ->required()
      ->check(CLI::ExistingPath);
  c->add_option("--max-depth", request->max_depth,
                "NUTS' maximum tree depth, for the tree-depth warning of CSV files with treedepth__ (default: the file's "
                "max_depth comment, else Stan's 10)")
      ->check(CLI::Range(1, 100));
  c->add_option("--json", request->json_out, "also write the table with full precision to this JSON file");
  c->add_option("--decimals", request->decimals, "decimals in the printed table")->capture_default_str()->check(CLI::Range(0, 17));
  c->add_flag("--all", request->all, "for a run directory: also the table of every parameter (weight-space R-hat misleads for BNNs)");
  return [request]() { return diagnose(*request, std::cout, std::cerr); };
}

}  // namespace uqnn::cli
