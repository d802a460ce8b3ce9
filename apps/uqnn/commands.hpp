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
Command add_evaluate(CLI::App& app);

/// Prints the fit summary and its warnings; returns the exit code: 128 + N when signal N stopped the
/// chains (what was drawn is written), 3 when draws or predictions hold NaN or infinity (the files
/// are written, but they are not a result), else 0.
int print_fit_report(const FitConfig& config, const FitReport& report);

}  // namespace uqnn::cli
