#pragma once
// `uqnn fit --method M --arch '' --noise 0.3 --prior-sigma 3 --no-standardize` on the ill-conditioned
// regression of test_models.hpp, through the fit service's method runner: what a user gets at the
// defaults of M on a linear-Gaussian model whose posterior is known exactly.
#include <string>
#include <vector>

#include "unit/mcmc/test_models.hpp"
#include "uqnn/core/reporter.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn::testing {

inline MethodResult fit_ill_conditioned_linear(const std::string& method, const nlohmann::json& extra = nlohmann::json::object()) {
  const IllConditionedRegression target = ill_conditioned_regression();
  Dataset data;
  data.inputs = target.posterior->inputs();
  data.targets = target.posterior->targets();
  data.input_names = {"x1", "x2", "x3", "x4"};
  data.target_names = {"y"};
  nlohmann::json options = {{"method", method}, {"arch", std::vector<Index>{}}, {"noise", 0.3}, {"prior_sigma", 3.0},
                            {"standardize", false}, {"quiet", true}};
  options.update(extra);
  FitConfig config = fit_config_from_options(options);
  config.data.dataset = data;
  const FitProblem problem = make_fit_problem(config);
  const FitContext context{config, problem.posterior, problem.posterior->inputs(), problem.posterior->targets(), false,
                           make_silent_reporter()};
  return run_method(context);
}

inline std::vector<std::string> warning_codes(const MethodResult& result) {
  std::vector<std::string> codes;
  for (const auto& w : result.warnings) codes.push_back(w.code);
  return codes;
}

}  // namespace uqnn::testing
