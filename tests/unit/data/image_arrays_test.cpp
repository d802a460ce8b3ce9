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
#include "uqnn/data/image_files.hpp"

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
  // A deflated member that claims 2 GB from a few hundred bytes: refused before the allocation
  // (found by the fuzz harness: the reader allocated the declared size).
  std::string bomb = good;
  const std::size_t central = bomb.find("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  for (int k = 0; k < 4; ++k) bomb[central + 24 + static_cast<std::size_t>(k)] = k < 3 ? '\xff' : '\x7f';
  expect_error([&] { parse_npz(bomb, "f.npz"); }, "more than deflate can give");
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

// ---------------------------------------------------------------------------------------------
// The file layer of fits and predictions (data/image_files.hpp)

TEST(ImageFiles, FormatIsToldByContentWhateverTheName) {
  const std::string images = idx(0x08, {2, 2, 2}, std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_EQ(detect_data_file_format(temp_file("fmt_a.csv", images, true)), DataFileFormat::Idx);  // gzipped, misnamed
  EXPECT_EQ(detect_data_file_format(temp_file("fmt_b", images)), DataFileFormat::Idx);
  EXPECT_EQ(detect_data_file_format(kImages + "/fortran.npy"), DataFileFormat::Npy);
  EXPECT_EQ(detect_data_file_format(kImages + "/stored.npz"), DataFileFormat::Npz);
  EXPECT_EQ(detect_data_file_format(temp_file("fmt_c.csv", "x,y\n1,2\n", true)), DataFileFormat::Csv);
  EXPECT_EQ(detect_data_file_format(temp_file("fmt_d.csv", "")), DataFileFormat::Csv);
}

TEST(ImageFiles, IdxLabelsAreFoundByMnistsNamesOrGiven) {
  const auto dir = std::filesystem::temp_directory_path() / "uqnn_image_files_idx";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string pixels("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b", 12);
  const auto write = [&](const std::string& name, const std::string& bytes, bool gzip) {
    const auto path = dir / name;
    gzFile f = gzopen(path.c_str(), gzip ? "wb" : "wbT");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return path;
  };
  const auto images = write("t10k-images-idx3-ubyte.gz", idx(0x08, {3, 2, 2}, pixels), true);
  const auto labels = write("t10k-labels-idx1-ubyte", idx(0x08, {3}, std::string("\x07\x00\x09", 3)), false);  // not gzipped
  EXPECT_EQ(idx_labels_beside(images), labels);
  ImageFileRequest request;
  const ImageData d = read_image_file(images, request);
  EXPECT_EQ(d.labels, (std::vector<Index>{7, 0, 9}));
  EXPECT_EQ(d.images(3, 2), 11.0);
  const Dataset data = load_image_dataset(images, request);
  EXPECT_EQ(data.input_names.front(), "c0_0_0");
  EXPECT_EQ(data.input_names.back(), "c0_1_1");
  EXPECT_EQ(data.targets(0, 2), 9.0);

  // No labels beside, none given: the error names the flag, the file and how to give them.
  const auto alone = write("pictures.idx", idx(0x08, {3, 2, 2}, pixels), false);
  EXPECT_TRUE(idx_labels_beside(alone).empty());
  request.flag = "--test-data";
  request.labels_flag = "--test-labels";
  expect_error([&] { read_image_file(alone, request); }, "--test-data " + alone.string() + ": where are the labels? Give them with --test-labels");
  request.labels = labels;
  EXPECT_EQ(read_image_file(alone, request).labels, (std::vector<Index>{7, 0, 9}));
  // Labels that do not fit the images.
  request.labels = write("few-labels", idx(0x08, {2}, std::string("\x01\x02", 2)), false);
  expect_error([&] { read_image_file(alone, request); }, "3 images but labels of shape (2,)");
  // An array with a zero dimension holds no values whatever its image count claims: refused
  // before labels of that count are made (found by the fuzz harness).
  ImageFileRequest unlabelled;
  unlabelled.labels_required = false;
  const auto empty = write("empty.idx", idx(0x08, {0x7fffffff, 0, 8}, ""), false);
  expect_error([&] { read_image_file(empty, unlabelled); }, "holds no images");
  // Unlabelled data (--ood-data): labels 0, and `labelled` says there were none.
  ImageFileRequest ood;
  ood.labels_required = false;
  bool labelled = true;
  EXPECT_EQ(read_image_file(alone, ood, &labelled).labels, (std::vector<Index>{0, 0, 0}));
  EXPECT_FALSE(labelled);
  std::filesystem::remove_all(dir);
}

TEST(ImageFiles, NpzArraysAreChosenByNameAndRole) {
  // compressed.npz holds `images` (2, 2, 2, 3) and `labels`; stored.npz `images` (2, 2, 3) and `labels`.
  ImageFileRequest request;
  // (n, 2, 2, 3): only the last axis can hold channels (1, 3 or 4 of them): channels last.
  const ImageData hwc = read_image_file(kImages + "/compressed.npz", request);
  EXPECT_EQ(hwc.channels, 3);
  EXPECT_EQ(hwc.images(1 * 4 + 1 * 2 + 0, 0), ((1 * 2 + 0) * 3 + 1) / 4.0);
  EXPECT_EQ(hwc.labels, (std::vector<Index>{1, 0}));
  request.input_shape = {2, 2, 3};  // --input-shape says channels first
  const ImageData chw = read_image_file(kImages + "/compressed.npz", request);
  EXPECT_EQ(chw.channels, 2);
  EXPECT_EQ(chw.images(7, 0), 7.0 / 4);
  request.input_shape = {5, 2, 2};
  expect_error([&] { read_image_file(kImages + "/compressed.npz", request); }, "neither (n, C, H, W) nor (n, H, W, C) for --input-shape 5,2,2");

  // Keras's mnist.npz layout: x_train / y_train for --data, x_test / y_test for --test-data.
  const std::string npy_header = "{'descr': '|u1', 'fortran_order': False, 'shape': (";
  const auto npy = [&](const std::string& shape, const std::string& data) {
    std::string header = npy_header + shape + "), }";
    while ((10 + header.size() + 1) % 64) header += ' ';
    header += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) + static_cast<char>(header.size() >> 8) + header + data;
  };
  // A stored zip of the members (no compression), CRC-32 from zlib.
  const auto zip = [](const std::vector<std::pair<std::string, std::string>>& members) {
    const auto le = [](std::uint32_t v, int n) {
      std::string b;
      for (int i = 0; i < n; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
      return b;
    };
    std::string out, central;
    for (const auto& [name, data] : members) {
      const auto crc = static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
      const auto offset = static_cast<std::uint32_t>(out.size());
      const std::string common = le(20, 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(crc, 4) + le(static_cast<std::uint32_t>(data.size()), 4) +
                                 le(static_cast<std::uint32_t>(data.size()), 4) + le(static_cast<std::uint32_t>(name.size()), 2) + le(0, 2);
      out += "PK\x03\x04" + common + name + data;
      central += "PK\x01\x02" + le(20, 2) + common + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(offset, 4) + name;
    }
    const auto at = static_cast<std::uint32_t>(out.size());
    return out + central + "PK\x05\x06" + le(0, 2) + le(0, 2) + le(static_cast<std::uint32_t>(members.size()), 2) +
           le(static_cast<std::uint32_t>(members.size()), 2) + le(static_cast<std::uint32_t>(central.size()), 4) + le(at, 4) + le(0, 2);
  };
  const auto keras = temp_file("keras.npz", zip({{"x_train.npy", npy("2, 1, 2", std::string("\x01\x02\x03\x04", 4))},
                                                 {"y_train.npy", npy("2,", std::string("\x05\x06", 2))},
                                                 {"x_test.npy", npy("1, 1, 2", std::string("\x07\x08", 2))},
                                                 {"y_test.npy", npy("1,", std::string("\x09", 1))}}));
  ImageFileRequest train;
  EXPECT_EQ(read_image_file(keras, train).labels, (std::vector<Index>{5, 6}));
  ImageFileRequest test;
  test.role = "test";
  const ImageData t = read_image_file(keras, test);
  EXPECT_EQ(t.labels, (std::vector<Index>{9}));
  EXPECT_EQ(t.images(1, 0), 8.0);
  // No images array of a known name, then no labels array: the errors list what the file holds.
  const auto odd = temp_file("odd.npz", zip({{"pixels.npy", npy("1, 1, 2", std::string("\x07\x08", 2))}}));
  expect_error([&] { read_image_file(odd, train); }, "no images array: name it x_train, x, X, images or data (the file holds pixels (1, 1, 2))");
  const auto unlabelled = temp_file("unlabelled.npz", zip({{"x.npy", npy("1, 1, 2", std::string("\x07\x08", 2))}}));
  expect_error([&] { read_image_file(unlabelled, train); }, "no labels array: name it y_train, y, labels or targets, or give --labels");
  ImageFileRequest ood;
  ood.labels_required = false;
  EXPECT_EQ(read_image_file(unlabelled, ood).images.cols(), 1);
}

}  // namespace
}  // namespace uqnn
