// libFuzzer harness: the image readers (data/image_arrays.hpp, data/image_files.hpp): IDX (gzipped
// or not), NumPy's .npy and .npz (zip members stored or deflated, Zip64), and the file layer that
// tells them apart, finds an .npz's arrays and decides the channel order. The first byte chooses
// the reader; the rest is the file. Bad input may only raise InputError; anything else (crash,
// other exception, leak, UB, an allocation of what a corrupt header claims) is a finding.
#include "fuzz_input.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/data/image_arrays.hpp"
#include "uqnn/data/image_files.hpp"

namespace {

/// Images (and labels 0) from an array, as the fit would take them.
void as_images(const uqnn::NdArray& a) {
  // Labels of the claimed count only when the array holds that many values (a zero dimension
  // holds none, whatever the others say).
  if (a.shape.size() < 3 || a.shape[0] < 1 || static_cast<std::size_t>(a.shape[0]) > a.values.size()) return;
  uqnn::NdArray labels;
  labels.shape = {a.shape[0]};
  labels.values.assign(static_cast<std::size_t>(a.shape[0]), 0.0);
  (void)uqnn::make_image_data(a, labels, a.shape.size() == 4 && a.shape[3] <= 4, "fuzz");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0: as_images(uqnn::parse_idx(bytes, "fuzz.idx")); break;
      case 1: as_images(uqnn::parse_npy(bytes, "fuzz.npy")); break;
      case 2:
        for (const auto& [name, array] : uqnn::parse_npz(bytes, "fuzz.npz")) as_images(array);
        break;
      default: {
        // The file layer: format by content (gzip looked inside), labels optional.
        const auto path = uqnn::fuzz::write_file("fuzz-images", bytes);
        uqnn::ImageFileRequest request;
        request.labels_required = false;
        (void)uqnn::detect_data_file_format(path);
        if (uqnn::detect_data_file_format(path) != uqnn::DataFileFormat::Csv) (void)uqnn::load_image_dataset(path, request);
      }
    }
  } catch (const uqnn::InputError&) {
  }
  return 0;
}
