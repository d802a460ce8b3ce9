#include "uqnn/data/image_arrays.hpp"
#include "uqnn/data/image_files.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "uqnn/core/error.hpp"
#include "uqnn/io/user_file.hpp"

namespace uqnn {

Index NdArray::size() const {
  Index n = 1;
  for (Index d : shape) n *= d;
  return n;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Bytes.

/// A file's bytes, decompressed when it starts with gzip's magic bytes (zlib reads plain files
/// as they are), at most kMaxArrayBytes.
std::string read_array_file_bytes(const std::filesystem::path& path, const std::string& source) {
  check_user_file(path, source);
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw InputError(source + ": cannot open file (" + std::strerror(errno) + ")");
  std::string bytes;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) {
    bytes.append(buffer, static_cast<std::size_t>(n));
    if (bytes.size() > kMaxArrayBytes) {
      gzclose(file);
      throw InputError(fmt::format("{}: holds more than {} bytes (decompressed)", source, kMaxArrayBytes));
    }
  }
  int code = Z_OK;
  const std::string message = n < 0 ? gzerror(file, &code) : "";
  gzclose(file);
  if (n < 0) throw InputError(source + ": a damaged or truncated gzip file (" + message + ")");
  return bytes;
}

/// Reads unsigned integers of `width` bytes in either byte order at `at` (bounds checked by callers).
std::uint64_t read_array_unsigned(const std::string& b, std::size_t at, int width, bool big_endian) {
  std::uint64_t v = 0;
  for (int i = 0; i < width; ++i) {
    const auto byte = static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]));
    v |= byte << (8 * (big_endian ? width - 1 - i : i));
  }
  return v;
}

double npy_half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) v = std::ldexp(static_cast<double>(mantissa), -24);
  else if (exponent == 31) v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(static_cast<double>(mantissa + 1024), exponent - 25);
  return sign ? -v : v;
}

/// An element type: 'b' bool, 'i' signed, 'u' unsigned, 'f' float, of `width` bytes.
struct ArrayElementType {
  char kind = 'u';
  int width = 1;
  bool big_endian = false;
};

double decode_array_element(const std::string& b, std::size_t at, const ArrayElementType& t) {
  const std::uint64_t raw = read_array_unsigned(b, at, t.width, t.big_endian);
  switch (t.kind) {
    case 'b': return raw != 0 ? 1.0 : 0.0;
    case 'u': return static_cast<double>(raw);
    case 'i': {
      if (t.width == 8) return static_cast<double>(static_cast<std::int64_t>(raw));
      const std::uint64_t sign = std::uint64_t{1} << (8 * t.width - 1);
      return raw & sign ? static_cast<double>(static_cast<std::int64_t>(raw) - static_cast<std::int64_t>(sign << 1))
                        : static_cast<double>(raw);
    }
    default:
      if (t.width == 2) return npy_half_to_double(static_cast<std::uint16_t>(raw));
      if (t.width == 4) return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(raw)));
      return std::bit_cast<double>(raw);
  }
}

/// The number of elements of `shape` (an InputError beyond what any file here can hold).
std::size_t array_element_count(const std::vector<Index>& shape, const std::string& source) {
  double count = 1.0;
  for (Index d : shape) count *= static_cast<double>(d);
  if (count > static_cast<double>(kMaxArrayBytes))
    throw InputError(fmt::format("{}: its header gives {:.4g} values, more than a file here can hold", source, count));
  return static_cast<std::size_t>(count);
}

void decode_array(const std::string& b, std::size_t at, const ArrayElementType& t, NdArray& a) {
  a.values.resize(array_element_count(a.shape, ""));
  for (std::size_t i = 0; i < a.values.size(); ++i) a.values[i] = decode_array_element(b, at + i * static_cast<std::size_t>(t.width), t);
}

std::string array_shape_text(const std::vector<Index>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// The data after a header must hold exactly the values the header gives.
void check_array_data_size(std::size_t available, std::size_t count, int width, const std::vector<Index>& shape, const std::string& source) {
  const std::size_t needed = count * static_cast<std::size_t>(width);
  if (available < needed)
    throw InputError(fmt::format("{}: truncated: shape {} needs {} bytes of values, the file holds {}", source, array_shape_text(shape),
                                 needed, available));
  if (available > needed)
    throw InputError(fmt::format("{}: {} bytes after the {} values of shape {} (not an array file, or a damaged one)", source,
                                 available - needed, count, array_shape_text(shape)));
}

}  // namespace

// -----------------------------------------------------------------------------------------------
// IDX

NdArray parse_idx(const std::string& b, const std::string& source) {
  if (b.size() < 4 || b[0] != 0 || b[1] != 0)
    throw InputError(source + ": not an IDX file (it must start with the bytes 0 0 <type> <dimensions>, as MNIST's "
                              "train-images-idx3-ubyte)");
  ArrayElementType t;
  switch (static_cast<unsigned char>(b[2])) {
    case 0x08: t = {'u', 1, true}; break;
    case 0x09: t = {'i', 1, true}; break;
    case 0x0B: t = {'i', 2, true}; break;
    case 0x0C: t = {'i', 4, true}; break;
    case 0x0D: t = {'f', 4, true}; break;
    case 0x0E: t = {'f', 8, true}; break;
    default:
      throw InputError(fmt::format("{}: IDX type code 0x{:02X} is not known: valid are 0x08 (unsigned byte), 0x09 (signed "
                                   "byte), 0x0B (int16), 0x0C (int32), 0x0D (float32), 0x0E (float64)",
                                   source, static_cast<unsigned char>(b[2])));
  }
  const int dims = static_cast<unsigned char>(b[3]);
  if (dims < 1 || dims > 8) throw InputError(fmt::format("{}: {} dimensions: an IDX file here has 1 to 8", source, dims));
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(dims);
  if (b.size() < header) throw InputError(fmt::format("{}: truncated: the header of {} dimensions needs {} bytes, the file has {}", source, dims, header, b.size()));
  NdArray a;
  for (int d = 0; d < dims; ++d) a.shape.push_back(static_cast<Index>(read_array_unsigned(b, 4 + 4 * static_cast<std::size_t>(d), 4, true)));
  const std::size_t count = array_element_count(a.shape, source);
  check_array_data_size(b.size() - header, count, t.width, a.shape, source);
  decode_array(b, header, t, a);
  return a;
}

NdArray read_idx(const std::filesystem::path& path) { return parse_idx(read_array_file_bytes(path, path.string()), path.string()); }

// -----------------------------------------------------------------------------------------------
// NPY

namespace {

/// The value of `key` in a .npy header (a Python dict literal), as its text.
std::string npy_header_field(const std::string& header, const std::string& key, const std::string& source) {
  const std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw InputError(fmt::format("{}: the .npy header has no '{}': {}", source, key, header));
  std::size_t v = header.find(':', at);
  if (v == std::string::npos) throw InputError(fmt::format("{}: a malformed .npy header: {}", source, header));
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  if (v >= header.size()) throw InputError(fmt::format("{}: a malformed .npy header: {}", source, header));
  const char open = header[v];
  const char close = open == '\'' ? '\'' : open == '"' ? '"' : open == '(' ? ')' : open == '[' ? ']' : ',';
  const std::size_t end = header.find(close, v + 1);
  if (end == std::string::npos) throw InputError(fmt::format("{}: a malformed .npy header: {}", source, header));
  return close == ',' ? header.substr(v, end - v) : header.substr(v, end - v + 1);
}

}  // namespace

NpyHeader parse_npy_header(const std::string& b, const std::string& source) {
  static const std::string kMagic = "\x93NUMPY";
  if (b.size() < 10 || b.compare(0, 6, kMagic) != 0) throw InputError(source + ": not a .npy file (it must start with \\x93NUMPY)");
  const int major = static_cast<unsigned char>(b[6]);
  if (major < 1 || major > 3) throw InputError(fmt::format("{}: .npy format version {} is not known (1, 2 and 3 are)", source, major));
  const int length_bytes = major == 1 ? 2 : 4;
  if (b.size() < 8 + static_cast<std::size_t>(length_bytes)) throw InputError(source + ": truncated .npy header");
  const std::size_t header_length = read_array_unsigned(b, 8, length_bytes, false), start = 8 + static_cast<std::size_t>(length_bytes);
  if (b.size() < start + header_length) throw InputError(fmt::format("{}: truncated: the .npy header of {} bytes is cut off", source, header_length));
  const std::string header = b.substr(start, header_length);
  std::string descr = npy_header_field(header, "descr", source);
  if (descr.front() == '[') throw InputError(fmt::format("{}: a structured array ({}) is not supported: save plain numeric arrays", source, descr));
  if (descr.size() < 4 || (descr.front() != '\'' && descr.front() != '"'))
    throw InputError(fmt::format("{}: .npy dtype {} is not supported", source, descr));
  descr = descr.substr(1, descr.size() - 2);
  NpyHeader a;
  NpyHeader& t = a;
  const char order = descr[0];
  t.kind = descr[1];
  const std::string width_text = descr.substr(2);
  const bool width_ok = width_text == "1" || width_text == "2" || width_text == "4" || width_text == "8";
  t.width = width_ok ? std::stoi(width_text) : 0;
  const bool kind_ok = (t.kind == 'b' && t.width == 1) || ((t.kind == 'i' || t.kind == 'u') && width_ok) ||
                       (t.kind == 'f' && (t.width == 2 || t.width == 4 || t.width == 8));
  if (!kind_ok || (order != '<' && order != '>' && order != '|' && order != '='))
    throw InputError(fmt::format("{}: .npy dtype '{}' is not supported: valid are bool, (u)int8-64 and float16-64", source, descr));
  t.big_endian = order == '>' || (order == '=' && std::endian::native == std::endian::big);
  const std::string fortran = npy_header_field(header, "fortran_order", source);
  if (fortran != "True" && fortran != "False") throw InputError(fmt::format("{}: fortran_order {} is not True or False", source, fortran));
  a.fortran_order = fortran == "True";
  a.data_offset = start + header_length;
  const std::string shape = npy_header_field(header, "shape", source);
  std::string number;
  for (std::size_t i = 1; i < shape.size(); ++i) {
    const char c = shape[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      number += c;
      if (number.size() > 12) throw InputError(fmt::format("{}: shape {} is too large", source, shape));
    } else if (c == ',' || c == ')') {
      if (!number.empty()) a.shape.push_back(static_cast<Index>(std::stoll(number)));
      number.clear();
    } else if (c != ' ' && c != 'L') {
      throw InputError(fmt::format("{}: a malformed .npy shape {}", source, shape));
    }
  }
  return a;
}

NdArray parse_npy(const std::string& b, const std::string& source) {
  const NpyHeader h = parse_npy_header(b, source);
  const ArrayElementType t{h.kind, h.width, h.big_endian};
  NdArray a;
  a.shape = h.shape;
  const std::size_t count = array_element_count(a.shape, source);
  check_array_data_size(b.size() - h.data_offset, count, t.width, a.shape, source);
  decode_array(b, h.data_offset, t, a);
  if (h.fortran_order && a.shape.size() > 1) {
    // Column-major (first index fastest) to C order.
    std::vector<double> c_order(a.values.size());
    const std::size_t dims = a.shape.size();
    std::vector<Index> index(dims, 0);
    for (std::size_t f = 0; f < a.values.size(); ++f) {
      std::size_t offset = 0;
      for (std::size_t d = 0; d < dims; ++d) offset = offset * static_cast<std::size_t>(a.shape[d]) + static_cast<std::size_t>(index[d]);
      c_order[offset] = a.values[f];
      for (std::size_t d = 0; d < dims && ++index[d] == a.shape[d]; ++d) index[d] = 0;
    }
    a.values.swap(c_order);
  }
  return a;
}

NdArray read_npy(const std::filesystem::path& path) {
  // Read as they are: a .npy file is never gzipped (zlib passes plain bytes through unchanged).
  return parse_npy(read_array_file_bytes(path, path.string()), path.string());
}

// -----------------------------------------------------------------------------------------------
// NPZ: a zip archive of .npy members, read through its central directory (np.savez writes Zip64
// extra fields in the local headers; the central directory has the sizes either way).

namespace {

struct NpzZipReader {
  const std::string& b;
  const std::string& source;
  std::uint64_t u(std::size_t at, int width) const {
    if (at + static_cast<std::size_t>(width) > b.size()) throw InputError(source + ": not a valid .npz file (a zip record runs past the end)");
    return read_array_unsigned(b, at, width, false);
  }
};

std::string inflate_npz_member(const std::string& b, std::size_t at, std::size_t compressed, std::size_t size, const std::string& where) {
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw InputError(where + ": cannot start zlib");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(b.data() + at));
  z.avail_in = static_cast<uInt>(compressed);
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(size);
  const int status = inflate(&z, Z_FINISH);
  const std::size_t produced = z.total_out;
  inflateEnd(&z);
  if (status != Z_STREAM_END || produced != size) throw InputError(where + ": a damaged deflate stream");
  return out;
}

}  // namespace

std::map<std::string, NdArray> parse_npz(const std::string& b, const std::string& source) {
  const NpzZipReader z{b, source};
  constexpr std::uint64_t kEnd = 0x06054b50, kEnd64 = 0x06064b50, kLocator64 = 0x07064b50, kCentral = 0x02014b50, kLocal = 0x04034b50;
  if (b.size() < 22) throw InputError(source + ": not a .npz file (too short for a zip archive)");
  std::size_t end = std::string::npos;
  for (std::size_t at = b.size() - 22 + 1; at-- > 0 && b.size() - at <= 22 + 65535;)
    if (z.u(at, 4) == kEnd) {
      end = at;
      break;
    }
  if (end == std::string::npos) throw InputError(source + ": not a .npz file (no zip end record: save it with np.savez or np.savez_compressed)");
  std::uint64_t entries = z.u(end + 10, 2), directory = z.u(end + 16, 4);
  if (entries == 0xFFFF || directory == 0xFFFFFFFF) {
    if (end < 20 || z.u(end - 20, 4) != kLocator64) throw InputError(source + ": a damaged Zip64 archive (no locator)");
    const std::uint64_t end64 = z.u(end - 20 + 8, 8);
    if (end64 > b.size() || z.u(static_cast<std::size_t>(end64), 4) != kEnd64) throw InputError(source + ": a damaged Zip64 archive");
    entries = z.u(static_cast<std::size_t>(end64) + 32, 8);
    directory = z.u(static_cast<std::size_t>(end64) + 48, 8);
  }
  if (entries > 100000) throw InputError(fmt::format("{}: {} members, more than a .npz file here has", source, entries));
  std::map<std::string, NdArray> arrays;
  std::uint64_t total = 0;  // bytes of all members, decompressed: entries may all point at one member
  std::size_t at = static_cast<std::size_t>(directory);
  for (std::uint64_t e = 0; e < entries; ++e) {
    if (z.u(at, 4) != kCentral) throw InputError(source + ": a damaged zip central directory");
    const std::uint64_t flags = z.u(at + 8, 2), method = z.u(at + 10, 2), crc = z.u(at + 16, 4);
    std::uint64_t compressed = z.u(at + 20, 4), size = z.u(at + 24, 4), local = z.u(at + 42, 4);
    const std::size_t name_length = z.u(at + 28, 2), extra_length = z.u(at + 30, 2), comment_length = z.u(at + 32, 2);
    if (at + 46 + name_length > b.size()) throw InputError(source + ": a damaged zip central directory");
    const std::string name = b.substr(at + 46, name_length);
    // Zip64: the 8-byte values of the fields that hold 0xFFFFFFFF, in order, in extra field 0x0001.
    for (std::size_t x = at + 46 + name_length; x + 4 <= at + 46 + name_length + extra_length;) {
      const std::uint64_t id = z.u(x, 2), length = z.u(x + 2, 2);
      if (id == 1) {
        std::size_t v = x + 4;
        if (size == 0xFFFFFFFF) size = z.u(v, 8), v += 8;
        if (compressed == 0xFFFFFFFF) compressed = z.u(v, 8), v += 8;
        if (local == 0xFFFFFFFF) local = z.u(v, 8);
      }
      x += 4 + static_cast<std::size_t>(length);
    }
    at += 46 + name_length + extra_length + comment_length;
    const std::string where = source + ": member " + name;
    if (flags & 1) throw InputError(where + " is encrypted");
    if (method != 0 && method != 8) throw InputError(fmt::format("{}: compression method {} is not supported (stored or deflate)", where, method));
    total += size;
    if (size > kMaxArrayBytes || total > kMaxArrayBytes) throw InputError(fmt::format("{}: holds more than {} bytes", where, kMaxArrayBytes));
    if (local > b.size() || z.u(static_cast<std::size_t>(local), 4) != kLocal) throw InputError(where + ": a damaged zip local header");
    const std::size_t data = static_cast<std::size_t>(local) + 30 + z.u(static_cast<std::size_t>(local) + 26, 2) + z.u(static_cast<std::size_t>(local) + 28, 2);
    if (data > b.size() || compressed > b.size() - data) throw InputError(where + ": truncated");
    // Deflate expands at most 1032-fold (zlib's technical details): a larger declared size is a
    // damaged header, refused before that many bytes are allocated.
    if (method == 8 && size > 1032 * compressed + 1024)
      throw InputError(fmt::format("{}: declares {} bytes from {} compressed, more than deflate can give (a damaged zip archive)", where, size,
                                   compressed));
    std::string bytes = method == 0 ? b.substr(data, static_cast<std::size_t>(compressed))
                                    : inflate_npz_member(b, data, static_cast<std::size_t>(compressed), static_cast<std::size_t>(size), where);
    if (bytes.size() != size) throw InputError(where + ": its sizes disagree (a damaged zip archive)");
    if (crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())) != crc)
      throw InputError(where + ": its CRC-32 does not match (a damaged file)");
    const std::string key = name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 ? name.substr(0, name.size() - 4) : name;
    arrays[key] = parse_npy(bytes, where);
  }
  return arrays;
}

std::map<std::string, NdArray> read_npz(const std::filesystem::path& path) {
  const std::string source = path.string();
  check_user_file(path, source, kMaxArrayBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(source + ": cannot open file (" + std::strerror(errno) + ")");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npz(bytes, source);
}

// -----------------------------------------------------------------------------------------------
// Images

ImageData make_image_data(const NdArray& images, const NdArray& labels, bool channels_last, const std::string& source) {
  const auto& s = images.shape;
  if (s.size() != 3 && s.size() != 4)
    throw InputError(fmt::format("{}: images of shape {}: give (n, H, W), (n, C, H, W) or, channels last, (n, H, W, C)", source,
                                 array_shape_text(s)));
  ImageData d;
  const Index n = s[0];
  if (s.size() == 3) d = {1, s[1], s[2], {}, {}};
  else if (channels_last) d = {s[3], s[1], s[2], {}, {}};
  else d = {s[1], s[2], s[3], {}, {}};
  if (n < 1 || d.channels < 1 || d.height < 1 || d.width < 1)
    throw InputError(fmt::format("{}: images of shape {} hold no pixels", source, array_shape_text(s)));
  const bool column = labels.shape.size() == 2 && labels.shape[1] == 1;
  if (!(labels.shape.size() == 1 || column) || labels.shape[0] != n)
    throw InputError(fmt::format("{}: {} images but labels of shape {}: give one label per image, shape ({},)", source, n,
                                 array_shape_text(labels.shape), n));
  const Index D = d.channels * d.height * d.width;
  d.images.resize(D, n);
  if (s.size() == 4 && channels_last) {
    for (Index j = 0; j < n; ++j)
      for (Index h = 0; h < d.height; ++h)
        for (Index w = 0; w < d.width; ++w)
          for (Index c = 0; c < d.channels; ++c)
            d.images(c * d.height * d.width + h * d.width + w, j) = images.values[static_cast<std::size_t>(((j * d.height + h) * d.width + w) * d.channels + c)];
  } else {
    d.images = Eigen::Map<const Mat>(images.values.data(), D, n);  // C order: each image's C*H*W values contiguous
  }
  if (!d.images.allFinite()) throw InputError(source + ": the images hold NaN or infinite values");
  for (Index j = 0; j < n; ++j) {
    const double v = labels.values[static_cast<std::size_t>(j)];
    if (!(v >= 0 && v <= 1e9 && v == std::floor(v)))
      throw InputError(fmt::format("{}: label {} (image {}) is not a whole number >= 0", source, v, j));
    d.labels.push_back(static_cast<Index>(v));
  }
  return d;
}

ImageData read_idx_images(const std::filesystem::path& images, const std::filesystem::path& labels) {
  return make_image_data(read_idx(images), read_idx(labels), false, images.string() + " with " + labels.string());
}

Dataset to_dataset(const ImageData& data, const std::string& source, const std::string& label_name) {
  Dataset d;
  d.inputs = data.images;
  d.targets.resize(1, static_cast<Index>(data.labels.size()));
  for (std::size_t j = 0; j < data.labels.size(); ++j) d.targets(0, static_cast<Index>(j)) = static_cast<double>(data.labels[j]);
  for (Index c = 0; c < data.channels; ++c)
    for (Index h = 0; h < data.height; ++h)
      for (Index w = 0; w < data.width; ++w) d.input_names.push_back(fmt::format("c{}_{}_{}", c, h, w));
  d.target_names = {label_name};
  d.source = source;
  return d;
}

ChannelStandardizer ChannelStandardizer::fit(const Mat& images, Index channels) {
  if (images.cols() < 1 || channels < 1 || images.rows() % channels != 0)
    throw InputError(fmt::format("per-channel standardisation: {} images of {} values cannot be split into {} channels",
                                 images.cols(), images.rows(), channels));
  const Index plane = images.rows() / channels;
  ChannelStandardizer s;
  s.mean.resize(channels);
  s.scale.resize(channels);
  for (Index c = 0; c < channels; ++c) {
    const auto block = images.middleRows(c * plane, plane).array();
    const double mean = block.mean();
    const double sd = std::sqrt((block - mean).square().mean());
    s.mean[c] = mean;
    s.scale[c] = sd > 0 && std::isfinite(sd) ? sd : 1.0;
  }
  return s;
}

Mat ChannelStandardizer::transform(const Mat& images) const {
  const Index channels = mean.size();
  if (channels < 1 || images.rows() % channels != 0)
    throw InputError(fmt::format("per-channel standardisation: images of {} values for {} channels", images.rows(), channels));
  const Index plane = images.rows() / channels;
  Mat out(images.rows(), images.cols());
  for (Index c = 0; c < channels; ++c)
    out.middleRows(c * plane, plane) = (images.middleRows(c * plane, plane).array() - mean[c]) / scale[c];
  return out;
}

// -----------------------------------------------------------------------------------------------
// Image files for fits and predictions (data/image_files.hpp), compiled here so that the unity
// build's batches of sources stay as they are.
namespace {

/// The first `count` bytes of a file, decompressed when it is gzipped (zlib passes plain files
/// through), fewer when the file is shorter.
std::string image_file_leading_bytes(const std::filesystem::path& path, std::size_t count) {
  check_user_file(path, path.string());
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw InputError(path.string() + ": cannot open file (" + std::strerror(errno) + ")");
  std::string bytes(count, '\0');
  const int n = gzread(file, bytes.data(), static_cast<unsigned>(count));
  gzclose(file);
  bytes.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return bytes;
}

bool image_file_is_channel_count(Index n) { return n == 1 || n == 3 || n == 4; }

std::string image_file_shape_text(const std::vector<Index>& shape) {
  std::string s = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// Whether (n, a, b, c) images are channels last, from --input-shape when given, else from which
/// axis can hold channels.
bool images_channels_last(const std::vector<Index>& shape, const std::vector<Index>& input_shape, const std::string& where) {
  if (shape.size() != 4) return false;
  if (input_shape.size() == 3) {
    const bool first = shape[1] == input_shape[0] && shape[2] == input_shape[1] && shape[3] == input_shape[2];
    const bool last = shape[3] == input_shape[0] && shape[1] == input_shape[1] && shape[2] == input_shape[2];
    if (first) return false;
    if (last) return true;
    throw InputError(fmt::format("{}: images of shape {} are neither (n, C, H, W) nor (n, H, W, C) for --input-shape {},{},{}", where,
                                 image_file_shape_text(shape), input_shape[0], input_shape[1], input_shape[2]));
  }
  return !image_file_is_channel_count(shape[1]) && image_file_is_channel_count(shape[3]);
}

/// The first array of `npz` named in `names`; empty when none is.
std::string npz_first_present(const std::map<std::string, NdArray>& npz, const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (npz.count(n)) return n;
  return "";
}

std::string npz_array_names(const std::map<std::string, NdArray>& npz) {
  std::string s;
  for (const auto& [name, a] : npz) s += (s.empty() ? "" : ", ") + name + " " + image_file_shape_text(a.shape);
  return s.empty() ? "none" : s;
}

NdArray read_image_labels_file(const std::filesystem::path& path, const std::string& flag) {
  const std::string where = flag + " " + path.string();
  switch (detect_data_file_format(path)) {
    case DataFileFormat::Idx: return read_idx(path);
    case DataFileFormat::Npy: return read_npy(path);
    default: throw InputError(where + ": labels must be an IDX file or a .npy array");
  }
}

}  // namespace

DataFileFormat detect_data_file_format(const std::filesystem::path& path) {
  const std::string b = image_file_leading_bytes(path, 6);
  if (b.size() >= 6 && b.compare(0, 6, "\x93NUMPY") == 0) return DataFileFormat::Npy;
  if (b.size() >= 4 && b[0] == 'P' && b[1] == 'K' && b[2] == '\x03' && b[3] == '\x04') return DataFileFormat::Npz;
  // IDX: two zero bytes, a type code (0x08 ... 0x0E), then the number of dimensions (>= 1). A CSV
  // file never starts with a zero byte.
  if (b.size() >= 4 && b[0] == '\0' && b[1] == '\0') return DataFileFormat::Idx;
  return DataFileFormat::Csv;
}

std::filesystem::path idx_labels_beside(const std::filesystem::path& images) {
  std::string name = images.filename().string();
  const std::size_t at = name.find("images-idx3");
  if (at == std::string::npos) return {};
  name.replace(at, std::strlen("images-idx3"), "labels-idx1");
  std::string plain = name;
  if (plain.size() > 3 && plain.compare(plain.size() - 3, 3, ".gz") == 0) plain.resize(plain.size() - 3);
  for (const std::string& candidate : {name, plain, plain + ".gz"}) {
    const auto path = images.parent_path() / candidate;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return {};
}

ImageData read_image_file(const std::filesystem::path& path, const ImageFileRequest& r, bool* labelled) {
  const std::string where = r.flag + " " + path.string();
  NdArray images, labels;
  bool have_labels = false;
  std::string labels_source;
  const DataFileFormat format = detect_data_file_format(path);
  try {
    switch (format) {
      case DataFileFormat::Idx: images = read_idx(path); break;
      case DataFileFormat::Npy: images = read_npy(path); break;
      case DataFileFormat::Npz: {
        auto npz = read_npz(path);
        const std::string x = npz_first_present(npz, {"x_" + r.role, "x", "X", "images", "data"});
        if (x.empty())
          throw InputError(fmt::format("{}: no images array: name it x_{}, x, X, images or data (the file holds {})", path.string(), r.role,
                                       npz_array_names(npz)));
        images = std::move(npz.at(x));
        if (r.labels.empty()) {
          const std::string y = npz_first_present(npz, {"y_" + r.role, "y", "labels", "targets"});
          if (!y.empty()) {
            labels = std::move(npz.at(y));
            have_labels = true;
            labels_source = path.string() + " (array " + y + ")";
          } else if (r.labels_required) {
            throw InputError(fmt::format("{}: no labels array: name it y_{}, y, labels or targets, or give {} (the file holds {})",
                                         path.string(), r.role, r.labels_flag, npz_array_names(npz)));
          }
        }
        break;
      }
      case DataFileFormat::Csv: throw InputError(path.string() + ": not an IDX, .npy or .npz file");
    }
  } catch (const InputError& e) {
    throw InputError(r.flag + " " + e.what());
  }
  if (!have_labels) {
    std::filesystem::path labels_path = r.labels;
    if (labels_path.empty() && format == DataFileFormat::Idx) labels_path = idx_labels_beside(path);
    if (!labels_path.empty()) {
      try {
        labels = read_image_labels_file(labels_path, r.labels_flag);
      } catch (const InputError& e) {
        throw InputError(r.labels_flag + " " + e.what());
      }
      have_labels = true;
      labels_source = labels_path.string();
    } else if (r.labels_required) {
      throw InputError(fmt::format("{}: where are the labels? Give them with {} FILE (an IDX or .npy file){}", where, r.labels_flag,
                                   format == DataFileFormat::Idx ? " or name the files as MNIST's (...-images-idx3-ubyte[.gz] "
                                                                   "beside ...-labels-idx1-ubyte[.gz])"
                                                                 : ""));
    }
  }
  // Before anything of size n is made: an array with a zero dimension holds no values, whatever
  // its number of images claims.
  if (images.shape.empty() || std::any_of(images.shape.begin(), images.shape.end(), [](Index d) { return d < 1; }))
    throw InputError(fmt::format("{}: an array of shape {} holds no images", where, image_file_shape_text(images.shape)));
  if (images.shape.size() == 2) images.shape = {images.shape[0], 1, images.shape[1]};  // (n, D): one channel of 1 x D
  if (!have_labels) {
    labels.shape = {images.shape[0]};
    labels.values.assign(static_cast<std::size_t>(images.shape[0]), 0.0);
  }
  if (labelled) *labelled = have_labels;
  const bool last = images_channels_last(images.shape, r.input_shape, where);
  return make_image_data(images, labels, last, have_labels ? where + " with labels " + labels_source : where);
}

Dataset load_image_dataset(const std::filesystem::path& path, const ImageFileRequest& request) {
  return to_dataset(read_image_file(path, request), path.string());
}

}  // namespace uqnn
