// libFuzzer harness: `uqnn diagnose`'s readers (long chain,draw layout and CmdStan's CSV), then
// the summary and the warnings on whatever they accept.
#include <sstream>

#include "fuzz_input.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/io/draws_csv.hpp"
#include "uqnn/diagnostics/summary.hpp"
#include "uqnn/diagnostics/warnings.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = uqnn::fuzz::as_text(data, size);
  try {
    // As diagnose reads a file: either layout, chosen by its header.
    const uqnn::DrawsTable table =
        uqnn::read_draws_csv(uqnn::fuzz::write_file("draws.csv", text).string());
    const auto quantities = uqnn::diagnostics::without_sampler_columns(table);
    const auto rows = uqnn::diagnostics::summarize(quantities);
    auto warnings = uqnn::diagnostics::draws_warnings(quantities);
    const auto sampler = uqnn::diagnostics::sampler_stats_summary(table, 10);
    warnings = uqnn::diagnostics::convergence_warnings(rows, std::max<uqnn::Index>(1, quantities.num_chains()), sampler);
  } catch (const uqnn::InputError&) {
  }
  return 0;
}
