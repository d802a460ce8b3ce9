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

/// Declares the flags shared by `fit` and `demo` (model, probability, training, method options).
void add_fit_options(CLI::App& command, FitConfig& config, std::string& arch, std::string& noise);
/// Declares the flags of the optimisation-based methods (approx_options.cpp).
void add_approx_options(CLI::App& command, FitConfig& config);
/// Declares the flags of functional SG-MCMC, fsgld / fsghmc (functional_options.cpp).
void add_functional_options(CLI::App& command, FitConfig& config);
/// Declares the flags of vi-hmc (vi_hmc_options.cpp).
void add_vi_hmc_options(CLI::App& command, FitConfig& config);
/// Declares the flags of dei-nuts (dei_options.cpp).
void add_dei_options(CLI::App& command, FitConfig& config);
/// Applies the string-valued options to the config after parsing.
void finish_fit_config(FitConfig& config, const std::string& arch, const std::string& noise);
/// Prints the metrics of a fit to stdout.
void print_fit_report(const FitConfig& config, const FitReport& report);

}  // namespace uqnn::cli
