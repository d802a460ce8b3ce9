#include "fit_flags.hpp"

#include <fmt/format.h>

#include <map>
#include <ostream>

#include "uqnn/core/error.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn::cli {

namespace {

std::string& stored_command_line() {
  static std::string line;
  return line;
}

std::string metavar(const OptionSpec& o) {
  switch (o.type) {
    case OptionType::Flag: return "";
    case OptionType::Integer: return "INT";
    case OptionType::Real: return "NUM";
    case OptionType::Choice: return "NAME";
    case OptionType::IntegerList: return "INT,...";
    case OptionType::TextList: return "NAME,...";
    case OptionType::Path: return "PATH";
    case OptionType::Text: return "TEXT";
  }
  return "";
}

std::string default_text(const OptionSpec& o) {
  if (o.default_value.is_null()) return "unset";
  if (o.default_value.is_string()) return o.default_value.get<std::string>().empty() ? "none" : o.default_value.get<std::string>();
  if (o.default_value.is_array()) {
    std::string s;
    for (const auto& v : o.default_value) s += (s.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
    return s.empty() ? "none" : s;
  }
  return o.default_value.dump();
}

}  // namespace

void set_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    const bool quote = arg.empty() || arg.find_first_of(" \t'\"$\\") != std::string::npos;
    if (quote) {
      std::string q = "'";
      for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = q + "'";
    }
    line += (i ? " " : "") + arg;
  }
  stored_command_line() = line;
}

const std::string& command_line() { return stored_command_line(); }

std::shared_ptr<FitFlags> FitFlags::add(CLI::App& c, const std::set<std::string>& exclude) {
  auto flags = std::make_shared<FitFlags>();
  FitFlags* self = flags.get();
  self->exclude_ = exclude;
  c.set_help_flag();  // our own --help, grouped and per method
  c.add_flag("-h,--help", self->help_, "print the options (with --method X: only those X reads) and exit");
  c.add_option("--config", self->config_,
               "TOML file with any of these options (keys = option names, e.g. ens_members = 12); the command line "
               "wins over the file, the file over the defaults");
  // One flag per option name: several methods may declare the same option (e.g. --warmup).
  std::map<std::string, OptionSpec> unique;
  for (const OptionGroup& g : all_option_groups())
    for (const OptionSpec& o : g.options)
      if (!exclude.count(o.name)) unique.emplace(o.name, o);
  for (const auto& entry : unique) {
    // (Named copies: clang 14 cannot capture structured bindings in the lambdas below.)
    const std::string name = entry.first;
    const OptionSpec spec = entry.second;
    const std::string flag = spec.flag();
    if (spec.type == OptionType::Flag) {
      // Two plain flags, each collecting what was typed: CLI11's own flag values go through stoll
      // (an abort on "--quiet=99999999999999999999") and read "2" as true; finish() checks the
      // texts, refuses a repetition and --x with --no-x.
      const std::string negated = "--no-" + flag.substr(2);
      FlagTexts& texts = self->flag_texts_[name];
      texts.flag = flag;
      texts.negated = negated;
      texts.positive_option = c.add_flag(flag, texts.positive, spec.help);
      texts.positive_option->group("");
      texts.negative_option = c.add_flag(negated, texts.negative, spec.help);
      texts.negative_option->group("");
    } else {
      // Lists too take the text as typed ("10,10"): parse_text splits it. A repetition is refused
      // in finish() (CLI11 would say ": At Most 1 required but received 2" without the flag).
      CLI::Option* option = c.add_option_function<std::string>(
           flag, [self, name, flag, spec](const std::string& text) { self->given_.push_back({name, spec.parse_text(text, flag), flag}); },
           spec.help);
      option->group("")->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      self->counted_.emplace_back(flag, option);
    }
  }
  return flags;
}

const GivenOption* FitFlags::given(const std::string& name) const {
  finish();
  for (auto it = given_.rbegin(); it != given_.rend(); ++it)
    if (it->name == name) return &*it;
  return nullptr;
}

void FitFlags::finish() const {
  if (finished_) return;
  finished_ = true;
  // A repeated option: which value was meant? Refused, naming it (not CLI11's "At Most 1 ...").
  for (const auto& [flag, option] : counted_)
    if (option->count() > 1)
      throw InputError(fmt::format("{} is given {} times: give it once", flag, option->count()));
  for (auto& [name, texts] : flag_texts_) {
    const std::size_t times = texts.positive.size() + texts.negative.size();
    if (times == 0) continue;
    if (!texts.positive.empty() && !texts.negative.empty())
      throw InputError(fmt::format("{} and {} contradict each other: give one", texts.flag, texts.negated));
    if (times > 1)
      throw InputError(fmt::format("{} is given {} times: give it once", texts.positive.empty() ? texts.negated : texts.flag, times));
    if (!texts.negative.empty()) {
      if (texts.negative.front() != "true")  // "--no-x=VALUE": CLI11 gives "true" for the bare flag
        throw InputError(fmt::format("{}='{}' is invalid: {} takes no value (give {}=false or {}=true instead)", texts.negated,
                                     texts.negative.front(), texts.negated, texts.flag, texts.flag));
      given_.push_back({name, false, texts.negated});
      continue;
    }
    const std::string& text = texts.positive.front();
    if (text == "true") {
      given_.push_back({name, true, texts.flag});
    } else if (text == "false") {
      given_.push_back({name, false, texts.flag});
    } else {
      throw InputError(fmt::format("{}='{}' is invalid: it must be true or false (or the bare flag {}, or {})", texts.flag, text,
                                   texts.flag, texts.negated));
    }
  }
}

FitRequest FitFlags::request(const nlohmann::json& preset) const {
  finish();
  FitRequest r;
  if (!config_.empty()) {
    for (GivenOption& g : read_toml_options(config_)) {
      if (exclude_.count(g.name)) throw InputError(g.where + ": is not an option of this command");
      r.given.push_back(std::move(g));
    }
  }
  r.given.insert(r.given.end(), given_.begin(), given_.end());
  r.preset = preset;
  r.invocation = {{"command", command_line()}};
  if (!config_.empty()) r.invocation["config"] = std::filesystem::absolute(config_).string();
  return r;
}

void FitFlags::print_help(std::ostream& out, const CLI::App& command) const {
  const GivenOption* method = given("method");
  std::vector<OptionGroup> groups;
  std::map<const OptionGroup*, std::vector<std::string>> readers;
  if (method) {
    groups = fit_option_groups(method->value.get<std::string>());
  } else {
    groups = all_option_groups();
  }
  std::map<std::string, std::vector<std::string>> methods_of_group;
  for (const MethodSpec* m : registered_methods())
    for (const OptionGroup* g : m->groups) methods_of_group[g->name].push_back(m->name);
  out << command.get_description() << "\n\nUsage: uqnn " << command.get_name() << " [OPTIONS]\n\n"
      << "  -h, --help            these options; with --method X, only those X reads\n"
      << "  --config PATH         TOML file with any option below (key = name with '_', e.g. ens_members = 12; at the\n"
      << "                        top or in a table named after its group, e.g. [training]); an option given on the\n"
      << "                        command line wins over the file, the file over the defaults; an option given twice\n"
      << "                        in one of them, or two options that choose the same thing, are refused\n";
  for (const auto& option : command.get_options())
    if (!option->get_group().empty() && option->get_name() != "--config" && option->get_name() != "-h,--help" &&
        option->get_name() != "--help")
      out << fmt::format("  {:<21} {}\n", option->get_name(), option->get_description());
  for (const OptionGroup& g : groups) {
    std::vector<const OptionSpec*> shown;
    for (const OptionSpec& o : g.options)
      if (!exclude_.count(o.name)) shown.push_back(&o);
    if (shown.empty()) continue;
    std::string title = g.title;
    if (!method && methods_of_group.count(g.name)) {
      std::string names;
      for (const auto& n : methods_of_group[g.name]) names += (names.empty() ? "" : ", ") + n;
      title += " (" + names + ")";
    }
    out << "\n" << title << ":\n";
    for (const OptionSpec* o : shown) {
      std::string left = o->flag() + (o->type == OptionType::Flag ? "" : " " + metavar(*o));
      if (o->type == OptionType::Flag) left += ", --no-" + o->flag().substr(2);
      std::string right = o->help + fmt::format(" [default {}; {}]", default_text(*o), o->valid_values());
      if (!o->reference.empty()) right += " (" + o->reference + ")";
      out << fmt::format("  {:<21} {}\n", left, right);
      if (o->name == "method") {
        for (const MethodSpec* m : registered_methods()) out << fmt::format("  {:<23} {:<9} {}\n", "", m->name, m->summary);
      }
    }
  }
}

}  // namespace uqnn::cli
