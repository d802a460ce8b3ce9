// libFuzzer harness: `--config FILE` (toml++ through read_toml_options), then the option checks of
// make_fit_config on whatever keys and values it accepts.
#include "fuzz_input.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    uqnn::FitRequest request;
    request.given = uqnn::read_toml_options(uqnn::fuzz::write_file("fit.toml", uqnn::fuzz::as_text(data, size)));
    (void)uqnn::make_fit_config(request);
  } catch (const uqnn::InputError&) {
  }
  return 0;
}
