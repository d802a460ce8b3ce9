#pragma once
/// @file A run's output directory, written all-or-nothing and by one run at a time.
///
/// Why: a fit writes a set of files (predictions, model.json, draws.csv, metrics, figures) that only
/// make sense together. Writing each file atomically (atomic_file.hpp) is not enough: a full disk or
/// a crash half-way left predictions.csv without model.json, and two runs into the same --out mixed
/// their files. So the run writes into a staging directory beside the output directory (same file
/// system, so renames are atomic) and `commit()` moves the finished set into place; a lock file
/// beside the output directory refuses a second run into it while the first one lives.
///
/// Committing never deletes a file the user put in the directory: when the output directory exists,
/// each staged file is renamed over its namesake, and of the files a previous run wrote (listed in
/// `.uqnn-files`) those the new run did not write are removed, so no stale figure or diagnostics file
/// of an older run sits beside the new model.json.
/// References: POSIX rename(2) and flock(2).
#include <filesystem>
#include <string>
#include <vector>

namespace uqnn {

class StagedOutputDir {
 public:
  /// Checks that `final_dir` can be written (its parent is created if missing; `final_dir` must not
  /// be a file), takes the lock and creates an empty staging directory. `flag` is the option the
  /// user typed, for the messages. Throws InputError when the directory cannot be used or another
  /// run holds the lock. Staging directories left by a killed run are removed.
  explicit StagedOutputDir(std::filesystem::path final_dir, std::string flag = "--out");
  /// Removes the staging directory unless committed, and releases the lock.
  ~StagedOutputDir();
  StagedOutputDir(const StagedOutputDir&) = delete;
  StagedOutputDir& operator=(const StagedOutputDir&) = delete;

  /// Where the run writes its files until commit().
  const std::filesystem::path& staging() const { return staging_; }
  const std::filesystem::path& final_dir() const { return final_; }
  /// The path `staged` (inside staging()) will have after commit().
  std::filesystem::path final_path(const std::filesystem::path& staged) const;
  /// Moves the staged files into the output directory (see the file comment).
  void commit();

 private:
  /// Removes the parent directories the constructor created, if still empty.
  void remove_created_parents() const;

  std::filesystem::path final_;
  std::filesystem::path staging_;
  std::filesystem::path lock_path_;
  std::vector<std::filesystem::path> created_parents_;  ///< deepest first
  std::string flag_;
  int lock_fd_ = -1;
  bool committed_ = false;
};

}  // namespace uqnn
