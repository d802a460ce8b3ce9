// The host a benchmark ran on, for its output: the figures depend on the host kind (Intel with
// full-width AVX-512, AMD Zen 4 executing it at half width, Zen 5), and a virtual machine's model
// name alone can be as bare as "Intel(R) Xeon(R) Processor".
#pragma once

#include <fstream>
#include <string>

namespace uqnn::bench {

/// /proc/cpuinfo's model name, CPU family and model numbers, and whether AVX-512 is there (the same
/// text as bench_util.cpu_model() of the Python scripts).
inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string model = "unknown", family = "?", number = "?", avx512 = "no AVX-512";
  for (std::string line; std::getline(in, line);) {
    const std::size_t colon = line.find(':');
    const std::string value = colon == std::string::npos || colon + 2 > line.size() ? "" : line.substr(colon + 2);
    if (line.rfind("model name", 0) == 0) model = value;
    else if (line.rfind("cpu family", 0) == 0) family = value;
    else if (line.rfind("model\t", 0) == 0) number = value;
    if (line.rfind("flags", 0) == 0) {
      if ((" " + value + " ").find(" avx512f ") != std::string::npos) avx512 = "AVX-512";
      break;
    }
  }
  return model + " (CPU family " + family + ", model " + number + ", " + avx512 + ")";
}

}  // namespace uqnn::bench
