#pragma once
/// @file Data files for fits and predictions that hold image arrays rather than a CSV table: an IDX
/// images file (its labels in a second IDX file), a .npy array (labels in a second file) or a .npz
/// archive of both. Told apart from a CSV file by their content, not their names.
///
/// Why a layer above image_arrays.hpp: the CLI's `--data`, `--test-data` and `--ood-data` name one
/// file each, so the labels of an IDX or .npy file must be found (MNIST's naming convention) or
/// given (`--labels`), an .npz file's arrays chosen by name, and the channel order decided; each
/// with a message naming the flag and the file.
/// References: LeCun et al., "The MNIST database" (the IDX format and its file names); NumPy's
/// NEP 1 (.npy); Keras's `mnist.npz` (arrays x_train, y_train, x_test, y_test).
#include <filesystem>
#include <string>
#include <vector>

#include "uqnn/data/dataset.hpp"
#include "uqnn/data/image_arrays.hpp"

namespace uqnn {

/// What a data file holds, by its first bytes (a gzipped file by its decompressed first bytes).
enum class DataFileFormat { Csv, Idx, Npy, Npz };

/// The format of `path` (an existing file): IDX (magic 0 0 <type> <ndims>), .npy ("\x93NUMPY"),
/// .npz (a zip: "PK"), anything else CSV. Throws InputError when the file cannot be read.
DataFileFormat detect_data_file_format(const std::filesystem::path& path);

/// How to read one image file.
struct ImageFileRequest {
  std::filesystem::path labels;       ///< labels file (IDX or .npy); empty: MNIST's name convention (IDX) or none
  std::string flag = "--data";        ///< the option that named the file, for messages
  std::string labels_flag = "--labels";
  /// "train" or "test": which of an .npz file's x_train / x_test arrays to prefer.
  std::string role = "train";
  bool labels_required = true;        ///< false for unlabelled data (--ood-data): labels are 0
  /// C,H,W (or H,W) as --input-shape gives it, to tell (n, C, H, W) from (n, H, W, C); empty:
  /// channels first unless only the last axis can be one (1, 3 or 4 values) and the first cannot.
  std::vector<Index> input_shape;
};

/// The labels file of an IDX images file by MNIST's convention: "...-images-idx3-ubyte[.gz]" ->
/// "...-labels-idx1-ubyte[.gz]" (gzipped or not) in the same directory; empty when there is none.
std::filesystem::path idx_labels_beside(const std::filesystem::path& images);

/// Reads the images (and labels) of an IDX, .npy or .npz file. Images of shape (n, H, W),
/// (n, C, H, W) or (n, H, W, C), or (n, D) flat (then one channel of 1 x D); labels (n) or (n, 1)
/// of whole numbers >= 0. An .npz file's images are the first present of x_<role>, x, X, images,
/// data, and its labels of y_<role>, y, labels, targets. Throws InputError naming the flag, the
/// file and what is wrong.
/// `labelled` (when given) says whether labels were found (with labels_required false they may not be).
ImageData read_image_file(const std::filesystem::path& path, const ImageFileRequest& request, bool* labelled = nullptr);

/// read_image_file as a Dataset (to_dataset: inputs c<channel>_<row>_<column>, target "label").
Dataset load_image_dataset(const std::filesystem::path& path, const ImageFileRequest& request);

}  // namespace uqnn
