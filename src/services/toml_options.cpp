// Options from a TOML file (toml++), for `uqnn fit --config` and the other doors that take files.
#include <fmt/format.h>

#include <toml++/toml.h>

#include "uqnn/core/error.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn {

namespace {

std::string where(const std::filesystem::path& path, const toml::node& node, const std::string& key) {
  const auto& at = node.source().begin;
  return fmt::format("{}:{}:{}: {}", path.string(), at.line, at.column, key);
}

/// A TOML value as JSON; nested tables are not option values.
nlohmann::json to_json(const toml::node& node, const std::string& name_for_errors) {
  if (const auto* v = node.as_boolean()) return v->get();
  if (const auto* v = node.as_integer()) return v->get();
  if (const auto* v = node.as_floating_point()) return v->get();
  if (const auto* v = node.as_string()) return v->get();
  if (const auto* array = node.as_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : *array) out.push_back(to_json(item, name_for_errors));
    return out;
  }
  throw InputError(fmt::format("{}: is not an option value (a boolean, number, string or array)", name_for_errors));
}

void collect(const std::filesystem::path& path, const toml::table& table, bool top, std::vector<GivenOption>& out) {
  for (const auto& [key, node] : table) {
    std::string name(key.str());
    for (char& c : name)
      if (c == '-') c = '_';
    if (const auto* sub = node.as_table()) {
      if (!top) throw InputError(fmt::format("{}: tables nest one level at most ([group] then keys)", where(path, node, name)));
      collect(path, *sub, false, out);
      continue;
    }
    const std::string w = where(path, node, name);
    out.push_back({name, to_json(node, w), w});
  }
}

}  // namespace

std::vector<GivenOption> read_toml_options(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) throw InputError(fmt::format("--config {}: the file does not exist", path.string()));
  try {
    const toml::table table = toml::parse_file(path.string());
    std::vector<GivenOption> out;
    collect(path, table, true, out);
    return out;
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: {}", path.string(), at.line, at.column, e.description()));
  }
}

}  // namespace uqnn
