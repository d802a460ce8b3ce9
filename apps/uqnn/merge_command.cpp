// `uqnn merge OUT PART_DIR...`: joins the directories of `uqnn fit ... --part k/n` runs into one run
// directory (services/merge.hpp).
#include <iostream>

#include "commands.hpp"
#include "uqnn/services/merge.hpp"

namespace uqnn::cli {

Command add_merge(CLI::App& app) {
  auto* c = app.add_subcommand("merge",
                               "join the output directories of `uqnn fit ... --part k/n` runs (k = 1..n) into one run "
                               "directory with the files and diagnostics of a single run");
  auto config = std::make_shared<MergeConfig>();
  c->add_option("out", config->out_dir, "directory of the merged run")->required();
  c->add_option("parts", config->part_dirs, "the parts' --out directories")->required()->check(CLI::ExistingDirectory);
  c->add_flag("--quiet", config->quiet, "no progress messages on stderr");
  return [config]() {
    FitConfig shown;
    shown.method = "merge";
    return print_fit_report(shown, run_merge(*config));
  };
}

}  // namespace uqnn::cli
