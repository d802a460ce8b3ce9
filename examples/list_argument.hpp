#pragma once
// "a,b,c" -> {"a", "b", "c"} (empty items dropped): the list arguments of the example programs.
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

}  // namespace uqnn::examples
