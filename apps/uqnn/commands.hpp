#pragma once
// Each command is a thin wrapper over a service: it declares flags, fills a config, calls the service.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "uqnn/services/fit.hpp"

namespace uqnn::cli {

/// Registers a subcommand; the returned function runs it after parsing (returns the exit code).
using Command = std::function<int()>;
Command add_fit(CLI::App& app);
Command add_predict(CLI::App& app);
Command add_demo(CLI::App& app);
Command add_diagnose(CLI::App& app);
Command add_compare(CLI::App& app);
Command add_sensitivity(CLI::App& app);
Command add_merge(CLI::App& app);

/// Prints the metrics of a fit to stdout.
void print_fit_report(const FitConfig& config, const FitReport& report);

}  // namespace uqnn::cli
