#pragma once
/// @file Every closed set of names a user can give (methods, model kinds, activations,
/// initialisations, likelihoods, priors, optimisers, learning-rate schedules, bandit agents), with what
/// each entry says about itself, read from the registries where they are declared. The Python
/// package builds its docstrings and checks from this, so no list of names is written twice.
#include <nlohmann/json.hpp>

namespace uqnn {

/// {"method": [{"name", "summary", "reference", "family", "handles_classification", "runs_in_parts",
/// "checkpoints"}, ...], "model": [...], "activation": [...], "init": [...], "likelihood": [...],
/// "prior": [...], "optimizer": [...], "lr_schedule": [...], "bandit_agent": [...]}: each entry has at
/// least a name and a summary, in the order the registry declares them (methods by name).
nlohmann::json vocabulary();

}  // namespace uqnn
