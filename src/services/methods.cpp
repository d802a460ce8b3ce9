// The registry of `uqnn fit --method` names; each src/services/method_<name>.cpp registers itself.
#include "uqnn/services/methods.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <stdexcept>

#include "sampler_options.hpp"
#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

// A function-local static: registrations run during static initialisation of the method files,
// in an order the language does not fix.
std::map<std::string, MethodSpec>& registry() {
  static std::map<std::string, MethodSpec> methods;
  return methods;
}

}  // namespace

bool register_method(MethodSpec spec) {
  if (registry().count(spec.name)) throw std::logic_error("method '" + spec.name + "' is registered twice");
  std::set<std::string> names;
  for (const OptionGroup* group : spec.groups)
    for (const OptionSpec& option : group->options)
      if (!names.insert(option.name).second)
        throw std::logic_error(fmt::format("method '{}': option '{}' is declared by two of its groups", spec.name, option.name));
  if (!spec.run && !spec.sampler) throw std::logic_error("method '" + spec.name + "' has neither a runner nor a sampler");
  if (names.count("checkpoint_every")) spec.checkpoints = true;  // it runs chains through chain_run_config
  const std::string name = spec.name;
  registry().emplace(name, std::move(spec));
  return true;
}

const MethodSpec& find_method(const std::string& name) {
  const auto it = registry().find(name);
  if (it == registry().end())
    throw InputError(fmt::format("--method '{}' is not known: valid are {}", name, fmt::join(method_names(), ", ")));
  return it->second;
}

std::vector<const MethodSpec*> registered_methods() {
  std::vector<const MethodSpec*> methods;
  for (const auto& [name, spec] : registry()) methods.push_back(&spec);
  return methods;
}

std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : registry()) names.push_back(name);
  return names;
}

std::string to_string(MethodFamily family) {
  switch (family) {
    case MethodFamily::PointEstimate: return "point estimate";
    case MethodFamily::Mcmc: return "MCMC";
    case MethodFamily::StochasticGradientMcmc: return "stochastic-gradient MCMC";
    case MethodFamily::Approximation: return "approximation";
    case MethodFamily::Ensemble: return "ensemble";
    case MethodFamily::Hybrid: return "hybrid";
    case MethodFamily::GaussianProcess: return "Gaussian process";
  }
  return "?";
}

MethodResult run_method(const FitContext& context) {
  const MethodSpec& spec = find_method(context.config.method);
  const std::string& likelihood = context.config.probability.likelihood;
  if (!spec.handles_classification && is_classification(likelihood))
    throw InputError(fmt::format("--method {} models a regression function, not class labels: its methods need --likelihood "
                                 "gaussian, not '{}'",
                                 spec.name, likelihood));
  if (context.posterior->model().kind() == "external" && !spec.runs_on_external_model) {
    std::string those;
    for (const MethodSpec* m : registered_methods())
      if (m->runs_on_external_model) those += (those.empty() ? "" : ", ") + m->name;
    throw InputError(fmt::format("--method {} does not run on a network uqnn could not translate ({}): {}; the methods that do are {}",
                                 spec.name, context.posterior->model().to_json().value("description", std::string("a PyTorch module")),
                                 spec.external_model_refusal.empty() ? std::string("it is not validated on one") : spec.external_model_refusal, those));
  }
  if (spec.run) return spec.run(context);
  return detail::run_sampling_method(context, spec.sampler(detail::lockstep_density(context.posterior, context.config.method_settings),
                                                          context.config.method_settings),
                                     {});
}

std::vector<std::string> methods_with_parts() {
  std::vector<std::string> out;
  for (const MethodSpec* m : registered_methods())
    if (m->runs_in_parts) out.push_back(m->name);
  return out;
}

bool method_runs_in_parts(const std::string& name) { return find_method(name).runs_in_parts; }

}  // namespace uqnn
