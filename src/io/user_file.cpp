#include "uqnn/io/user_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "uqnn/core/error.hpp"

namespace uqnn {

void check_user_file(const std::filesystem::path& path, const std::string& source, std::uintmax_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    throw InputError(fmt::format("{}: cannot open file ({})", source, std::strerror(error)));
  }
  const char* kind = nullptr;
  if (S_ISDIR(st.st_mode)) kind = "a directory";
  else if (S_ISFIFO(st.st_mode)) kind = "a FIFO (named pipe)";
  else if (S_ISSOCK(st.st_mode)) kind = "a socket";
  else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) kind = "a device";
  else if (!S_ISREG(st.st_mode)) kind = "not a regular file";
  if (kind) throw InputError(fmt::format("{}: is {}, not a file: give a regular file", source, kind));
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    throw InputError(fmt::format("{}: is {} bytes, more than the {} MiB this reader accepts", source,
                                 static_cast<std::uintmax_t>(st.st_size), max_bytes >> 20));
}

void check_text_lines(const std::filesystem::path& path, const std::string& source, std::size_t max_line_bytes) {
  check_user_file(path, source);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read", source));
  std::vector<char> block(std::size_t{1} << 20);
  std::size_t line = 1, length = 0;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < got; ++i) {
      if (block[i] == '\n') {
        ++line;
        length = 0;
      } else if (++length > max_line_bytes) {
        throw InputError(fmt::format("{}:{}: line longer than {} MiB: is this a text file?", source, line, max_line_bytes >> 20));
      }
    }
  }
}

}  // namespace uqnn
