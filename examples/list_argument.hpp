#pragma once
// Helpers of the example programs: list arguments ("a,b,c" -> {"a", "b", "c"}) and their main.
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace uqnn::examples {

inline std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

/// An example's main: runs `run`, and turns an exception into "NAME: message" on stderr and exit 2.
template <typename Run>
int run_example(const char* name, Run run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  }
}

}  // namespace uqnn::examples
