// libFuzzer harness: a large run's draws as `uqnn predict`, evaluate, merge and --dei-init read them
// (draws.npy and the draws_stats.csv beside it), then every draw read back. The input is
// draws_stats.csv, a line "=====", then draws.npy's bytes; without the separator it is draws.npy
// beside a fixed two-row draws_stats.csv. The model is fixed at three parameters.
#include "fuzz_input.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/param_layout.hpp"
#include "uqnn/services/fit_output.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = uqnn::fuzz::as_text(data, size);
  const auto cut = text.find("\n=====\n");
  const std::string_view stats = cut == std::string_view::npos ? std::string_view("chain,draw\n0,0\n0,1\n") : text.substr(0, cut + 1);
  const std::string_view npy = cut == std::string_view::npos ? text : text.substr(cut + 7);
  uqnn::fuzz::write_file("draws_stats.csv", stats);
  const auto path = uqnn::fuzz::write_file("draws.npy", npy);
  uqnn::ParamLayout layout;
  layout.add_vector("w", 3, 1);
  try {
    const uqnn::Draws draws = uqnn::read_draws_npy(path, layout);
    double sum = 0;
    draws.for_each([&](uqnn::Index, const uqnn::Vec& theta) { sum += theta.sum(); });
    (void)sum;
  } catch (const uqnn::InputError&) {
  }
  return 0;
}
