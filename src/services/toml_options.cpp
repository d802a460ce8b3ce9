// Options from a TOML file (toml++), for `uqnn fit --config` and the other doors that take files.
#include <fmt/format.h>

#include <toml++/toml.h>

#include <map>

#include "uqnn/core/error.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn {

namespace {

/// An options file is a few lines; this bounds what a wrong --config can cost.
constexpr std::uintmax_t kMaxTomlBytes = 1 << 20;

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

/// Tables are option groups (`[training]`, `[nuts]`); a key inside one must be an option of that
/// group (a key in the wrong table, or a table of no group, was silently read as if at the top).
void collect(const std::filesystem::path& path, const toml::table& table, const OptionGroup* group,
             const std::map<std::string, OptionGroup>& groups, std::vector<GivenOption>& out,
             std::map<std::string, std::string>& seen) {
  for (const auto& [key, node] : table) {
    std::string name(key.str());
    for (char& c : name)
      if (c == '-') c = '_';
    if (const auto* sub = node.as_table()) {
      if (group) throw InputError(fmt::format("{}: tables nest one level at most ([group] then keys)", where(path, node, name)));
      const auto it = groups.find(name);
      if (it == groups.end()) {
        std::string names;
        for (const auto& [n, g] : groups) names += (names.empty() ? "" : ", ") + n;
        throw InputError(fmt::format("{}: [{}] is not an option group; tables are one of: {} (or put the keys at the top)",
                                     where(path, node, name), name, names));
      }
      collect(path, *sub, &it->second, groups, out, seen);
      continue;
    }
    const std::string w = where(path, node, name);
    if (group && !group->find(name)) {
      std::string home;
      for (const auto& [n, g] : groups)
        if (g.find(name)) home = n;
      throw InputError(fmt::format("{}: is not an option of [{}]{}", w, group->name,
                                   home.empty() ? " (there is no such option: uqnn fit --help lists them)"
                                                : fmt::format(" (it is in [{}], or put it at the top)", home)));
    }
    // The same option twice in one file (`epochs` and `[training] epochs`): which was meant?
    if (const auto it = seen.find(name); it != seen.end())
      throw InputError(fmt::format("{}: is given twice in this file (also at {}): give it once", w, it->second));
    seen.emplace(name, w.substr(0, w.size() - name.size() - 2));
    out.push_back({name, to_json(node, w), w});
  }
}

}  // namespace

std::vector<GivenOption> read_toml_options(const std::filesystem::path& path) {
  // Only a regular file, of a bounded size: a directory or /dev/zero was read as an empty file,
  // and a FIFO blocked for ever.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw InputError(fmt::format("--config {}: the file does not exist", path.string()));
  if (!std::filesystem::is_regular_file(status))
    throw InputError(fmt::format("--config {}: is not a regular file ({}): give a TOML file", path.string(),
                                 std::filesystem::is_directory(status) ? "a directory" : "a device, FIFO or socket"));
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxTomlBytes)
    throw InputError(fmt::format("--config {}: is larger than {} MiB: an options file is a few lines", path.string(),
                                 kMaxTomlBytes >> 20));
  std::map<std::string, OptionGroup> groups;
  for (OptionGroup& g : all_option_groups()) groups.emplace(g.name, std::move(g));
  try {
    const toml::table table = toml::parse_file(path.string());
    std::vector<GivenOption> out;
    std::map<std::string, std::string> seen;
    collect(path, table, nullptr, groups, out, seen);
    return out;
  } catch (const toml::parse_error& e) {
    const auto& at = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: {}", path.string(), at.line, at.column, e.description()));
  }
}

}  // namespace uqnn
