#pragma once
/// @file A finished fit, as `uqnn predict` and the Python module use it: the network, likelihood,
/// standardiser and weight draws that a run directory holds (model.json + draws.csv), with the
/// predictions made from them in the data's own units.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "uqnn/core/rng.hpp"
#include "uqnn/data/standardizer.hpp"
#include "uqnn/nn/model.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/prob/likelihood.hpp"

namespace uqnn {

class FittedModel {
 public:
  /// Reads `dir`/model.json and the draws file it names. The draws file must be a plain file name
  /// inside `dir` (a model.json from elsewhere cannot make uqnn read other files). Throws InputError
  /// naming the file and field.
  static FittedModel load(const std::filesystem::path& dir);
  /// Reads `dir`/model.json but takes the draws from memory: `uqnn fit`, which has just written
  /// them to the draws file, evaluates them without reading them back. They are borrowed, not
  /// copied (a network's draws can be gigabytes), and must outlive the FittedModel.
  static FittedModel load_with_draws(const std::filesystem::path& dir, const Draws& draws);

  const std::filesystem::path& directory() const { return dir_; }
  const nlohmann::json& model_json() const { return json_; }
  const std::string& method() const { return method_; }
  const Model& model() const { return *model_; }
  const Likelihood& likelihood() const { return *likelihood_; }
  const Standardizer& standardizer() const { return standardizer_; }
  /// Network parameters followed by the likelihood's extras (e.g. log_sigma): the draws' columns.
  const ParamLayout& layout() const { return layout_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& target_names() const { return target_names_; }
  /// Per input, the smallest and largest value of the training rows (empty for runs written before
  /// model.json recorded them).
  const std::vector<double>& input_min() const { return input_min_; }
  const std::vector<double>& input_max() const { return input_max_; }
  /// The draws by chain (or member), in the order of draws.csv.
  const Draws& draws() const { return *draws_; }
  /// Regression (gaussian, heteroscedastic) as opposed to classification (bernoulli, categorical).
  bool regression() const;

  /// Per-draw network means and noise variances at `inputs` ([input_dim, n], the data's units),
  /// in standardised target units.
  PredictiveDraws predictive_draws(const Mat& inputs) const;
  /// Predictive mean, sd and central intervals at `levels`, in the data's units.
  PredictiveSummary predict(const Mat& inputs, const std::vector<double>& levels, Rng& rng) const;
  /// RMSE, NLL, LPPD and the coverage of the 50/90/95% intervals on data with known targets, in the
  /// data's units (regression only; throws InputError for a classification fit).
  RegressionMetrics metrics(const Mat& inputs, const Mat& targets, Rng& rng) const;
  /// log p(y_i | x_i, theta_s) in the data's units: [num_draws, n]. Regression densities include
  /// the Jacobian of the standardisation (1 / target scale per target).
  Mat pointwise_log_likelihood(const Mat& inputs, const Mat& targets) const;
  /// One sample y ~ p(y | x, theta_s) per entry s of `draw_index`, in the data's units: [t, n] each
  /// (classification: 0/1 labels for bernoulli, the class index for categorical).
  std::vector<Mat> sample_predictive(const Mat& inputs, const std::vector<Index>& draw_index, Rng& rng) const;

 private:
  std::filesystem::path dir_;
  nlohmann::json json_;
  std::string method_;
  std::shared_ptr<const Model> model_;
  std::shared_ptr<const Likelihood> likelihood_;
  Standardizer standardizer_;
  ParamLayout layout_;
  std::vector<std::string> input_names_, target_names_;
  std::vector<double> input_min_, input_max_;
  // Shared so that a FittedModel can borrow the draws of a fit in memory (load_with_draws).
  std::shared_ptr<const Draws> draws_;
  static FittedModel load_model(const std::filesystem::path& dir);
};

}  // namespace uqnn
