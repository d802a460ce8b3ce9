#include "uqnn/io/atomic_file.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

using testing::TempDir;

std::size_t count_files(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, WritesTextAndLeavesNoTemporary) {
  TempDir dir;
  const auto file = dir.path() / "out.txt";
  atomic_write_text(file, "hello\nworld\n");
  EXPECT_EQ(TempDir::read(file), "hello\nworld\n");
  EXPECT_FALSE(std::filesystem::exists(atomic_temp_path(file)));
  EXPECT_EQ(count_files(dir.path()), 1u);
}

TEST(AtomicFile, TemporaryIsInSameDirectoryWithPid) {
  const std::filesystem::path file = "/some/dir/result.csv";
  const auto temp = atomic_temp_path(file);
  EXPECT_EQ(temp.parent_path(), file.parent_path());
  EXPECT_EQ(temp.filename().string(), "result.csv.tmp." + std::to_string(::getpid()));
}

TEST(AtomicFile, CallbackWritesAndReplacesExistingFile) {
  TempDir dir;
  const auto file = dir.write("out.txt", "old contents that are longer than the new ones\n");
  atomic_write(file, [](std::ostream& out) { out << "x=" << 42 << '\n'; });
  EXPECT_EQ(TempDir::read(file), "x=42\n");
}

TEST(AtomicFile, ThrowingCallbackKeepsOldFileAndRemovesTemporary) {
  TempDir dir;
  const auto file = dir.write("out.txt", "old\n");
  EXPECT_THROW(atomic_write(file,
                            [&](std::ostream& out) {
                              out << "partial";
                              // The new content must not be visible while writing.
                              EXPECT_EQ(TempDir::read(file), "old\n");
                              throw std::runtime_error("interrupted");
                            }),
               std::runtime_error);
  EXPECT_EQ(TempDir::read(file), "old\n");
  EXPECT_FALSE(std::filesystem::exists(atomic_temp_path(file)));
  EXPECT_EQ(count_files(dir.path()), 1u);
}

TEST(AtomicFile, MissingDirectoryIsInputErrorNamingPath) {
  TempDir dir;
  const auto file = dir.path() / "no_such_dir" / "out.txt";
  try {
    atomic_write_text(file, "x");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace uqnn
