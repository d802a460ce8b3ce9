#include "uqnn/services/options.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (char c : text) {
    if (c == ',') {
      items.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  items.push_back(item);
  // Surrounding blanks are not part of an item; an empty text is the empty list.
  for (auto& s : items) {
    const auto first = s.find_first_not_of(' ');
    s = first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(' ') - first + 1);
  }
  if (items.size() == 1 && items.front().empty()) items.clear();
  return items;
}

/// A number written by a user: the whole text must be a decimal number ("1e-3", "-2", ".5"): no
/// hexadecimal ("0x10" was read as 16), no "nan" or "inf", no blanks.
std::optional<double> parse_number(const std::string& text) {
  std::size_t i = 0;
  const auto digits = [&]() {
    const std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  std::size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string OptionSpec::flag() const {
  std::string f = "--" + name;
  for (char& c : f)
    if (c == '_') c = '-';
  return f;
}

std::string OptionSpec::valid_values() const {
  std::string bounds;
  if (minimum && maximum)
    bounds = fmt::format(" in {}{:g}, {:g}{}", minimum_exclusive ? "(" : "[", *minimum, *maximum, maximum_exclusive ? ")" : "]");
  else if (minimum)
    bounds = fmt::format(" {} {:g}", minimum_exclusive ? ">" : ">=", *minimum);
  else if (maximum)
    bounds = fmt::format(" {} {:g}", maximum_exclusive ? "<" : "<=", *maximum);
  switch (type) {
    case OptionType::Flag: return "true or false";
    case OptionType::Integer: return "an integer" + bounds;
    case OptionType::Real: return "a finite number" + bounds;
    case OptionType::Text: return "a text";
    case OptionType::Choice: return "one of: " + join(choices, ", ");
    case OptionType::IntegerList: return "comma-separated integers" + (bounds.empty() ? "" : ", each" + bounds);
    case OptionType::TextList: return "comma-separated names";
    case OptionType::Path: return must_exist ? "an existing file" : "a path";
  }
  return "";
}

/// A value as a user would write it: JSON shows NaN and infinity as "null".
static std::string shown_option_value(const nlohmann::json& value) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    const double v = value.get<double>();
    return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
  }
  return value.dump();
}

nlohmann::json OptionSpec::check(const nlohmann::json& value, const std::string& where) const {
  const auto fail = [&](const std::string& got) -> nlohmann::json {
    throw InputError(fmt::format("{}: {} is invalid: it must be {}", where, got, valid_values() + (nullable ? " (or unset)" : "")));
  };
  if (value.is_null()) return nullable ? value : fail("an unset value");
  const auto in_range = [&](double v) {
    if (!std::isfinite(v)) return false;
    if (minimum && (minimum_exclusive ? !(v > *minimum) : !(v >= *minimum))) return false;
    if (maximum && (maximum_exclusive ? !(v < *maximum) : !(v <= *maximum))) return false;
    return true;
  };
  const auto integer = [&](const nlohmann::json& v) -> std::optional<long long> {
    if (v.is_number_integer()) return v.get<long long>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15) return static_cast<long long>(d);
    }
    return std::nullopt;
  };
  switch (type) {
    case OptionType::Flag:
      if (value.is_boolean()) return value;
      return fail(value.dump());
    case OptionType::Integer: {
      const auto v = integer(value);
      if (!v || !in_range(static_cast<double>(*v))) return fail(shown_option_value(value));
      return *v;
    }
    case OptionType::Real: {
      if (!value.is_number() || !in_range(value.get<double>())) return fail(shown_option_value(value));
      return value.get<double>();
    }
    case OptionType::Text:
    case OptionType::Path:
      // A checked text may be given as a number (Python's checkpoint_every=500, TOML's 500).
      if (type == OptionType::Text && text_check && value.is_number_integer()) return check(nlohmann::json(value.dump()), where);
      if (!value.is_string()) return fail(value.dump());
      if (type == OptionType::Path && must_exist) {
        std::error_code ec;
        const auto status = std::filesystem::status(value.get<std::string>(), ec);
        if (!std::filesystem::exists(status)) throw InputError(fmt::format("{}: {} does not exist", where, value.get<std::string>()));
        // A FIFO without a writer would block the reader's open(2) beyond any signal; a device never
        // ends. (A directory is for the reader to judge: --dei-init takes a run directory.)
        if (!std::filesystem::is_regular_file(status) && !std::filesystem::is_directory(status))
          throw InputError(fmt::format("{}: {} is {}, not a file: give a regular file", where, value.get<std::string>(),
                                       std::filesystem::is_fifo(status) ? "a FIFO (named pipe)"
                                       : std::filesystem::is_socket(status) ? "a socket"
                                                                            : "a device"));
      }
      if (text_check) text_check(value.get<std::string>(), where);
      return value;
    case OptionType::Choice:
      if (!value.is_string() || std::find(choices.begin(), choices.end(), value.get<std::string>()) == choices.end())
        return fail(value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump());
      return value;
    case OptionType::IntegerList: {
      if (value.is_string()) return check(parse_text(value.get<std::string>(), where), where);
      if (!value.is_array()) return fail(value.dump());
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : value) {
        const auto v = integer(item);
        if (!v || !in_range(static_cast<double>(*v))) return fail(value.dump());
        out.push_back(*v);
      }
      return out;
    }
    case OptionType::TextList: {
      if (value.is_string()) return split_commas(value.get<std::string>());
      if (!value.is_array()) return fail(value.dump());
      for (const auto& item : value)
        if (!item.is_string()) return fail(value.dump());
      return value;
    }
  }
  return value;
}

nlohmann::json OptionSpec::parse_text(const std::string& text, const std::string& where) const {
  const auto fail = [&]() -> nlohmann::json {
    throw InputError(fmt::format("{}: '{}' is invalid: it must be {}", where, text, valid_values()));
  };
  switch (type) {
    case OptionType::Flag:
      if (text == "true" || text == "1" || text == "on" || text == "yes") return true;
      if (text == "false" || text == "0" || text == "off" || text == "no") return false;
      return fail();
    case OptionType::Integer:
    case OptionType::Real: {
      const auto v = parse_number(text);
      if (!v) return fail();
      if (type == OptionType::Real) return *v;
      if (*v != std::floor(*v) || std::abs(*v) > 9e15) return fail();
      return static_cast<long long>(*v);
    }
    case OptionType::IntegerList: {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& item : split_commas(text)) {
        const auto v = parse_number(item);
        if (!v || *v != std::floor(*v) || std::abs(*v) > 9e15) return fail();
        list.push_back(static_cast<long long>(*v));
      }
      return list;
    }
    case OptionType::TextList: return split_commas(text);
    case OptionType::Text:
    case OptionType::Choice:
    case OptionType::Path: return text;
  }
  return fail();
}

const OptionSpec* OptionGroup::find(const std::string& option_name) const {
  for (const auto& o : options)
    if (o.name == option_name) return &o;
  return nullptr;
}

}  // namespace uqnn
