#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "uqnn/core/error.hpp"
#include "uqnn/data/image_files.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/services/conformal.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/fitted_model.hpp"
#include "uqnn/services/ood_metrics.hpp"

namespace uqnn {

namespace {

/// A warning when rows of `inputs` ([input, row]) lie outside the training rows' range recorded in
/// model.json (runs written before it was recorded are not checked): the network
/// extrapolates there, and a BNN's bands need not widen enough to say so. Returns the message and
/// the number of such rows.
std::optional<std::pair<std::string, Index>> outside_training_range(const FittedModel& fitted, const Mat& inputs) {
  const auto& lo = fitted.input_min();
  const auto& hi = fitted.input_max();
  const auto& input_names = fitted.input_names();
  if (lo.empty()) return std::nullopt;
  std::vector<bool> outside(static_cast<std::size_t>(inputs.cols()), false);
  std::string columns;
  Index shown = 0;
  for (Index i = 0; i < inputs.rows(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    Index count = 0;
    for (Index r = 0; r < inputs.cols(); ++r)
      if (inputs(i, r) < lo[k] || inputs(i, r) > hi[k]) {
        outside[static_cast<std::size_t>(r)] = true;
        ++count;
      }
    if (count == 0) continue;
    if (shown++ < 5) columns += fmt::format("{}'{}' in {} row{} (training range [{:.4g}, {:.4g}])", columns.empty() ? "" : "; ",
                                            input_names[k], count, count == 1 ? "" : "s", lo[k], hi[k]);
    else if (shown == 6) columns += "; ...";
  }
  const Index rows = static_cast<Index>(std::count(outside.begin(), outside.end(), true));
  if (rows == 0) return std::nullopt;
  return std::pair{fmt::format("{} of {} rows have inputs outside the training range ({}): the network extrapolates "
                               "there and its uncertainty may be too small",
                               rows, inputs.cols(), columns),
                   rows};
}

bool predict_is_image_file(const std::filesystem::path& path) { return detect_data_file_format(path) != DataFileFormat::Csv; }

/// The images (and labels, when found) of an image file.
Dataset read_predict_images(const std::filesystem::path& path, const std::filesystem::path& labels, const std::string& flag, bool* labelled) {
  ImageFileRequest request;
  request.labels = labels;
  request.flag = flag;
  request.role = "test";
  request.labels_required = false;
  return to_dataset(read_image_file(path, request, labelled), path.string());
}

void check_predict_image_inputs(const Dataset& d, const std::vector<std::string>& input_names, const std::filesystem::path& path,
                        const std::string& flag) {
  if (d.input_names != input_names)
    throw InputError(fmt::format("{} {}: images of {} values ({} ... {}), but the model takes {} inputs ({} ... {})", flag, path.string(),
                                 d.input_dim(), d.input_names.front(), d.input_names.back(), input_names.size(),
                                 input_names.empty() ? "" : input_names.front(), input_names.empty() ? "" : input_names.back()));
}

/// The model's input columns of a CSV table, by name.
Mat predict_table_inputs(const CsvTable& table, const std::vector<std::string>& input_names, const std::filesystem::path& path,
                 const std::string& what) {
  Mat inputs(static_cast<Index>(input_names.size()), table.num_rows());
  for (std::size_t i = 0; i < input_names.size(); ++i) {
    const Index c = table.find_column(input_names[i]);
    if (c < 0) {
      std::string available;
      for (const auto& n : table.column_names) available += (available.empty() ? "" : ", ") + n;
      throw InputError(fmt::format("{}: {} '{}' (available: {})", path.string(), what, input_names[i], available));
    }
    inputs.row(static_cast<Index>(i)) = table.values.col(c).transpose();
  }
  return inputs;
}

}  // namespace

FitReport run_predict(const PredictConfig& cfg) {
  const FittedModel fitted = FittedModel::load(cfg.model_dir);
  const auto& draws = fitted.draws();
  const Standardizer& standardizer = fitted.standardizer();

  // Inputs by name; targets too when the file has them.
  const auto& input_names = fitted.input_names();
  const auto& target_names = fitted.target_names();
  if (!cfg.ood_data.empty() && fitted.regression())
    throw InputError("--ood-data: the detection scores are of class probabilities; this model is a regression (uqnn evaluate "
                     "--ood-data scores a regression's predictive sd)");
  const bool images = predict_is_image_file(cfg.data);
  if (!images && !cfg.labels.empty())
    throw InputError("--labels " + cfg.labels.string() + ": --data " + cfg.data.string() + " is a CSV table; --labels is for IDX and .npy images");
  Mat inputs, targets;
  bool has_targets = true;
  if (images) {
    // Image files: labels when they are found (an .npz's y array, --labels, MNIST's file names).
    bool labelled = false;
    const Dataset d = read_predict_images(cfg.data, cfg.labels, "--data", &labelled);
    check_predict_image_inputs(d, input_names, cfg.data, "--data");
    inputs = d.inputs;
    targets = d.targets;
    has_targets = labelled && target_names.size() == 1;
  } else {
    const CsvTable table = read_csv(cfg.data);
    inputs = predict_table_inputs(table, input_names, cfg.data, "the model needs input column");
    targets.resize(static_cast<Index>(target_names.size()), table.num_rows());
    for (std::size_t i = 0; i < target_names.size(); ++i) {
      const Index c = table.find_column(target_names[i]);
      if (c < 0) has_targets = false;
      else targets.row(static_cast<Index>(i)) = table.values.col(c).transpose();
    }
  }

  const bool regression = fitted.regression();
  Rng rng(cfg.seed, 0x9ed);
  const PredictiveDraws pd = fitted.predictive_draws(inputs);
  // A fit calibrated with --conformal gives its intervals or sets beside the method's own.
  const std::optional<ConformalCalibration> calibration = saved_conformal(fitted);
  std::vector<double> levels = regression ? std::vector<double>{0.5, 0.9, 0.95} : std::vector<double>{};
  if (calibration)
    for (double l : conformal_summary_levels(calibration->method, calibration->confidence_level))
      if (std::find(levels.begin(), levels.end(), l) == levels.end()) levels.push_back(l);
  PredictiveSummary s = summarize_predictive(pd, levels, rng);
  if (regression) rescale_summary(s, standardizer.target_mean(), standardizer.target_scale());
  std::optional<ConformalPrediction> conformal;
  if (calibration)
    conformal = apply_conformal(*calibration, s,
                                calibration->out_of_fold() ? member_means(pd, standardizer.target_mean(), standardizer.target_scale())
                                                           : std::vector<Mat>{});

  const auto out = cfg.out.empty() ? cfg.model_dir / ("predictions_" + cfg.data.stem().string() + ".csv") : cfg.out;
  // Output columns: the inputs, the targets when present, then mean, sd and 95% bounds per output.
  // Images: the row's index instead of its thousands of pixels.
  std::vector<std::string> names = images ? std::vector<std::string>{"row"} : input_names;
  Mat values = images ? Mat(Eigen::VectorXd::LinSpaced(inputs.cols(), 0, static_cast<double>(inputs.cols() - 1))) : Mat(inputs.transpose());
  const auto append = [&](const std::string& name, const Eigen::RowVectorXd& column) {
    names.push_back(name);
    values.conservativeResize(Eigen::NoChange, values.cols() + 1);
    values.col(values.cols() - 1) = column.transpose();
  };
  if (has_targets)
    for (Index t = 0; t < targets.rows(); ++t) append(target_names[static_cast<std::size_t>(t)], targets.row(t));
  std::vector<std::string> output_names;
  for (Index k = 0; k < s.mean.rows(); ++k) {
    const std::string n = static_cast<std::size_t>(k) < target_names.size() && s.mean.rows() == static_cast<Index>(target_names.size())
                              ? target_names[static_cast<std::size_t>(k)] : fmt::format("output{}", k);
    output_names.push_back(n);
    append(n + "_mean", s.mean.row(k));
    append(n + "_sd", s.sd.row(k));
    if (regression) {
      append(n + "_lower95", s.intervals.at(0.95).first.row(k));
      append(n + "_upper95", s.intervals.at(0.95).second.row(k));
    }
  }
  if (conformal)
    for (const auto& [name, column] : conformal_columns(*calibration, *conformal, output_names)) append(name, column.transpose());
  write_csv(out, names, values);
  FitReport report;
  report.files.push_back(out);
  report.metrics = {{"num_draws", draws.size()}, {"n", inputs.cols()}};
  if (const auto w = outside_training_range(fitted, inputs)) {
    report.metrics["rows_outside_training_range"] = w->second;
    report.metrics["warnings"] = nlohmann::json::array({{{"code", "outside_training_range"}, {"message", w->first}}});
  }
  if (has_targets && regression) {
    const double log_scale = standardizer.target_scale().array().log().sum();
    const auto m = regression_metrics(pd, s, standardizer.transform_targets(targets), targets, log_scale);
    report.metrics["rmse"] = m.rmse;
    report.metrics["nll"] = m.nll;
    report.metrics["lppd"] = m.lppd;
    for (const auto& [level, c] : m.coverage) report.metrics[fmt::format("coverage_{:.0f}", 100 * level)] = c;
  } else if (has_targets) {
    const auto m = classification_metrics(s.mean, targets, fitted.likelihood().kind() == "categorical");
    report.metrics["accuracy"] = m.accuracy;
    report.metrics["nll"] = m.nll;
    report.metrics["lppd"] = -m.nll;
    report.metrics["brier"] = m.brier;
    report.metrics["ece"] = m.ece;
  }
  if (conformal) {
    report.metrics["conformal"] = calibration->to_json();
    if (has_targets)
      report.metrics["conformal"]["scores"] =
          conformal_scores(*calibration, *conformal, targets, fitted.likelihood().kind() == "categorical");
  }
  if (!cfg.ood_data.empty()) {
    Mat ood;
    if (predict_is_image_file(cfg.ood_data)) {
      const Dataset d = read_predict_images(cfg.ood_data, {}, "--ood-data", nullptr);
      check_predict_image_inputs(d, input_names, cfg.ood_data, "--ood-data");
      ood = d.inputs;
    } else {
      ood = predict_table_inputs(read_csv(cfg.ood_data), input_names, cfg.ood_data, "--ood-data: the model needs input column");
    }
    report.metrics["ood"] = ood_metrics(fitted.model(), fitted.likelihood(), draws, standardizer.transform_inputs(inputs),
                                        standardizer.transform_inputs(ood), cfg.data.filename().string());
  }
  return report;
}

}  // namespace uqnn
