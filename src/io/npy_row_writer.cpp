#include "uqnn/io/npy_row_writer.hpp"

#include <fmt/format.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <string>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn {

std::string NpyRowWriter::header(Index rows, Index columns) {
  // NEP 1, version 1.0: "\x93NUMPY", 1, 0, the dict's length (uint16, little-endian), the dict
  // padded with spaces and ended by '\n' so that the values start at a multiple of 64 bytes.
  const char* descr = std::endian::native == std::endian::little ? "<f8" : ">f8";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", descr, rows, columns);
  const std::size_t dict_bytes = kHeaderBytes - 10;
  if (dict.size() + 1 > dict_bytes) throw std::logic_error("NpyRowWriter: header too long");
  dict.resize(dict_bytes - 1, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict_bytes & 0xFF);
  out += static_cast<char>((dict_bytes >> 8) & 0xFF);
  return out + dict;
}

NpyRowWriter::NpyRowWriter(std::filesystem::path path, Index columns)
    : path_(std::move(path)), temp_(atomic_temp_path(path_)), columns_(columns) {
  file_ = std::fopen(temp_.c_str(), "wb");
  if (!file_) throw InputError(fmt::format("cannot create '{}': {}", temp_.string(), std::strerror(errno)));
  const std::string h = header(0, columns_);
  if (std::fwrite(h.data(), 1, h.size(), file_) != h.size()) {
    std::fclose(file_);
    file_ = nullptr;
    std::filesystem::remove(temp_);
    throw InputError(fmt::format("cannot write '{}': {}", temp_.string(), std::strerror(errno)));
  }
}

NpyRowWriter::~NpyRowWriter() {
  if (!file_) return;
  std::fclose(file_);
  std::error_code ignored;
  std::filesystem::remove(temp_, ignored);
}

void NpyRowWriter::append(const double* row) {
  if (!file_) throw std::logic_error("NpyRowWriter::append after finish");
  const auto n = static_cast<std::size_t>(columns_);
  if (std::fwrite(row, sizeof(double), n, file_) != n)
    throw InputError(fmt::format("cannot write '{}': {}", temp_.string(), std::strerror(errno)));
  ++rows_;
}

void NpyRowWriter::finish() {
  if (!file_) throw std::logic_error("NpyRowWriter::finish called twice");
  const std::string h = header(rows_, columns_);
  const bool ok = std::fflush(file_) == 0 && std::fseek(file_, 0, SEEK_SET) == 0 &&
                  std::fwrite(h.data(), 1, h.size(), file_) == h.size() && std::fflush(file_) == 0;
  const int error = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) {
    std::error_code ignored;
    std::filesystem::remove(temp_, ignored);
    throw InputError(fmt::format("cannot write '{}': {}", temp_.string(), std::strerror(error)));
  }
  sync_file(temp_);
  std::error_code ec;
  std::filesystem::rename(temp_, path_, ec);
  if (ec) {
    std::filesystem::remove(temp_, ec);
    throw InputError(fmt::format("cannot rename '{}' to '{}': {}", temp_.string(), path_.string(), ec.message()));
  }
}

}  // namespace uqnn
