#include "uqnn/io/staged_output_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <system_error>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn {
namespace fs = std::filesystem;
namespace {

constexpr const char* kManifest = ".uqnn-files";

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

/// The files under `dir`, relative to it, sorted.
std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (!entry.is_directory()) files.push_back(fs::relative(entry.path(), dir));
  std::sort(files.begin(), files.end());
  return files;
}

std::set<fs::path> read_manifest(const fs::path& dir) {
  std::set<fs::path> files;
  std::ifstream in(dir / kManifest);
  std::string line;
  while (std::getline(in, line)) {
    const fs::path rel = fs::path(line).lexically_normal();
    // Only plain relative paths below `dir`: a manifest is never a way to delete anything else.
    if (line.empty() || rel.is_absolute() || rel.empty() || *rel.begin() == "..") continue;
    files.insert(rel);
  }
  return files;
}

}  // namespace

StagedOutputDir::StagedOutputDir(fs::path final_dir, std::string flag) : flag_(std::move(flag)) {
  if (final_dir.empty()) throw InputError(flag_ + " is empty: name the output directory");
  std::error_code ec;
  final_ = fs::absolute(final_dir, ec).lexically_normal();
  if (!final_.has_filename()) final_ = final_.parent_path();  // "out/" -> "out"
  const std::string name = final_.filename().string();
  if (name.empty() || name == "." || name == ".." || final_ == final_.root_path())
    throw InputError(flag_ + " " + quoted(final_dir) + ": choose a directory below the file system's root");
  if (fs::exists(final_, ec) && !fs::is_directory(final_, ec))
    throw InputError(flag_ + " " + quoted(final_dir) + " is a file, not a directory: choose another " + flag_);
  const fs::path parent = final_.parent_path();
  // The directories this run creates, deepest first: an uncommitted run removes them again.
  for (fs::path missing = parent; !missing.empty() && !fs::exists(missing, ec); missing = missing.parent_path()) {
    created_parents_.push_back(missing);
    if (missing == missing.root_path()) break;
  }
  fs::create_directories(parent, ec);
  if (ec) throw InputError(flag_ + " " + quoted(final_dir) + ": cannot create " + quoted(parent) + " (" + ec.message() + ")");
  for (const fs::path& dir : {parent, final_})
    if (fs::exists(dir, ec) && ::access(dir.c_str(), W_OK | X_OK) != 0)
      throw InputError(flag_ + " " + quoted(final_dir) + ": " + quoted(dir) + " is not writable (" + std::strerror(errno) + ")");

  // The lock: flock on a file beside the directory, released by the kernel however the run ends.
  // After taking it, check that the path still names the file we locked (a finishing run unlinks it).
  lock_path_ = parent / ("." + name + ".uqnn-lock");
  for (int attempt = 0; lock_fd_ < 0; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw InputError(flag_ + " " + quoted(final_dir) + ": cannot create the lock file " + quoted(lock_path_) + " (" +
                       std::strerror(errno) + ")");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char pid[32] = {0};
      (void)!::read(fd, pid, sizeof pid - 1);
      ::close(fd);
      throw InputError(flag_ + " " + quoted(final_dir) + " is in use by another uqnn run (process " +
                       std::string(pid[0] ? pid : "?") + ", lock file " + quoted(lock_path_) +
                       "): wait for it to finish or choose another " + flag_);
    }
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      lock_fd_ = fd;
    } else {
      ::close(fd);
      if (attempt > 100) throw InputError(flag_ + " " + quoted(final_dir) + ": cannot take the lock " + quoted(lock_path_));
    }
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) == 0) (void)!::write(lock_fd_, pid.data(), pid.size());

  // Staging directories of runs that were killed (we hold the lock, so no live run owns them).
  const std::string stale_prefix = "." + name + ".uqnn-staging-";
  for (const auto& entry : fs::directory_iterator(parent, ec))
    if (entry.path().filename().string().rfind(stale_prefix, 0) == 0) fs::remove_all(entry.path(), ec);
  staging_ = parent / (stale_prefix + pid);
  fs::create_directory(staging_, ec);
  if (ec) {
    const std::string message = ec.message();
    ::unlink(lock_path_.c_str());
    ::close(lock_fd_);
    remove_created_parents();
    throw InputError(flag_ + " " + quoted(final_dir) + ": cannot create " + quoted(staging_) + " (" + message + ")");
  }
}

StagedOutputDir::~StagedOutputDir() {
  std::error_code ignored;
  if (!committed_) fs::remove_all(staging_, ignored);
  // Unlink while still holding the lock: a run that opened the old file sees it gone and retries.
  ::unlink(lock_path_.c_str());
  ::close(lock_fd_);
  if (!committed_) remove_created_parents();
}

void StagedOutputDir::remove_created_parents() const {
  std::error_code ignored;
  for (const fs::path& dir : created_parents_) fs::remove(dir, ignored);  // only while empty
}

fs::path StagedOutputDir::final_path(const fs::path& staged) const {
  const fs::path rel = staged.lexically_relative(staging_);
  if (rel.empty() || *rel.begin() == "..") return staged;
  return final_ / rel;
}

void StagedOutputDir::commit() {
  const std::vector<fs::path> files = files_under(staging_);
  std::string manifest;
  for (const auto& f : files) manifest += f.string() + "\n";
  atomic_write_text(staging_ / kManifest, manifest);

  std::error_code ec;
  if (!fs::exists(final_, ec)) {
    fs::rename(staging_, final_, ec);  // the whole set appears at once
    if (ec) throw InputError("cannot move " + quoted(staging_) + " to " + quoted(final_) + ": " + ec.message());
    committed_ = true;
    return;
  }
  // The directory exists (a previous run, or the user's own files): replace file by file, then
  // remove what the previous run wrote and this one did not.
  const std::set<fs::path> previous = read_manifest(final_);
  const std::set<fs::path> current(files.begin(), files.end());
  for (const auto& rel : files) {
    fs::create_directories((final_ / rel).parent_path(), ec);
    fs::rename(staging_ / rel, final_ / rel, ec);
    if (ec) throw InputError("cannot move " + quoted(staging_ / rel) + " to " + quoted(final_ / rel) + ": " + ec.message());
  }
  for (const auto& rel : previous)
    if (!current.count(rel) && fs::is_regular_file(final_ / rel, ec)) fs::remove(final_ / rel, ec);
  fs::rename(staging_ / kManifest, final_ / kManifest, ec);
  committed_ = true;
  fs::remove_all(staging_, ec);
}

}  // namespace uqnn
