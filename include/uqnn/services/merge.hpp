#pragma once
/// @file The merge service behind `uqnn merge OUT PART_DIR...`: joins the output directories of
/// `uqnn fit ... --part k/n` runs (k = 1..n, same settings otherwise) into one run directory with the
/// files a single run writes (draws.csv, posterior.nc, predictions.csv, metrics.json, diagnostics),
/// the diagnostics recomputed over all chains.
///
/// How: the settings recorded in the first part's model.json are checked against every other part,
/// then the fit service runs with them (data, split, standardisation, posterior) and, in place of
/// the method, the parts' draws (draws.csv) and sampler statistics (posterior.nc) in chain order.
/// Chain c's draws come from Rng(seed, c) whichever part ran it, so the merged draws.csv,
/// predictions.csv and diagnostics equal those of one run with the same settings.
/// This lets any scheduler (Slurm arrays, Ray, Dask) run uqnn's chains without being a dependency.
#include <filesystem>
#include <vector>

#include "uqnn/services/fit.hpp"

namespace uqnn {

struct MergeConfig {
  std::filesystem::path out_dir;                ///< the merged run's directory
  std::vector<std::filesystem::path> part_dirs;  ///< the parts' --out directories, any order
  bool quiet = false;
};

/// Whether `dir` holds the model.json of a `uqnn fit --part k/n` run with n > 1: a part, never an
/// output directory (false for anything unreadable: the merge itself then says what is wrong).
bool is_part_directory(const std::filesystem::path& dir);

/// Merges the parts. Throws InputError naming the directory and setting when a part is missing,
/// repeated, of another n, or ran with other settings.
FitReport run_merge(const MergeConfig& config);

}  // namespace uqnn
