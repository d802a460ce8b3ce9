#include <fmt/format.h>

#include <fstream>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/nn/model.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/fit_output.hpp"

namespace uqnn {

FitReport run_predict(const PredictConfig& cfg) {
  const auto model_path = cfg.model_dir / "model.json";
  std::ifstream in(model_path);
  if (!in) throw InputError(model_path.string() + ": cannot open (is " + cfg.model_dir.string() + " a `uqnn fit` output directory?)");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(model_path.string() + ": not valid JSON: " + e.what());
  }
  if (j.value("format", std::string()) != "uqnn-fit")
    throw InputError(model_path.string() + ": field 'format' must be \"uqnn-fit\"");
  const auto model = make_model(j.at("model"));
  const auto likelihood = make_likelihood(j.at("likelihood"));
  const Standardizer standardizer = Standardizer::from_json(j.at("standardizer"), model_path.string());
  ParamLayout layout = model->layout();
  layout.append(likelihood->extra_layout(), "");
  const auto draws = read_draws_csv_as_vectors(cfg.model_dir / j.value("draws_file", std::string("draws.csv")), layout);
  if (draws.empty()) throw InputError((cfg.model_dir / "draws.csv").string() + ": no draws");

  // Inputs by name; targets too when the file has them.
  const auto input_names = j.at("input_names").get<std::vector<std::string>>();
  const auto target_names = j.at("target_names").get<std::vector<std::string>>();
  const CsvTable table = read_csv(cfg.data);
  Mat inputs(static_cast<Index>(input_names.size()), table.num_rows());
  for (std::size_t i = 0; i < input_names.size(); ++i) {
    const Index c = table.find_column(input_names[i]);
    if (c < 0) {
      std::string available;
      for (const auto& n : table.column_names) available += (available.empty() ? "" : ", ") + n;
      throw InputError(fmt::format("{}: the model needs input column '{}' (available: {})", cfg.data.string(), input_names[i], available));
    }
    inputs.row(static_cast<Index>(i)) = table.values.col(c).transpose();
  }
  bool has_targets = true;
  Mat targets(static_cast<Index>(target_names.size()), table.num_rows());
  for (std::size_t i = 0; i < target_names.size(); ++i) {
    const Index c = table.find_column(target_names[i]);
    if (c < 0) has_targets = false;
    else targets.row(static_cast<Index>(i)) = table.values.col(c).transpose();
  }

  const bool regression = likelihood->kind() != "bernoulli" && likelihood->kind() != "categorical";
  Rng rng(cfg.seed, 0x9ed);
  const PredictiveDraws pd = predict_draws(*model, *likelihood, draws, standardizer.transform_inputs(inputs));
  PredictiveSummary s = summarize_predictive(pd, regression ? std::vector<double>{0.5, 0.9, 0.95} : std::vector<double>{}, rng);
  if (regression) rescale_summary(s, standardizer.target_mean(), standardizer.target_scale());

  const auto out = cfg.out.empty() ? cfg.model_dir / ("predictions_" + cfg.data.stem().string() + ".csv") : cfg.out;
  // Output columns: the inputs, the targets when present, then mean, sd and 95% bounds per output.
  std::vector<std::string> names = input_names;
  Mat values = inputs.transpose();
  const auto append = [&](const std::string& name, const Eigen::RowVectorXd& column) {
    names.push_back(name);
    values.conservativeResize(Eigen::NoChange, values.cols() + 1);
    values.col(values.cols() - 1) = column.transpose();
  };
  if (has_targets)
    for (Index t = 0; t < targets.rows(); ++t) append(target_names[static_cast<std::size_t>(t)], targets.row(t));
  for (Index k = 0; k < s.mean.rows(); ++k) {
    const std::string n = static_cast<std::size_t>(k) < target_names.size() && s.mean.rows() == static_cast<Index>(target_names.size())
                              ? target_names[static_cast<std::size_t>(k)] : fmt::format("output{}", k);
    append(n + "_mean", s.mean.row(k));
    append(n + "_sd", s.sd.row(k));
    if (regression) {
      append(n + "_lower95", s.intervals.at(0.95).first.row(k));
      append(n + "_upper95", s.intervals.at(0.95).second.row(k));
    }
  }
  write_csv(out, names, values);
  FitReport report;
  report.files.push_back(out);
  report.metrics = {{"num_draws", draws.size()}, {"n", inputs.cols()}};
  if (has_targets && regression) {
    const double log_scale = standardizer.target_scale().array().log().sum();
    const auto m = regression_metrics(pd, s, standardizer.transform_targets(targets), targets, log_scale);
    report.metrics["rmse"] = m.rmse;
    report.metrics["nll"] = m.nll;
    report.metrics["lppd"] = m.lppd;
    for (const auto& [level, c] : m.coverage) report.metrics[fmt::format("coverage_{:.0f}", 100 * level)] = c;
  }
  return report;
}

}  // namespace uqnn
