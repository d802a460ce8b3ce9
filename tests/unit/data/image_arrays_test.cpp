// Image data from IDX, NPY and NPZ files (data/image_arrays.hpp): every element type, gzipped or
// not, NumPy's own .npz files, channel orders, per-channel standardisation, and malformed files as
// InputErrors naming what is wrong.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "uqnn/core/error.hpp"
#include "uqnn/data/image_arrays.hpp"

namespace uqnn {
namespace {

const std::string kImages = std::string(UQNN_TEST_REFERENCE_DIR) + "/images";

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

/// An IDX file of `type` with `dims`, its payload given as raw bytes.
std::string idx(unsigned char type, const std::vector<std::uint32_t>& dims, const std::string& payload) {
  std::string b{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (auto d : dims) b += be32(d);
  return b + payload;
}

std::filesystem::path temp_file(const std::string& name, const std::string& bytes, bool gzip = false) {
  const auto path = std::filesystem::temp_directory_path() / ("uqnn_image_arrays_" + name);
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  return path;
}

void expect_error(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    FAIL() << "expected InputError containing '" << part << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Idx, ReadsEveryElementTypeBigEndian) {
  const NdArray u8 = parse_idx(idx(0x08, {2, 3}, std::string("\x00\x01\x02\xfe\xff\x80", 6)), "u8");
  EXPECT_EQ(u8.shape, (std::vector<Index>{2, 3}));
  EXPECT_EQ(u8.values, (std::vector<double>{0, 1, 2, 254, 255, 128}));
  EXPECT_EQ(parse_idx(idx(0x09, {2}, std::string("\xff\x80", 2)), "i8").values, (std::vector<double>{-1, -128}));
  EXPECT_EQ(parse_idx(idx(0x0B, {2}, std::string("\x01\x02\xff\xfe", 4)), "i16").values, (std::vector<double>{258, -2}));
  EXPECT_EQ(parse_idx(idx(0x0C, {1}, be32(0xfffffffd)), "i32").values, (std::vector<double>{-3}));
  std::uint32_t f;
  const float value = -1.5f;
  std::memcpy(&f, &value, 4);
  EXPECT_EQ(parse_idx(idx(0x0D, {1}, be32(f)), "f32").values, (std::vector<double>{-1.5}));
  std::uint64_t d;
  const double dv = 0.1;
  std::memcpy(&d, &dv, 8);
  EXPECT_EQ(parse_idx(idx(0x0E, {1}, be32(static_cast<std::uint32_t>(d >> 32)) + be32(static_cast<std::uint32_t>(d))), "f64").values,
            (std::vector<double>{0.1}));
}

TEST(Idx, ReadsGzippedAndPlainFilesAsDebianShipsThem) {
  // MNIST's layout: images (n, 28, 28) unsigned bytes and labels (n) unsigned bytes.
  std::string pixels(2 * 4 * 3, '\0');
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>(10 * i);
  const auto images = temp_file("images-idx3-ubyte.gz", idx(0x08, {2, 4, 3}, pixels), true);
  const auto labels = temp_file("labels-idx1-ubyte", idx(0x08, {2}, std::string("\x09\x00", 2)));
  const ImageData data = read_idx_images(images, labels);
  EXPECT_EQ(data.channels, 1);
  EXPECT_EQ(data.height, 4);
  EXPECT_EQ(data.width, 3);
  ASSERT_EQ(data.images.cols(), 2);
  EXPECT_EQ(data.images(0, 0), 0.0);
  EXPECT_EQ(data.images(11, 0), 110.0);
  EXPECT_EQ(data.images(0, 1), 120.0);
  EXPECT_EQ(data.labels, (std::vector<Index>{9, 0}));
  const Dataset ds = to_dataset(data, "fashion");
  EXPECT_EQ(ds.input_names[5], "c0_1_2");
  EXPECT_EQ(ds.targets(0, 0), 9.0);
}

TEST(Idx, MalformedFilesAreInputErrors) {
  expect_error([] { parse_idx("PK\x03\x04", "a.idx"); }, "a.idx: not an IDX file");
  expect_error([] { parse_idx(idx(0x0A, {1}, "x"), "b.idx"); }, "IDX type code 0x0A is not known");
  expect_error([] { parse_idx(idx(0x08, {2, 3}, "12345"), "c.idx"); }, "truncated: shape (2, 3) needs 6 bytes of values, the file holds 5");
  expect_error([] { parse_idx(idx(0x08, {2}, "123"), "d.idx"); }, "1 bytes after the 2 values");
  // A header claiming 2^32 x 2^32 values must not be allocated.
  expect_error([] { parse_idx(idx(0x08, {0xffffffff, 0xffffffff}, ""), "e.idx"); }, "more than a file here can hold");
  expect_error([] { parse_idx(std::string("\0\0\x08\x03\0\0\0\x01", 8), "f.idx"); }, "truncated: the header of 3 dimensions");
  const auto damaged = temp_file("damaged.gz", std::string("\x1f\x8b\x08\x00garbage-garbage", 19));
  expect_error([&] { read_idx(damaged); }, "a damaged or truncated gzip file");
  expect_error([] { read_idx("/nonexistent/x.idx"); }, "/nonexistent/x.idx");
  const auto images = temp_file("img3", idx(0x08, {2, 2, 2}, std::string(8, '\1')));
  const auto labels = temp_file("lab3", idx(0x08, {3}, std::string(3, '\1')));
  expect_error([&] { read_idx_images(images, labels); }, "2 images but labels of shape (3,)");
}

std::string npy(const std::string& descr, const std::string& shape, const std::string& payload, bool fortran = false, int version = 1) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
  const std::size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string b = "\x93NUMPY";
  b += static_cast<char>(version);
  b += '\0';
  const auto n = header.size();
  b += static_cast<char>(n & 0xff);
  b += static_cast<char>((n >> 8) & 0xff);
  if (version > 1) b += std::string(2, '\0');
  return b + header + payload;
}

TEST(Npy, ReadsDtypesByteOrdersAndFortranOrder) {
  EXPECT_EQ(parse_npy(npy("|u1", "(3,)", "\x01\x02\xff"), "u1").values, (std::vector<double>{1, 2, 255}));
  EXPECT_EQ(parse_npy(npy("<i2", "(2,)", std::string("\xfe\xff\x01\x00", 4)), "i2").values, (std::vector<double>{-2, 1}));
  EXPECT_EQ(parse_npy(npy(">i4", "(1,)", std::string("\xff\xff\xff\xfd", 4)), "i4").values, (std::vector<double>{-3}));
  EXPECT_EQ(parse_npy(npy("<f2", "(2,)", std::string("\x00\x3c\x00\xc0", 4)), "f2").values, (std::vector<double>{1.0, -2.0}));
  double v = 0.25;
  std::string f8(8, '\0');
  std::memcpy(f8.data(), &v, 8);
  const NdArray a = parse_npy(npy("<f8", "(1, 1)", f8, false, 2), "f8 v2");
  EXPECT_EQ(a.shape, (std::vector<Index>{1, 1}));
  EXPECT_EQ(a.values, (std::vector<double>{0.25}));
  EXPECT_EQ(parse_npy(npy("|b1", "(2,)", std::string("\x00\x01", 2)), "b1").values, (std::vector<double>{0, 1}));
  // np.save of a Fortran-ordered big-endian int32 (2, 3) array: read back in C order.
  const NdArray fortran = read_npy(kImages + "/fortran.npy");
  EXPECT_EQ(fortran.shape, (std::vector<Index>{2, 3}));
  EXPECT_EQ(fortran.values, (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, MalformedFilesAreInputErrors) {
  expect_error([] { parse_npy("NUMPY", "a.npy"); }, "a.npy: not a .npy file");
  expect_error([] { parse_npy(npy("<c16", "(1,)", std::string(16, '\0')), "b.npy"); }, ".npy dtype '<c16' is not supported");
  expect_error([] { parse_npy(npy("<f8", "(2,)", std::string(8, '\0')), "c.npy"); }, "truncated: shape (2,) needs 16 bytes");
  expect_error([] { parse_npy(npy("<f8", "(99999999999, 99999999999)", ""), "d.npy"); }, "more than a file here can hold");
  std::string structured = npy("<f8", "(1,)", std::string(8, '\0'));
  structured.replace(structured.find("'<f8'"), 5, "[('a', '<f8')]");
  expect_error([&] { parse_npy(structured, "e.npy"); }, "a structured array");
  std::string cut = npy("<f8", "(1,)", std::string(8, '\0'));
  expect_error([&] { parse_npy(cut.substr(0, 20), "f.npy"); }, "truncated");
}

TEST(Npz, ReadsNumpysStoredAndCompressedArchives) {
  const auto stored = read_npz(kImages + "/stored.npz");
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored.at("images").shape, (std::vector<Index>{2, 2, 3}));
  EXPECT_EQ(stored.at("images").values[11], 11.0);
  EXPECT_EQ(stored.at("labels").values, (std::vector<double>{3, 7}));
  const ImageData gray = make_image_data(stored.at("images"), stored.at("labels"), false, "stored.npz");
  EXPECT_EQ(gray.channels, 1);
  EXPECT_EQ(gray.images(5, 0), 5.0);
  EXPECT_EQ(gray.images(0, 1), 6.0);

  const auto compressed = read_npz(kImages + "/compressed.npz");
  const NdArray& images = compressed.at("images");
  EXPECT_EQ(images.shape, (std::vector<Index>{2, 2, 2, 3}));
  EXPECT_EQ(images.values[23], 23.0 / 4);
  // (n, C, H, W): channel-major columns as they are
  const ImageData chw = make_image_data(images, compressed.at("labels"), false, "compressed.npz");
  EXPECT_EQ(chw.channels, 2);
  EXPECT_EQ(chw.height, 2);
  EXPECT_EQ(chw.width, 3);
  EXPECT_EQ(chw.images(7, 0), 7.0 / 4);
  EXPECT_EQ(chw.labels, (std::vector<Index>{1, 0}));
  // the same values read as (n, H, W, C): H 2, W 2, C 3; pixel (h, w) channel c -> row c*4 + h*2 + w
  const ImageData hwc = make_image_data(images, compressed.at("labels"), true, "compressed.npz");
  EXPECT_EQ(hwc.channels, 3);
  EXPECT_EQ(hwc.height, 2);
  EXPECT_EQ(hwc.width, 2);
  EXPECT_EQ(hwc.images(1 * 4 + 1 * 2 + 0, 0), ((1 * 2 + 0) * 3 + 1) / 4.0);
  // Not square: (n, H, W, C) = (1, 2, 3, 2), value = ((h * 3) + w) * 2 + c.
  NdArray last{{1, 2, 3, 2}, {}};
  for (int i = 0; i < 12; ++i) last.values.push_back(i);
  const ImageData wide = make_image_data(last, NdArray{{1}, {4}}, true, "wide");
  EXPECT_EQ(wide.height, 2);
  EXPECT_EQ(wide.width, 3);
  for (Index c = 0; c < 2; ++c)
    for (Index h = 0; h < 2; ++h)
      for (Index w = 0; w < 3; ++w) EXPECT_EQ(wide.images(c * 6 + h * 3 + w, 0), static_cast<double>((h * 3 + w) * 2 + c));
}

TEST(Npz, DamagedArchivesAreInputErrors) {
  std::ifstream in(kImages + "/compressed.npz", std::ios::binary);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_error([] { parse_npz("PK\x03\x04 not a zip at all, just text long enough", "a.npz"); }, "no zip end record");
  expect_error([&] { parse_npz(good.substr(0, good.size() - 30), "b.npz"); }, "b.npz");
  std::string flipped = good;
  flipped[60] = static_cast<char>(flipped[60] ^ 0x55);  // inside the first member's deflate stream
  expect_error([&] { parse_npz(flipped, "c.npz"); }, "c.npz: member images.npy");
  expect_error([] { read_npz("/nonexistent/d.npz"); }, "/nonexistent/d.npz");
  // A changed value in a stored member still parses as an array: only its CRC-32 tells.
  std::ifstream in_stored(kImages + "/stored.npz", std::ios::binary);
  std::string stored((std::istreambuf_iterator<char>(in_stored)), std::istreambuf_iterator<char>());
  const std::size_t values = stored.find("\n", stored.find("NUMPY")) + 1;  // the images' first byte after the .npy header
  stored[values + 2] = static_cast<char>(stored[values + 2] ^ 0x40);
  expect_error([&] { parse_npz(stored, "e.npz"); }, "e.npz: member images.npy: its CRC-32 does not match");
}

TEST(Images, LabelsAndShapesAreChecked) {
  NdArray images{{2, 2, 2}, std::vector<double>(8, 0.5)};
  expect_error([&] { make_image_data(images, NdArray{{2}, {1, 2.5}}, false, "x"); }, "label 2.5 (image 1) is not a whole number");
  expect_error([&] { make_image_data(images, NdArray{{2}, {1, -1}}, false, "x"); }, "is not a whole number >= 0");
  expect_error([&] { make_image_data(NdArray{{8}, std::vector<double>(8, 0.5)}, NdArray{{8}, std::vector<double>(8, 1)}, false, "x"); },
               "images of shape (8,): give (n, H, W)");
  images.values[3] = std::nan("");
  expect_error([&] { make_image_data(images, NdArray{{2}, {1, 0}}, false, "x"); }, "NaN or infinite");
}

TEST(Images, PerChannelStandardisationUsesEachChannelsPixels) {
  Mat X(2 * 4, 3);  // 2 channels of 2x2, 3 images
  for (Index j = 0; j < 3; ++j)
    for (Index r = 0; r < 8; ++r) X(r, j) = r < 4 ? 1.0 + r + j : 100.0;  // channel 1 constant
  const auto s = ChannelStandardizer::fit(X, 2);
  EXPECT_DOUBLE_EQ(s.mean[0], (1 + 2 + 3 + 4) / 4.0 + 1.0);  // + mean of j over 0, 1, 2
  EXPECT_DOUBLE_EQ(s.scale[1], 1.0);                      // a constant channel keeps its scale
  const Mat Z = s.transform(X);
  EXPECT_NEAR(Z.topRows(4).mean(), 0.0, 1e-15);
  EXPECT_NEAR(std::sqrt(Z.topRows(4).array().square().mean()), 1.0, 1e-14);
  EXPECT_EQ(Z.bottomRows(4), Mat::Zero(4, 3));
  expect_error([&] { ChannelStandardizer::fit(X, 3); }, "cannot be split into 3 channels");
}

}  // namespace
}  // namespace uqnn
