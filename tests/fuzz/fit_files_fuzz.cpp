// libFuzzer harness: a run directory as `uqnn predict` and uqnn.load read it (model.json + the
// draws file it names), then predictions from whatever loads. The input is model.json, a line
// "=====", then draws.csv; without the separator it is model.json with a fixed small draws.csv.
#include "fuzz_input.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/services/fitted_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = uqnn::fuzz::as_text(data, size);
  const auto cut = text.find("\n=====\n");
  const std::string_view model = text.substr(0, cut);
  const std::string_view draws = cut == std::string_view::npos ? std::string_view("chain,draw,w\n0,0,0.5\n") : text.substr(cut + 7);
  const auto dir = uqnn::fuzz::work_dir() / "run";
  std::filesystem::create_directories(dir);
  uqnn::fuzz::write_file("run/model.json", model);
  uqnn::fuzz::write_file("run/draws.csv", draws);
  try {
    const uqnn::FittedModel fitted = uqnn::FittedModel::load(dir);
    // Predictions at a few inputs of the right width (bounded: the fuzzer may declare a huge model).
    if (fitted.layout().size() <= 100000 && fitted.draws().size() <= 1000 && fitted.input_names().size() <= 100) {
      uqnn::Rng rng(1, 0);
      const uqnn::Mat x = uqnn::Mat::Constant(static_cast<uqnn::Index>(fitted.input_names().size()), 3, 0.5);
      (void)fitted.predict(x, {0.9}, rng);
    }
  } catch (const uqnn::InputError&) {
  }
  return 0;
}
