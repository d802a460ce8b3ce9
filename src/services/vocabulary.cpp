#include "uqnn/services/vocabulary.hpp"

#include "uqnn/nn/dense_stack.hpp"
#include "uqnn/optim/optimizer.hpp"
#include "uqnn/predictive/thompson_sampling.hpp"
#include "uqnn/services/fit_output.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

template <typename Entry>
nlohmann::json entries(const Registry<Entry>& registry) {
  nlohmann::json list = nlohmann::json::array();
  for (const Entry& e : registry) {
    nlohmann::json j = {{"name", e.name}, {"summary", e.summary}};
    if constexpr (requires { e.reference; }) j["reference"] = e.reference;
    if constexpr (requires { e.aliases; }) j["aliases"] = e.aliases;
    if constexpr (requires { e.classification; }) j["classification"] = e.classification;
    if constexpr (requires { e.shrinkage; }) j["shrinkage"] = e.shrinkage;
    list.push_back(std::move(j));
  }
  return list;
}

}  // namespace

nlohmann::json vocabulary() {
  nlohmann::json methods = nlohmann::json::array();
  for (const MethodSpec* m : registered_methods())
    methods.push_back({{"name", m->name},
                       {"summary", m->summary},
                       {"reference", m->reference},
                       {"family", to_string(m->family)},
                       {"handles_classification", m->handles_classification},
                       {"runs_in_parts", m->runs_in_parts},
                       {"checkpoints", m->checkpoints}});
  return {{"method", methods},
          {"model", entries(model_kinds())},
          {"activation", entries(activation_kinds())},
          {"init", entries(init_scheme_kinds())},
          {"likelihood", entries(likelihood_kinds())},
          {"prior", entries(prior_kinds())},
          {"optimizer", entries(optimizer_kinds())},
          {"lr_schedule", entries(schedule_kinds())},
          {"bandit_agent", entries(bandit_agent_kinds())},
          {"draws_format", entries(draws_format_kinds())}};
}

}  // namespace uqnn
