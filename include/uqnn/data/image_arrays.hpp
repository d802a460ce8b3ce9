#pragma once
/// @file Image data from array files: IDX (the format of MNIST and of Debian's dataset-fashion-mnist,
/// gzipped or not) and NumPy's NPY and NPZ, into images of C x H x W with integer labels, one example
/// per column (channel-major: PyTorch's flattening of [C, H, W]), and per-channel standardisation.
///
/// Why arrays and not CSV: 70,000 Fashion-MNIST images are 55 million numbers; the IDX files hold
/// them as bytes. Every malformed file is an InputError naming the file and what is wrong (magic
/// number, type code, sizes that disagree with the file's length, a truncated or damaged gzip or
/// zip member), never a crash or an allocation of what a corrupt header claims.
/// References: LeCun et al., "The MNIST database" (the IDX format); NumPy's NEP 1 (the .npy format);
/// PKWARE's APPNOTE.TXT (the zip container of .npz, with its Zip64 extensions).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/data/dataset.hpp"

namespace uqnn {

/// An n-dimensional array in C order (the last index fastest), its values as double.
struct NdArray {
  std::vector<Index> shape;
  std::vector<double> values;
  Index size() const;
};

/// Bytes a reader accepts from one file or zip member, decompressed (a larger one is an InputError).
inline constexpr std::size_t kMaxArrayBytes = std::size_t{1} << 31;

/// An IDX file: magic 0 0 <type> <ndims>, big-endian int32 sizes, then the values big-endian (type
/// 0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64). A file
/// starting with gzip's magic bytes is decompressed first, whatever its name.
NdArray read_idx(const std::filesystem::path& path);
/// The same from the (decompressed) bytes; `source` names them in messages.
NdArray parse_idx(const std::string& bytes, const std::string& source);

/// A .npy file (format versions 1-3): dtypes bool, (u)int8/16/32/64 and float16/32/64 of either
/// byte order, C or Fortran order (returned in C order).
NdArray read_npy(const std::filesystem::path& path);
NdArray parse_npy(const std::string& bytes, const std::string& source);
/// What a .npy header says: the dtype (kind 'b', 'i', 'u' or 'f', its width in bytes, its byte
/// order), the order and shape, and where the values begin. Readers of files too large to hold
/// twice (a large model's draws.npy) parse the header from the file's first bytes and read the
/// values themselves; `bytes` must hold at least the whole header.
struct NpyHeader {
  char kind = 'f';
  int width = 8;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<Index> shape;
  std::size_t data_offset = 0;
};
NpyHeader parse_npy_header(const std::string& bytes, const std::string& source);

/// Every array of a .npz file (np.savez or np.savez_compressed: a zip of .npy members, stored or
/// deflated, Zip64 or not), by name without ".npy".
std::map<std::string, NdArray> read_npz(const std::filesystem::path& path);
std::map<std::string, NdArray> parse_npz(const std::string& bytes, const std::string& source);

/// Images with integer labels.
struct ImageData {
  Index channels = 1, height = 1, width = 1;
  Mat images;                 ///< [C*H*W, n], channel-major per column
  std::vector<Index> labels;  ///< n labels, whole numbers >= 0
};

/// `images` of shape (n, H, W) or (n, C, H, W), or (n, H, W, C) with `channels_last` (Keras's and
/// TensorFlow's order, transposed here), and `labels` of shape (n) or (n, 1) holding whole numbers
/// >= 0. Throws InputError naming `source` when the shapes or labels do not fit.
ImageData make_image_data(const NdArray& images, const NdArray& labels, bool channels_last, const std::string& source);

/// IDX images and IDX labels (e.g. train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz).
ImageData read_idx_images(const std::filesystem::path& images, const std::filesystem::path& labels);

/// The images as a Dataset: inputs [C*H*W, n] named c<channel>_<row>_<column> (PyTorch's order),
/// targets [1, n] the label, named `label_name`.
Dataset to_dataset(const ImageData& data, const std::string& source, const std::string& label_name = "label");

/// Per-channel standardisation, as torchvision's Normalize((mean...), (sd...)): every pixel of
/// channel c becomes (x - mean_c) / sd_c with the mean and (population) sd over all pixels of
/// channel c of the fitting images. A constant channel gets sd 1.
struct ChannelStandardizer {
  Vec mean, scale;  ///< per channel
  /// Throws InputError when `images` has no examples or its rows are not a multiple of `channels`.
  static ChannelStandardizer fit(const Mat& images, Index channels);
  /// `images` [C*H*W, n] standardised (the channel count of fit).
  Mat transform(const Mat& images) const;
};

}  // namespace uqnn
