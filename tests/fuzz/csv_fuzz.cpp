// libFuzzer harness: the data CSV reader (io/csv: RFC 4180 quoting, BOM, CRLF, header checks).
// Bad input may only raise InputError; anything else (crash, other exception, leak, UB) is a finding.
#include "fuzz_input.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/io/csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const uqnn::CsvTable table = uqnn::parse_csv(uqnn::fuzz::as_text(data, size), "fuzz.csv");
    (void)table.find_column("y");
  } catch (const uqnn::InputError&) {
  }
  return 0;
}
