#pragma once
// Shared by the libFuzzer harnesses: the fuzzer's bytes as a file (most readers take a path), in a
// directory of this process, and the rule that bad input may only end in uqnn::InputError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace uqnn::fuzz {

/// A directory for this fuzzing process (removed by the OS's /tmp cleaning, not by us: libFuzzer
/// exits without running destructors).
inline const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("uqnn-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

/// Writes `bytes` to work_dir()/name and returns its path.
inline std::filesystem::path write_file(const std::string& name, std::string_view bytes) {
  const auto path = work_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace uqnn::fuzz
