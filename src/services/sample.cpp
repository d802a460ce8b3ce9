#include "uqnn/services/sample.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "sampler_options.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/run/observer.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

struct SampleRunOptions {
  std::uint64_t seed = 0;
  int threads = 0;
};

const OptionSchema<SampleRunOptions>& run_options() {
  static const auto s = OptionSchema<SampleRunOptions>("run", "Run")
                            .add("seed", &SampleRunOptions::seed, "random seed: chain c draws from Rng(seed, c)")
                            .at_least(0)
                            .add("threads", &SampleRunOptions::threads, "threads for the chains (0 = automatic); draws do not depend on it")
                            .at_least(0);
  return s;
}

const MethodSpec& sampler_method(const std::string& method) {
  const MethodSpec& spec = find_method(method);
  if (!spec.sampler)
    throw InputError(fmt::format("method '{}' needs a network; sampling a log density works with: {}", method,
                                 fmt::join(sample_method_names(), ", ")));
  return spec;
}

}  // namespace

std::vector<std::string> sample_method_names() {
  std::vector<std::string> names;
  for (const MethodSpec* m : registered_methods())
    if (m->sampler) names.push_back(m->name);
  return names;
}

std::vector<OptionGroup> sample_option_groups(const std::string& method) {
  const MethodSpec& spec = sampler_method(method);
  std::vector<OptionGroup> groups{run_options().group()};
  for (const OptionGroup* g : spec.groups)
    if (g != &detail::chain_start_options().group()) groups.push_back(*g);
  // The method's own run lengths (mclmc's 10,000 steps) apply here as in `uqnn fit`.
  for (auto& g : groups)
    for (auto& o : g.options)
      if (spec.fit_defaults.contains(o.name)) o.default_value = spec.fit_defaults.at(o.name);
  return groups;
}

SampleResult sample(std::shared_ptr<const LogDensity> density, const InitialPoints& initial, const std::string& method,
                    const std::vector<GivenOption>& given, const std::vector<Observer*>& observers) {
  const MethodSpec& spec = sampler_method(method);
  std::map<std::string, const OptionSpec*> known;
  SampleResult result;
  const auto groups = sample_option_groups(method);
  for (const auto& g : groups)
    for (const auto& o : g.options) {
      known.emplace(o.name, &o);
      result.settings[o.name] = o.default_value;
    }
  for (const GivenOption& g : given) {
    const auto it = known.find(g.name);
    if (it == known.end()) {
      std::vector<std::string> names;
      for (const auto& [name, spec] : known) names.push_back(name);
      throw InputError(fmt::format("{}: is not an option of sampling with {}; valid are {}", g.where, method, fmt::join(names, ", ")));
    }
    result.settings[g.name] = it->second->check(g.value, g.where);
  }
  const SampleRunOptions run_settings = run_options().read(result.settings);
  const detail::ChainOptions chains = detail::chain_options().read(result.settings);
  RunConfig run = detail::chain_run_config(chains, run_settings.threads, run_settings.seed);
  run.lockstep = detail::lockstep_options().read(result.settings).lockstep;
  run.validate();
  result.run = run_chains(run, spec.sampler(detail::lockstep_density(density, result.settings), result.settings), initial, observers);
  result.settings["method"] = method;
  return result;
}

SampleResult sample(std::shared_ptr<const LogDensity> density, const InitialPoints& initial, const std::string& method,
                    const std::vector<GivenOption>& given, std::shared_ptr<Reporter> progress) {
  InterruptObserver stop;
  ProgressObserver report(std::move(progress), method);
  return sample(std::move(density), initial, method, given, {&stop, &report});
}

}  // namespace uqnn
