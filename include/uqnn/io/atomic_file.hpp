#pragma once
/// @file Atomic file output: every file the project writes goes through these helpers.
///
/// Why: a run that is interrupted (Ctrl-C, out of memory, a crash in a later stage) must never
/// leave a half-written CSV or JSON behind that a later command would read as complete. The
/// content is written to `<path>.tmp.<pid>` in the same directory, flushed and fsync'ed, then
/// renamed over `path` (rename is atomic on POSIX within one file system). Readers therefore see
/// either the old file or the complete new one.
/// References: POSIX rename(2); the same pattern as Stan's and ArviZ's output writers.
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace uqnn {

/// Name of the temporary file used while writing `path`: `<path>.tmp.<pid>`.
std::filesystem::path atomic_temp_path(const std::filesystem::path& path);

/// Writes `path` atomically; `write` fills the stream. If `write` throws, or the stream fails,
/// the temporary file is removed, `path` is left untouched and the exception propagates.
/// Throws uqnn::InputError when the file cannot be created or written (e.g. missing directory).
/// Not safe for two threads of one process writing the same path at the same time.
void atomic_write(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write);

/// Writes `contents` to `path` atomically (see the callback overload).
void atomic_write_text(const std::filesystem::path& path, std::string_view contents);

/// Forces the file's data to disk (fsync) so that a rename over the target cannot expose an empty
/// file after a crash; for writers that cannot go through an ostream (NetCDF). Best effort: a file
/// that cannot be opened is left alone (the rename still gives atomicity against concurrent readers).
void sync_file(const std::filesystem::path& path);

}  // namespace uqnn
