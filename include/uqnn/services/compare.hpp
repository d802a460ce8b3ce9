#pragma once
/// @file The compare service behind `uqnn compare`: fits several methods on one data set (each with
/// the full outputs of `uqnn fit` in out_dir/<method>/), then writes one figure with their predictive
/// bands side by side (1-D inputs) and a metrics table (compare.md and compare.json). With a
/// reference (--reference nuts or a run directory), each method's predictive is also scored against
/// the reference's on the test rows, as Izmailov et al. (2021) scored approximations against HMC:
/// classification top-1 agreement and total variation; regression the 1-Wasserstein distance between
/// the predictive distributions per row and the ratio of the predictive sds (reference.md, .json,
/// and reference.<ext>, the distribution of the per-row distances by method).
#include <string>
#include <vector>

#include "uqnn/services/fit.hpp"

namespace uqnn {

struct CompareConfig {
  FitRequest request;                ///< every option but the method (out: the directory of all fits)
  std::vector<std::string> methods;  ///< e.g. map, ens, vi, laplace, swag
  std::optional<Dataset> dataset;    ///< in-memory data instead of the request's --data
  /// Score every method's predictive against a reference on the test rows (else the training rows):
  /// "nuts" fits NUTS with the request's options (added to the methods when absent), anything else
  /// is a finished `uqnn fit` run directory (a long NUTS run). Empty: no reference.
  std::string reference;
};

struct CompareReport {
  /// One entry per method: seconds, draws, per-split metrics; or {"error": message} for a method
  /// whose fit failed (the others are compared all the same).
  nlohmann::json table;
  std::vector<std::filesystem::path> files;
  std::vector<std::string> failed;  ///< methods whose fit failed, in order
};

CompareReport run_compare(const CompareConfig& config);

}  // namespace uqnn
