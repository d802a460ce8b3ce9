#pragma once
/// @file What the Python module computes on draws, fitted runs and bandits beside fitting: ArviZ's
/// summary of draws held in memory, a run's sampler statistics, active-learning scores, the
/// classification metrics and Thompson sampling on the mushroom bandit. The Python module reaches the
/// library through services only (scripts/check-layers), as the CLI does.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "uqnn/core/draws_table.hpp"
#include "uqnn/diagnostics/summary.hpp"
#include "uqnn/io/netcdf_inference_data.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/predictive/thompson_sampling.hpp"
#include "uqnn/services/fitted_model.hpp"

namespace uqnn {

/// One az.summary row per quantity of `table` (Vehtari et al. 2021's rank-normalised R-hat and ESS).
std::vector<diagnostics::Summary> summarize_draws(const DrawsTable& table, double hdi_prob);

/// The sample_stats group of a run's posterior.nc (uqnn's own NetCDF reader), none when it has none.
std::optional<InferenceGroup> read_sample_stats(const std::filesystem::path& posterior_nc);

/// Active learning's score per column of `inputs` for a regression fit: "bald" (the mutual
/// information between the prediction and the weights, in nats; Houlsby et al. 2011) or
/// "max-variance" (the epistemic variance, in the target's units squared). InputError for a
/// classification fit or another strategy.
Vec acquisition_scores(const FittedModel& fit, const Mat& inputs, const std::string& strategy);

/// Accuracy, NLL, Brier score and ECE (15 bins) of predictive class probabilities (columns are rows).
ClassificationMetrics evaluate_classification(const Mat& probabilities, const Mat& targets, bool categorical);

/// Runs the mushroom contextual bandit (Blundell et al. 2015, sec. 5.3) under a stop-signal
/// scope, so that Ctrl-C ends it after the current round; bad settings are InputError.
BanditTrace run_mushroom_bandit(const MushroomBandit& bandit, const BanditExperiment& experiment);

}  // namespace uqnn
