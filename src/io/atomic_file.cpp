#include "uqnn/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "uqnn/core/error.hpp"

namespace uqnn {
namespace {

void remove_quietly(const std::filesystem::path& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
}

}  // namespace

void sync_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

std::filesystem::path atomic_temp_path(const std::filesystem::path& path) {
  std::filesystem::path temp = path;
  temp += ".tmp." + std::to_string(::getpid());
  return temp;
}

void atomic_write(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  const std::filesystem::path temp = atomic_temp_path(path);
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  if (!out) {
    const int error = errno;
    throw InputError("cannot write '" + path.string() + "': " + std::strerror(error) +
                     " (check that the directory exists and is writable)");
  }
  try {
    write(out);
    out.flush();
    if (!out) throw InputError("error while writing '" + temp.string() + "' (disk full?)");
    out.close();
    if (out.fail()) throw InputError("error while closing '" + temp.string() + "' (disk full?)");
  } catch (...) {
    out.close();
    remove_quietly(temp);
    throw;
  }
  sync_file(temp);
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) {
    remove_quietly(temp);
    throw InputError("cannot rename '" + temp.string() + "' to '" + path.string() + "': " + error.message());
  }
}

void atomic_write_text(const std::filesystem::path& path, std::string_view contents) {
  atomic_write(path, [contents](std::ostream& out) { out.write(contents.data(), static_cast<std::streamsize>(contents.size())); });
}

}  // namespace uqnn
