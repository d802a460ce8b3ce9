// libFuzzer harness: split-index files (--train-indices / --test-indices), one file read alone and
// as the train part of a split with a fixed test file.
#include "fuzz_input.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/data/split.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = uqnn::fuzz::as_text(data, size);
  const auto train = uqnn::fuzz::write_file("train.txt", text);
  static const auto test = uqnn::fuzz::write_file("test.txt", "3\n7\n");
  for (uqnn::Index rows : {0, 10, 1000}) {
    try {
      (void)uqnn::read_index_file(train, rows);
      (void)uqnn::read_split(train, test, rows, {});
    } catch (const uqnn::InputError&) {
    }
  }
  return 0;
}
