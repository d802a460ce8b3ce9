#pragma once
/// @file MCMC on any log density: the methods that need only a value and a gradient (nuts, hmc,
/// mala, amcmc, slice) with their options as `uqnn fit` declares them, run by the multi-chain
/// driver. The Python module's uqnn.sample calls it with a Python callable or a C callback.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/log_density.hpp"
#include "uqnn/core/reporter.hpp"
#include "uqnn/run/run_chains.hpp"
#include "uqnn/services/options.hpp"

namespace uqnn {

/// The methods sample() runs (those registered with a sampler).
std::vector<std::string> sample_method_names();

/// The option groups sample() reads for `method`: seed and threads, the chains, and the method's own
/// (not where chains start: the caller gives the initial points). Throws InputError for a method
/// that cannot sample a bare log density.
std::vector<OptionGroup> sample_option_groups(const std::string& method);

struct SampleResult {
  RunResult run;
  nlohmann::json settings;  ///< every option's value, defaults filled in
};

/// Checks the given options (InputError starting with the option's `where`: unknown, wrong type,
/// out of range), then runs `method`'s chains on `density` from `initial`.
SampleResult sample(std::shared_ptr<const LogDensity> density, const InitialPoints& initial, const std::string& method,
                    const std::vector<GivenOption>& given, const std::vector<Observer*>& observers = {});

/// As above, stopped cleanly by a stop signal (core/stop_signal.hpp) and reporting progress to
/// `progress` (a task named after the method): what the Python module's uqnn.sample runs.
SampleResult sample(std::shared_ptr<const LogDensity> density, const InitialPoints& initial, const std::string& method,
                    const std::vector<GivenOption>& given, std::shared_ptr<Reporter> progress);

}  // namespace uqnn
