#pragma once
/// @file The "ood" section that `uqnn fit --ood-data`, `uqnn predict --ood-data` and the Python
/// estimators report: how well a classifier's predictive uncertainty tells out-of-distribution
/// inputs from in-distribution ones.
///
/// Why here: the scores themselves are predictive/scores.hpp's (ood_detection, shared with `uqnn
/// evaluate`); this adds only the per-draw class probabilities of a fit and the JSON layout.
/// References: Hendrycks and Gimpel 2017 (max probability, AUROC, AUPR); Houlsby et al. 2011 and
/// Depeweg et al. 2018 (mutual information).
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "uqnn/core/draws.hpp"
#include "uqnn/nn/model.hpp"
#include "uqnn/predictive/scores.hpp"
#include "uqnn/prob/likelihood.hpp"

namespace uqnn {

/// {"in_distribution": in_name, "in_distribution_rows", "ood_rows", "positive_class":
/// "out-of-distribution", and per detector (predictive_entropy, mutual_information,
/// max_probability) {"auroc", "aupr", "fpr_at_95_tpr"}}, from every draw's class probabilities at
/// the (standardised) inputs. Throws InputError for a regression likelihood, or when either set
/// of inputs is empty.
/// `scores` (when given) receives the per-row uncertainty scores, in-distribution then OOD (for figures).
nlohmann::json ood_metrics(const Model& model, const Likelihood& likelihood, const Draws& draws, const Mat& in_distribution_std,
                           const Mat& ood_std, const std::string& in_name,
                           std::pair<UncertaintyScores, UncertaintyScores>* scores = nullptr);

}  // namespace uqnn
