// `uqnn merge PART_DIR... --out DIR` (the older `uqnn merge OUT PART_DIR...` still works): joins
// the directories of `uqnn fit ... --part k/n` runs into one run directory (services/merge.hpp).
#include <fmt/format.h>

#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/services/merge.hpp"

namespace uqnn::cli {

Command add_merge(CLI::App& app) {
  auto* c = app.add_subcommand("merge",
                               "join the output directories of `uqnn fit ... --part k/n` runs (k = 1..n) into one run "
                               "directory with the files and diagnostics of a single run:\n  uqnn merge PART_DIR... --out DIR");
  auto config = std::make_shared<MergeConfig>();
  auto out = std::make_shared<std::string>();
  auto dirs = std::make_shared<std::vector<std::string>>();
  c->add_option("parts", *dirs, "the parts' --out directories (k = 1..n, any order)")->required();
  c->add_option("--out", *out, "directory of the merged run (the older form gives it first: uqnn merge DIR PART_DIR...)");
  c->add_flag("--quiet", config->quiet, "no progress messages on stderr");
  return [config, out, dirs]() {
    std::vector<std::string> parts = *dirs;
    if (out->empty()) {
      // The older form, OUT first. A part directory in OUT's place is refused, not overwritten:
      // `uqnn merge p1 p2 p3` (with --out forgotten) would have replaced part p1 with the merge.
      if (parts.size() < 2)
        throw InputError("uqnn merge: --out DIR is required: the directory of the merged run (uqnn merge PART_DIR... --out DIR)");
      if (is_part_directory(parts.front()))
        throw InputError(fmt::format("uqnn merge: {} is the directory of a part (its model.json has --part), not an output "
                                     "directory: give the merged run's directory with --out DIR",
                                     parts.front()));
      *out = parts.front();
      parts.erase(parts.begin());
    }
    config->out_dir = *out;
    for (const auto& p : parts) {
      std::error_code ec;
      if (!std::filesystem::is_directory(p, ec))
        throw InputError(fmt::format("uqnn merge: {} is not a directory (a part's --out directory)", p));
      config->part_dirs.emplace_back(p);
    }
    FitConfig shown;
    shown.method = "merge";
    return print_fit_report(shown, run_merge(*config));
  };
}

}  // namespace uqnn::cli
