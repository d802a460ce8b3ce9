#pragma once
// The options of a fit as command-line flags, generated from their declarations
// (uqnn/services/options.hpp): one flag per option name, `--config FILE` for a TOML file, and a
// --help that lists the options grouped (only the method's own with `--method X --help`).
#include <CLI/CLI.hpp>

#include <iosfwd>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "uqnn/services/fit.hpp"

namespace uqnn::cli {

class FitFlags {
 public:
  /// Adds the flags of every option except those in `exclude` (e.g. the demo has no data flags).
  static std::shared_ptr<FitFlags> add(CLI::App& command, const std::set<std::string>& exclude = {});
  /// The request: the --config file's values, then the command line's (which win), with `preset`
  /// as the command's own defaults and the command line recorded for model.json.
  FitRequest request(const nlohmann::json& preset = nlohmann::json::object()) const;
  /// True when --help was given: print_help() then exit 0.
  bool help_requested() const { return help_; }
  /// Options grouped; with --method X only the groups a fit with X reads.
  void print_help(std::ostream& out, const CLI::App& command) const;
  /// The value given for an option on the command line, if any (e.g. "method").
  const GivenOption* given(const std::string& name) const;

 private:
  /// What was typed for a flag (--x and --no-x collected apart), checked by finish().
  struct FlagTexts {
    std::string flag, negated;
    std::vector<std::string> positive, negative;
    CLI::Option* positive_option = nullptr;
    CLI::Option* negative_option = nullptr;
  };
  /// After parsing: checks repetitions and the flags' texts, and adds the flags to given_; throws
  /// InputError naming the flag as typed.
  void finish() const;

  mutable std::vector<GivenOption> given_;
  mutable bool finished_ = false;
  std::map<std::string, FlagTexts> flag_texts_;
  std::vector<std::pair<std::string, CLI::Option*>> counted_;
  std::string config_;
  bool help_ = false;
  std::set<std::string> exclude_;
};

/// The whole command line as typed (set by main), for model.json.
void set_command_line(int argc, char** argv);
const std::string& command_line();

}  // namespace uqnn::cli
