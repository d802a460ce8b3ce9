#include "uqnn/io/staged_output_dir.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "unit/io/temp_dir.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(StagedOutputDir, CommitMovesTheWholeSetIntoANewDirectoryAndLeavesNothingBeside) {
  TempDir dir;
  const fs::path out = dir.path() / "run";
  {
    StagedOutputDir staged(out);
    EXPECT_FALSE(fs::exists(out)) << "nothing appears before commit";
    EXPECT_EQ(staged.staging().parent_path(), dir.path());
    atomic_write_text(staged.staging() / "model.json", "{}");
    fs::create_directories(staged.staging() / "sub");
    atomic_write_text(staged.staging() / "sub" / "a.csv", "x\n1\n");
    EXPECT_EQ(staged.final_path(staged.staging() / "sub" / "a.csv"), out / "sub" / "a.csv");
    staged.commit();
  }
  EXPECT_EQ(TempDir::read(out / "model.json"), "{}");
  EXPECT_EQ(TempDir::read(out / "sub" / "a.csv"), "x\n1\n");
  EXPECT_EQ(TempDir::read(out / ".uqnn-files"), "model.json\nsub/a.csv\n");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"run"}) << "no staging directory or lock file is left";
}

TEST(StagedOutputDir, AFailureBeforeCommitLeavesTheOldRunUntouched) {
  TempDir dir;
  const fs::path out = dir.path() / "run";
  fs::create_directories(out);
  atomic_write_text(out / "model.json", "old");
  try {
    StagedOutputDir staged(out);
    atomic_write_text(staged.staging() / "model.json", "new");
    throw std::runtime_error("disk full");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(TempDir::read(out / "model.json"), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"run"});
}

TEST(StagedOutputDir, AFailedRunRemovesTheParentsItCreatedAndKeepsThoseOfACommittedOne) {
  TempDir dir;
  {
    StagedOutputDir staged(dir.path() / "new" / "deeper" / "run");
    EXPECT_TRUE(fs::is_directory(dir.path() / "new" / "deeper"));
  }  // not committed: a refused run leaves nothing behind
  EXPECT_TRUE(names_in(dir.path()).empty());
  {
    StagedOutputDir staged(dir.path() / "new" / "deeper" / "run");
    atomic_write_text(staged.staging() / "model.json", "{}");
    staged.commit();
  }
  EXPECT_EQ(TempDir::read(dir.path() / "new" / "deeper" / "run" / "model.json"), "{}");
}

TEST(StagedOutputDir, IntoAnExistingDirectoryKeepsTheUsersFilesAndDropsThePreviousRunsStaleOnes) {
  TempDir dir;
  const fs::path out = dir.path() / "run";
  {
    StagedOutputDir first(out);
    atomic_write_text(first.staging() / "model.json", "first");
    atomic_write_text(first.staging() / "rhat.png", "figure of the first run");
    first.commit();
  }
  atomic_write_text(out / "notes.txt", "the user's own file");
  {
    StagedOutputDir second(out);
    atomic_write_text(second.staging() / "model.json", "second");
    second.commit();
  }
  EXPECT_EQ(TempDir::read(out / "model.json"), "second");
  EXPECT_FALSE(fs::exists(out / "rhat.png")) << "a file of the previous run that this run did not write";
  EXPECT_EQ(TempDir::read(out / "notes.txt"), "the user's own file");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"run"});
}

TEST(StagedOutputDir, AManifestCannotDeleteOutsideTheDirectory) {
  TempDir dir;
  const fs::path out = dir.path() / "run";
  fs::create_directories(out);
  atomic_write_text(dir.path() / "precious.txt", "keep");
  atomic_write_text(out / ".uqnn-files", "../precious.txt\n" + (dir.path() / "precious.txt").string() + "\n");
  {
    StagedOutputDir staged(out);
    atomic_write_text(staged.staging() / "model.json", "{}");
    staged.commit();
  }
  EXPECT_EQ(TempDir::read(dir.path() / "precious.txt"), "keep");
}

TEST(StagedOutputDir, ASecondRunIntoTheSameDirectoryIsRefusedWhileTheFirstLives) {
  TempDir dir;
  const fs::path out = dir.path() / "run";
  {
    StagedOutputDir first(out);
    try {
      StagedOutputDir second(out, "--out");
      FAIL() << "the second run should be refused";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("is in use by another uqnn run (process " + std::to_string(::getpid())), std::string::npos)
          << message;
      EXPECT_NE(message.find("--out"), std::string::npos) << message;
    }
    // The same directory named another way is the same directory.
    EXPECT_THROW(StagedOutputDir(dir.path() / "." / "run" / ""), InputError);
  }
  EXPECT_NO_THROW(StagedOutputDir{out}) << "the lock goes with the run";
}

TEST(StagedOutputDir, AFileWhereTheDirectoryShouldBeIsAnErrorBeforeAnyWork) {
  TempDir dir;
  const fs::path out = dir.write("run", "a file");
  try {
    StagedOutputDir staged(out, "--out");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a file, not a directory"), std::string::npos) << e.what();
  }
}

TEST(StagedOutputDir, AnUnwritableParentIsAnErrorBeforeAnyWork) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write anywhere";
  TempDir dir;
  fs::create_directories(dir.path() / "locked");
  fs::permissions(dir.path() / "locked", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(StagedOutputDir(dir.path() / "locked" / "run"), InputError);
  fs::permissions(dir.path() / "locked", fs::perms::owner_all);
}

TEST(StagedOutputDir, StagingLeftByAKilledRunIsRemoved) {
  TempDir dir;
  fs::create_directories(dir.path() / ".run.uqnn-staging-999999");
  atomic_write_text(dir.path() / ".run.uqnn-staging-999999" / "model.json", "half");
  {
    StagedOutputDir staged(dir.path() / "run");
    atomic_write_text(staged.staging() / "model.json", "{}");
    staged.commit();
  }
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"run"});
}

}  // namespace
}  // namespace uqnn
