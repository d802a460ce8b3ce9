#include "uqnn/services/analysis.hpp"

#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/predictive/acquisition.hpp"

namespace uqnn {

std::vector<diagnostics::Summary> summarize_draws(const DrawsTable& table, double hdi_prob) {
  return diagnostics::summarize(table, hdi_prob);
}

std::optional<InferenceGroup> read_sample_stats(const std::filesystem::path& posterior_nc) {
  return read_inference_data(posterior_nc).sample_stats;
}

Vec acquisition_scores(const FittedModel& fit, const Mat& inputs, const std::string& strategy) {
  if (!fit.regression()) throw InputError("acquisition scores are for regression fits");
  if (strategy != "bald" && strategy != "max-variance")
    throw InputError("strategy '" + strategy + "' is not known: valid are bald, max-variance");
  const PredictiveDraws d = fit.predictive_draws(inputs);
  const double scale = fit.standardizer().target_scale()[0];
  return strategy == "bald" ? bald_score(d) : Vec(epistemic_variance(d) * scale * scale);
}

ClassificationMetrics evaluate_classification(const Mat& probabilities, const Mat& targets, bool categorical) {
  return classification_metrics(probabilities, targets, categorical);
}

BanditTrace run_mushroom_bandit(const MushroomBandit& bandit, const BanditExperiment& experiment) {
  const StopSignalScope scope;
  try {
    return run_bandit_experiment(bandit, experiment);
  } catch (const std::invalid_argument& error) {
    throw InputError(error.what());
  }
}

}  // namespace uqnn
