#pragma once
// Helpers shared by the plot tests: a private temporary directory and file-format checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace uqnn::plot::test {

namespace fs = std::filesystem;

/// A fresh directory under the system temp dir, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "uqnn-plot-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  /// Names of the files in the directory (sorted).
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  fs::path path_;
};

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A PNG: the 8-byte signature and more than a trivial size (an empty canvas is ~2 kB).
inline ::testing::AssertionResult is_png(const fs::path& p) {
  if (!fs::exists(p)) return ::testing::AssertionFailure() << p << " does not exist";
  const std::string b = read_bytes(p);
  const std::string sig = "\x89PNG\r\n\x1a\n";
  if (b.compare(0, sig.size(), sig) != 0) return ::testing::AssertionFailure() << p << " lacks the PNG signature";
  if (b.size() < 5000) return ::testing::AssertionFailure() << p << " is only " << b.size() << " bytes";
  return ::testing::AssertionSuccess();
}

/// An SVG document: starts with <?xml or <svg, is closed, and draws paths.
inline ::testing::AssertionResult is_svg(const fs::path& p) {
  if (!fs::exists(p)) return ::testing::AssertionFailure() << p << " does not exist";
  const std::string b = read_bytes(p);
  if (b.rfind("<?xml", 0) != 0 && b.rfind("<svg", 0) != 0)
    return ::testing::AssertionFailure() << p << " does not start with <?xml or <svg";
  if (b.find("</svg>") == std::string::npos) return ::testing::AssertionFailure() << p << " is not closed";
  if (b.find("<path") == std::string::npos) return ::testing::AssertionFailure() << p << " draws nothing";
  return ::testing::AssertionSuccess();
}

/// Sets an environment variable for the scope and restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace uqnn::plot::test
