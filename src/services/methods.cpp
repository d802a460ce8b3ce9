// The registry of `uqnn fit --method` names. Adding a solver: write its runner in its own file
// (src/services/method_<name>.cpp) and add one line to kMethods.
#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {
const std::vector<std::pair<std::string, MethodRunner>>& methods() {
  static const std::vector<std::pair<std::string, MethodRunner>> kMethods{
      {"map", &run_map},
      {"nuts", &run_nuts},
      {"hmc", &run_hmc},
      {"mala", &run_mala},
      {"amcmc", &run_amcmc},
      {"sgld", &run_sgld},
      {"sghmc", &run_sghmc},
      {"psgld", &run_psgld},
      {"ens", &run_deep_ensemble},
      {"rms", &run_randomized_map},
      {"vi", &run_vi},
      {"laplace", &run_laplace},
      {"swag", &run_swag},
      {"dropout", &run_dropout},
      {"fsgld", &run_fsgld},
      {"fsghmc", &run_fsghmc},
      {"vi-hmc", &run_vi_hmc},
      {"dei-nuts", &run_dei_nuts},
  };
  return kMethods;
}
}  // namespace

std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const auto& [name, runner] : methods()) names.push_back(name);
  return names;
}

MethodResult run_method(const std::string& name, const FitContext& context) {
  for (const auto& [known, runner] : methods())
    if (known == name) return runner(context);
  std::string valid;
  for (const auto& n : method_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InputError("--method '" + name + "' is not known: valid are " + valid);
}

}  // namespace uqnn
