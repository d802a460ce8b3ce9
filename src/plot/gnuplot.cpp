#include "uqnn/plot/gnuplot.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace uqnn::plot {
namespace {

namespace fs = std::filesystem;

/// A fresh private directory under the system temp dir, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "uqnn-plot-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("plot: cannot create a temporary directory: " + std::string(std::strerror(errno)));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  constexpr std::size_t kMax = 4000;  // keep error messages readable
  if (s.size() > kMax) s = s.substr(0, kMax) + "\n[... truncated]";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string gnuplot_executable() {
  const char* env = std::getenv("UQNN_GNUPLOT");
  return (env != nullptr && *env != '\0') ? std::string(env) : std::string("gnuplot");
}

std::string gnuplot_quote(const std::string& text) {
  // Double quotes with \\, \" and \` escaped. (A single-quoted literal cannot start with a quote:
  // '' at the start means "the previous data file" in a plot command.)
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '`') out += "\\`";  // gnuplot runs `...` as a shell command even inside "..."
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  out += '"';
  return out;
}

void run_gnuplot(const std::string& script, std::chrono::seconds timeout) {
  TempDir dir;
  const fs::path script_path = dir.path() / "figure.gp";
  const fs::path stderr_path = dir.path() / "stderr.txt";
  {
    std::ofstream out(script_path, std::ios::binary);
    out << script;
    if (!out) throw std::runtime_error("plot: cannot write the gnuplot script to " + script_path.string());
  }

  const std::string exe = gnuplot_executable();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  std::string script_arg = script_path.string();
  std::vector<char*> argv = {const_cast<char*>(exe.c_str()), script_arg.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw std::runtime_error("plot: cannot run gnuplot ('" + exe + "'): " + std::strerror(rc) +
                             ". Install it (Debian: apt-get install gnuplot-nox) or set UQNN_GNUPLOT "
                             "to its path.");
  }

  // Wait for the child, polling so a stuck gnuplot is killed after `timeout`.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  bool timed_out = false;
  auto sleep = std::chrono::milliseconds(1);
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) throw std::runtime_error("plot: waitpid failed: " + std::string(std::strerror(errno)));
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::milliseconds(50)) sleep *= 2;
  }

  const std::string err = read_text(stderr_path);
  if (timed_out)
    throw std::runtime_error("plot: gnuplot did not finish within " + std::to_string(timeout.count()) +
                             " s and was killed" + (err.empty() ? std::string() : ":\n" + err));
  if (WIFSIGNALED(status))
    throw std::runtime_error("plot: gnuplot was killed by signal " + std::to_string(WTERMSIG(status)) +
                             (err.empty() ? std::string() : ":\n" + err));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    // posix_spawnp reports a missing executable through exit status 127 on some systems.
    if (WEXITSTATUS(status) == 127 && err.empty())
      throw std::runtime_error("plot: cannot run gnuplot ('" + exe +
                               "'). Install it (Debian: apt-get install gnuplot-nox) or set UQNN_GNUPLOT.");
    throw std::runtime_error("plot: gnuplot failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")" +
                             (err.empty() ? std::string() : ":\n" + err));
  }
}

}  // namespace uqnn::plot
