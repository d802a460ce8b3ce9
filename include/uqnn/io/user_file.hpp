#pragma once
/// @file Checks on a file a user hands to uqnn, before any reader opens it.
///
/// Why: opening a FIFO with no writer blocks in open(2) where no signal handler can end it, and a
/// device such as /dev/zero never ends; a directory read as a stream gives a library's internal
/// error. Every reader of user files (data, split indices, draws, model.json, TOML) calls
/// `check_user_file` first, and readers without a line bound of their own `check_text_lines`.
/// References: POSIX stat(2).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace uqnn {

/// Longest line a text reader of user files accepts (the CSV reader's bound).
inline constexpr std::size_t kUserFileMaxLineBytes = std::size_t{64} << 20;

/// Checks that `path` names an existing regular file (not a directory, FIFO, socket or device) of
/// at most `max_bytes`, without opening it. `source` names the file in messages (a flag and the
/// path, or a path). Throws InputError.
void check_user_file(const std::filesystem::path& path, const std::string& source,
                     std::uintmax_t max_bytes = UINTMAX_MAX);

/// Reads `path` in 1 MiB blocks and checks that no line is longer than `max_line_bytes` (memory
/// stays bounded whatever the file holds); throws InputError "<source>:<line>: line longer ...".
void check_text_lines(const std::filesystem::path& path, const std::string& source,
                      std::size_t max_line_bytes = kUserFileMaxLineBytes);

}  // namespace uqnn
