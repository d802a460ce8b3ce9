#pragma once
/// @file One declaration per option. Every setting of `uqnn fit` — data, model, probability,
/// training, and each method's own — is declared once, as a field of a typed Params struct in an
/// OptionSchema: name, type, default (the struct's own initialiser), valid range or choices, help
/// text and the paper it comes from. The CLI flags (`--ens-members`), the TOML keys
/// (`ens_members`), the Python keyword arguments, `--help` and model.json's record of the settings
/// are all generated from these declarations (src/services/fit_options.cpp lists the fit's groups;
/// each src/services/method_<name>.cpp declares and registers its own).
///
/// Names are snake_case. The CLI flag is "--" + the name with '-' for '_'; a flag of type Flag
/// also has its "--no-" form.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/types.hpp"

namespace uqnn {

enum class OptionType { Flag, Integer, Real, Text, Choice, IntegerList, TextList, Path };

/// The declaration of one option.
struct OptionSpec {
  std::string name;                        ///< snake_case: TOML key and Python keyword
  OptionType type = OptionType::Text;
  nlohmann::json default_value;            ///< null: unset by default (e.g. a learned noise)
  std::optional<double> minimum, maximum;  ///< valid range of a number (or of each list element)
  bool minimum_exclusive = false, maximum_exclusive = false;
  std::vector<std::string> choices;        ///< Choice: the valid values
  bool nullable = false;                   ///< may be left unset (null / None)
  bool must_exist = false;                 ///< Path: must name an existing file or directory
  std::string help;
  std::string reference;                   ///< where the option and its default come from
  /// Text: a check of the value's form beyond its type (e.g. --checkpoint-every's "500" or "10m");
  /// throws InputError "<where>: ...".
  std::function<void(const std::string& text, const std::string& where)> text_check;
  /// Options that cannot be given together with this one (each says the same thing another way,
  /// e.g. --valid FILE and --valid-fraction): giving both is refused, never one silently winning.
  std::vector<std::string> conflicts_with;
  /// This option is read only when option `only_when_option` has one of `only_when_values`
  /// (e.g. --classes with --likelihood categorical): given otherwise, it is refused.
  std::string only_when_option;
  std::vector<std::string> only_when_values;
  /// A number that must not exceed option `at_most_option`'s value (a range's lower end).
  std::string at_most_option;

  /// "--ens-members".
  std::string flag() const;
  /// What a valid value is, for errors and --help: "an integer >= 1", "one of: diag, dense, unit".
  std::string valid_values() const;
  /// `value` converted to this option's type (an integer given for a Real becomes a number, a
  /// comma-separated string for a list becomes the list) and checked against type, range and
  /// choices; throws InputError "<where>: ..." naming the valid values.
  nlohmann::json check(const nlohmann::json& value, const std::string& where) const;
  /// The value of command-line text ("10,10", "true", "1e-3") in this option's type; check() then
  /// checks its range. Throws InputError when the text is not of the type.
  nlohmann::json parse_text(const std::string& text, const std::string& where) const;
};

/// Options read by one part of a fit (data, model, ...) or by one method family.
struct OptionGroup {
  std::string name;   ///< "data", "nuts", "chains", ...
  std::string title;  ///< heading in --help
  std::vector<OptionSpec> options;
  const OptionSpec* find(const std::string& option_name) const;
};

/// A typed Params struct bound to its option declarations. The default of each option is the value
/// of its field in a default-constructed Params, so it is written once, in the struct.
///
///     struct NutsParams { int max_depth = 10; ... };
///     const OptionSchema<NutsParams>& schema() {
///       static const auto s = OptionSchema<NutsParams>("nuts", "NUTS")
///           .add("max_depth", &NutsParams::max_depth, "maximum tree depth").at_least(1).cite("Hoffman & Gelman 2014");
///       return s;
///     }
template <typename Params>
class OptionSchema {
 public:
  OptionSchema(std::string name, std::string title) { group_.name = std::move(name), group_.title = std::move(title); }

  /// An option bound to a data member.
  template <typename T>
  OptionSchema& add(const std::string& name, T Params::*member, const std::string& help) {
    return bind<T>(name, help, [member](Params& p) -> T& { return p.*member; });
  }
  /// An option bound to a nested field: `access` returns a reference to it.
  template <typename Access>
  OptionSchema& add_nested(const std::string& name, Access access, const std::string& help) {
    using T = std::remove_reference_t<std::invoke_result_t<Access, Params&>>;
    return bind<T>(name, help, std::function<T&(Params&)>(access));
  }

  /// A Choice bound to an enum-like field (or any value type): `names` maps each valid text to its value.
  template <typename Access, typename E = std::remove_reference_t<std::invoke_result_t<Access, Params&>>>
  OptionSchema& add_choice(const std::string& name, Access access, std::vector<std::pair<std::string, E>> names,
                           const std::string& help) {
    OptionSpec spec;
    spec.name = name;
    spec.help = help;
    spec.type = OptionType::Choice;
    for (const auto& [text, value] : names) spec.choices.push_back(text);
    Field f;
    f.set = [access, names](Params& p, const nlohmann::json& v) {
      for (const auto& [text, value] : names)
        if (text == v.get<std::string>()) access(p) = value;
    };
    f.get = [access, names](const Params& p) {
      for (const auto& [text, value] : names)
        if (value == access(const_cast<Params&>(p))) return nlohmann::json(text);
      return nlohmann::json();
    };
    spec.default_value = f.get(Params{});
    group_.options.push_back(std::move(spec));
    fields_.push_back(std::move(f));
    return *this;
  }

  // Modifiers of the option added last.
  OptionSchema& at_least(double v) { return set([v](OptionSpec& s) { s.minimum = v; }); }
  OptionSchema& above(double v) { return set([v](OptionSpec& s) { s.minimum = v, s.minimum_exclusive = true; }); }
  OptionSchema& at_most(double v) { return set([v](OptionSpec& s) { s.maximum = v; }); }
  OptionSchema& below(double v) { return set([v](OptionSpec& s) { s.maximum = v, s.maximum_exclusive = true; }); }
  OptionSchema& one_of(std::initializer_list<const char*> values) {
    return set([values](OptionSpec& s) {
      s.type = OptionType::Choice;
      s.choices.assign(values.begin(), values.end());
    });
  }
  /// Choices from a registry's names (core/registry.hpp): the list is declared where the names are.
  OptionSchema& one_of(std::vector<std::string> values) {
    return set([values = std::move(values)](OptionSpec& s) {
      s.type = OptionType::Choice;
      s.choices = values;
    });
  }
  OptionSchema& existing() { return set([](OptionSpec& s) { s.must_exist = true; }); }
  /// A Text option whose form `check(text, where)` checks (throwing InputError).
  OptionSchema& checked_by(std::function<void(const std::string&, const std::string&)> check) {
    return set([check](OptionSpec& s) { s.text_check = check; });
  }
  /// Refuses this option given together with any of `names` (see OptionSpec::conflicts_with).
  OptionSchema& conflicts_with(std::initializer_list<const char*> names) {
    return set([names](OptionSpec& s) { s.conflicts_with.assign(names.begin(), names.end()); });
  }
  /// Refuses this option unless option `name` has one of `values` (see OptionSpec::only_when_option).
  OptionSchema& only_when(const char* name, std::initializer_list<const char*> values) {
    return set([name, values](OptionSpec& s) {
      s.only_when_option = name;
      s.only_when_values.assign(values.begin(), values.end());
    });
  }
  /// This number must not exceed option `name`'s value (see OptionSpec::at_most_option).
  OptionSchema& at_most_option(const char* name) { return set([name](OptionSpec& s) { s.at_most_option = name; }); }
  OptionSchema& cite(const std::string& reference) { return set([&reference](OptionSpec& s) { s.reference = reference; }); }

  const OptionGroup& group() const { return group_; }

  /// Params from checked settings (option name -> value, as make_fit_config produces them); options
  /// absent from `settings` keep their defaults.
  Params read(const nlohmann::json& settings) const {
    Params p;
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      const auto it = settings.find(group_.options[i].name);
      if (it != settings.end()) fields_[i].set(p, *it);
    }
    return p;
  }
  /// Every option's value in `p` (name -> value).
  nlohmann::json write(const Params& p) const {
    nlohmann::json j = nlohmann::json::object();
    for (std::size_t i = 0; i < fields_.size(); ++i) j[group_.options[i].name] = fields_[i].get(p);
    return j;
  }

 private:
  struct Field {
    std::function<void(Params&, const nlohmann::json&)> set;
    std::function<nlohmann::json(const Params&)> get;
  };

  template <typename T>
  OptionSchema& bind(const std::string& name, const std::string& help, std::function<T&(Params&)> access) {
    OptionSpec spec;
    spec.name = name;
    spec.help = help;
    spec.type = option_type<T>();
    spec.nullable = is_optional<T>::value;
    Field f;
    f.set = [access](Params& p, const nlohmann::json& v) { from_value(v, access(p)); };
    f.get = [access](const Params& p) { return to_value(access(const_cast<Params&>(p))); };
    spec.default_value = f.get(Params{});
    group_.options.push_back(std::move(spec));
    fields_.push_back(std::move(f));
    return *this;
  }
  template <typename Modify>
  OptionSchema& set(Modify modify) {
    modify(group_.options.back());
    return *this;
  }

  template <typename T>
  struct is_optional : std::false_type {};
  template <typename T>
  struct is_optional<std::optional<T>> : std::true_type {};

  template <typename T>
  static constexpr OptionType option_type() {
    if constexpr (is_optional<T>::value) return option_type<typename T::value_type>();
    else if constexpr (std::is_same_v<T, bool>) return OptionType::Flag;
    else if constexpr (std::is_integral_v<T>) return OptionType::Integer;
    else if constexpr (std::is_floating_point_v<T>) return OptionType::Real;
    else if constexpr (std::is_same_v<T, std::filesystem::path>) return OptionType::Path;
    else if constexpr (std::is_same_v<T, std::vector<std::string>>) return OptionType::TextList;
    else if constexpr (std::is_same_v<T, std::vector<Index>>) return OptionType::IntegerList;
    else {
      static_assert(std::is_same_v<T, std::string>, "unsupported option type");
      return OptionType::Text;
    }
  }
  template <typename T>
  static nlohmann::json to_value(const T& v) {
    if constexpr (is_optional<T>::value) return v ? to_value(*v) : nlohmann::json();
    else if constexpr (std::is_same_v<T, std::filesystem::path>) return v.string();
    else return nlohmann::json(v);
  }
  template <typename T>
  static void from_value(const nlohmann::json& j, T& v) {
    if constexpr (is_optional<T>::value) {
      if (j.is_null()) v.reset();
      else from_value(j, v.emplace());
    } else if constexpr (std::is_same_v<T, std::filesystem::path>) {
      v = j.get<std::string>();
    } else {
      v = j.get<T>();
    }
  }

  OptionGroup group_;
  std::vector<Field> fields_;
};

/// A value given for an option by the user, and how to name it in an error: the flag as typed
/// ("--ens-members"), "fit.toml:12:1: ens_members" or the Python keyword.
struct GivenOption {
  std::string name;
  nlohmann::json value;
  std::string where;
};

/// The options set in a TOML file: `key = value` at the top level or inside a table named after an
/// option group (`[nuts]`); keys are option names (snake_case; '-' accepted for '_'). Each value is
/// named "file:line:column: key" in errors. Throws InputError for a syntax error, with its position.
std::vector<GivenOption> read_toml_options(const std::filesystem::path& path);

}  // namespace uqnn
