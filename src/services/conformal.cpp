#include "uqnn/services/conformal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/services/fitted_model.hpp"

namespace uqnn {

const Registry<ConformalKind>& conformal_kinds() {
  static const Registry<ConformalKind> kinds(
      "--conformal",
      {{.name = "none", .summary = "no calibration"},
       {.name = "split",
        .summary = "split conformal intervals mean +- q sd, normalised by the method's predictive sd",
        .reference = "Lei et al. 2018"},
       {.name = "cqr",
        .summary = "conformalised quantile regression on the method's own central interval",
        .reference = "Romano et al. 2019"},
       {.name = "aps",
        .summary = "adaptive prediction sets (most probable classes until their probability reaches the threshold)",
        .reference = "Romano et al. 2020",
        .classification = true},
       {.name = "raps",
        .summary = "regularised adaptive prediction sets (APS with a penalty on large sets)",
        .reference = "Angelopoulos et al. 2021",
        .classification = true},
       {.name = "temperature",
        .summary = "temperature scaling of the class probabilities, fitted by NLL",
        .reference = "Guo et al. 2017",
        .classification = true}});
  return kinds;
}

nlohmann::json ConformalCalibration::to_json() const {
  nlohmann::json j{{"method", method},
                   {"confidence_level", confidence_level},
                   {"num_calibration_rows", num_calibration_rows},
                   {"reference", conformal_kinds().find(method).reference}};
  if (method == "temperature") j["temperature"] = temperature;
  else j["quantiles"] = quantiles;
  if (conformal_kinds().find(method).classification) j["likelihood"] = categorical ? "categorical" : "bernoulli";
  if (method == "raps") j["raps"] = {{"lambda", set_options.lambda}, {"k_reg", set_options.k_reg}};
  return j;
}

ConformalCalibration ConformalCalibration::from_json(const nlohmann::json& j, const std::string& where) {
  const auto bad = [&](const std::string& field, const std::string& what) {
    return InputError(fmt::format("{}: conformal.{}: {}", where, field, what));
  };
  if (!j.is_object()) throw bad("", "is not an object");
  ConformalCalibration c;
  try {
    c.method = j.at("method").get<std::string>();
    if (!conformal_kinds().contains(c.method) || c.method == "none") throw bad("method", "'" + c.method + "' is not a conformal method");
    c.confidence_level = j.at("confidence_level").get<double>();
    if (!(c.confidence_level > 0 && c.confidence_level < 1)) throw bad("confidence_level", "must be in (0, 1)");
    c.num_calibration_rows = j.value("num_calibration_rows", Index{0});
    if (c.method == "temperature") {
      c.temperature = j.at("temperature").get<double>();
      if (!(c.temperature > 0 && std::isfinite(c.temperature))) throw bad("temperature", "must be finite and > 0");
    } else {
      c.quantiles = j.at("quantiles").get<std::vector<double>>();
      if (c.quantiles.empty()) throw bad("quantiles", "is empty");
    }
    c.categorical = j.value("likelihood", std::string()) == "categorical";
    if (c.method == "raps") {
      c.set_options.lambda = j.at("raps").at("lambda").get<double>();
      c.set_options.k_reg = j.at("raps").at("k_reg").get<Index>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad("", std::string("missing or of the wrong type (") + e.what() + ")");
  }
  c.set_options.randomized = false;
  return c;
}

std::vector<double> conformal_summary_levels(const std::string& method, double confidence_level) {
  if (method == "cqr") return {confidence_level};
  return {};
}

namespace {

/// Class probabilities and labels as set_scores and fit_temperature read them: categorical [K, n]
/// with class indices; bernoulli [t, n] flattened to [1, t n] (entry o + t i) with 0/1 labels.
Mat flat_probabilities(const Mat& p, bool categorical) {
  if (categorical) return p;
  return Eigen::Map<const Mat>(p.data(), 1, p.size());
}
std::vector<Index> flat_labels(const Mat& targets, bool categorical) {
  std::vector<Index> labels;
  const Index count = categorical ? targets.cols() : targets.size();
  for (Index i = 0; i < count; ++i) labels.push_back(static_cast<Index>(categorical ? targets(0, i) : targets.data()[i]));
  return labels;
}

std::string too_few_rows(Index rows, double level) {
  // ceil((n + 1) level) <= n needs n >= level / (1 - level).
  const auto needed = static_cast<Index>(std::ceil(level / (1 - level) - 1e-9));
  return fmt::format("{} calibration rows are too few for --confidence-level {}: the interval would be the whole line; it "
                     "needs at least {} (raise --calibration-fraction or lower --confidence-level)",
                     rows, format_double(level), needed);
}

}  // namespace

ConformalCalibration calibrate_conformal(const ConformalConfig& config, const PredictiveSummary& summary, const Mat& targets,
                                         bool categorical) {
  const ConformalKind& kind = conformal_kinds().find(config.method);
  if (config.method == "none") throw std::invalid_argument("calibrate_conformal: method none");
  ConformalCalibration c;
  c.method = config.method;
  c.confidence_level = config.confidence_level;
  c.num_calibration_rows = summary.mean.cols();
  c.categorical = categorical;
  const double alpha = 1 - config.confidence_level;
  if (c.num_calibration_rows < 1) throw InputError("--conformal " + config.method + ": there are no calibration rows");
  if (!kind.classification) {
    for (Index o = 0; o < summary.mean.rows(); ++o) {
      const Vec y = targets.row(o).transpose();
      double q = 0;
      if (config.method == "split") {
        q = normalized_split_conformal_quantile(summary.mean.row(o).transpose(), summary.sd.row(o).transpose(), y, alpha);
      } else {
        const auto& interval = summary.intervals.at(config.confidence_level);
        q = cqr_quantile(interval.first.row(o).transpose(), interval.second.row(o).transpose(), y, alpha);
      }
      if (!std::isfinite(q)) throw InputError(too_few_rows(c.num_calibration_rows, config.confidence_level));
      c.quantiles.push_back(q);
    }
    return c;
  }
  const Mat p = flat_probabilities(summary.mean, categorical);
  const std::vector<Index> labels = flat_labels(targets, categorical);
  if (config.method == "temperature") {
    c.temperature = fit_temperature(p, labels).temperature;
    return c;
  }
  c.set_options.randomized = false;
  if (config.method == "raps") {
    c.set_options.lambda = config.raps_lambda;
    c.set_options.k_reg = config.raps_k_reg;
  }
  Rng unused(0, 0);  // u = 1: the scores are not randomised
  const Vec scores = set_scores(p, labels, c.set_options, unused);
  const double q = conformal_quantile(std::vector<double>(scores.data(), scores.data() + scores.size()), alpha);
  if (!std::isfinite(q)) throw InputError(too_few_rows(c.num_calibration_rows, config.confidence_level));
  c.quantiles.push_back(q);
  return c;
}

ConformalPrediction apply_conformal(const ConformalCalibration& c, const PredictiveSummary& summary) {
  ConformalPrediction out;
  const Index t = summary.mean.rows(), n = summary.mean.cols();
  if (c.method == "split" || c.method == "cqr") {
    if (static_cast<Index>(c.quantiles.size()) != t)
      throw InputError(fmt::format("conformal calibration has {} quantiles for {} targets", c.quantiles.size(), t));
    out.lower.resize(t, n);
    out.upper.resize(t, n);
    for (Index o = 0; o < t; ++o) {
      const double q = c.quantiles[static_cast<std::size_t>(o)];
      const ConformalIntervals ci =
          c.method == "split"
              ? normalized_split_conformal(summary.mean.row(o).transpose(), summary.sd.row(o).transpose(), q)
              : cqr(summary.intervals.at(c.confidence_level).first.row(o).transpose(),
                    summary.intervals.at(c.confidence_level).second.row(o).transpose(), q);
      out.lower.row(o) = ci.lower.transpose();
      out.upper.row(o) = ci.upper.transpose();
    }
    return out;
  }
  if (c.method == "temperature") {
    out.probabilities = apply_temperature(summary.mean, c.temperature);
    return out;
  }
  // aps, raps: a bernoulli fit's rows are each P(y = 1) of one output.
  const bool categorical = c.categorical;
  const Mat p = flat_probabilities(summary.mean, categorical);
  Rng unused(0, 0);
  auto sets = prediction_sets(p, c.quantiles.front(), c.set_options, unused);
  // Each set also takes the class whose score first exceeds the threshold (MAPIE's
  // include_last_label): a superset of the valid set, so coverage stays >= the level, and never
  // empty. prediction_sets returns a prefix of the classes in decreasing probability.
  for (std::size_t e = 0; e < sets.size(); ++e) {
    const Index column = static_cast<Index>(e);
    const Index classes = p.rows() == 1 ? 2 : p.rows();
    if (static_cast<Index>(sets[e].size()) >= classes) continue;
    Vec q(classes);
    if (p.rows() == 1) q << 1 - p(0, column), p(0, column);
    else q = p.col(column);
    std::vector<Index> order(static_cast<std::size_t>(classes));
    for (Index k = 0; k < classes; ++k) order[static_cast<std::size_t>(k)] = k;
    std::stable_sort(order.begin(), order.end(), [&q](Index a, Index b) { return q(a) > q(b); });
    sets[e].push_back(order[sets[e].size()]);
  }
  out.in_set = Mat::Zero(categorical ? t : 2 * t, n);
  for (std::size_t e = 0; e < sets.size(); ++e)
    for (Index k : sets[e]) {
      if (categorical) out.in_set(k, static_cast<Index>(e)) = 1;
      else out.in_set(2 * (static_cast<Index>(e) % t) + k, static_cast<Index>(e) / t) = 1;
    }
  return out;
}

std::vector<std::pair<std::string, Vec>> conformal_columns(const ConformalCalibration& c, const ConformalPrediction& p,
                                                           const std::vector<std::string>& output_names) {
  std::vector<std::pair<std::string, Vec>> cols;
  if (p.lower.size()) {
    for (Index o = 0; o < p.lower.rows(); ++o) {
      cols.emplace_back(output_names[static_cast<std::size_t>(o)] + "_conformal_lower", p.lower.row(o).transpose());
      cols.emplace_back(output_names[static_cast<std::size_t>(o)] + "_conformal_upper", p.upper.row(o).transpose());
    }
  } else if (p.probabilities.size()) {
    for (Index o = 0; o < p.probabilities.rows(); ++o)
      cols.emplace_back(output_names[static_cast<std::size_t>(o)] + "_calibrated", p.probabilities.row(o).transpose());
  } else if (p.in_set.size()) {
    const bool categorical = c.categorical;
    for (Index k = 0; k < p.in_set.rows(); ++k)
      cols.emplace_back(categorical ? fmt::format("set_{}", k) : fmt::format("{}_set_{}", output_names[static_cast<std::size_t>(k / 2)], k % 2),
                        p.in_set.row(k).transpose());
    if (categorical) cols.emplace_back("set_size", p.in_set.colwise().sum().transpose());
  }
  return cols;
}

nlohmann::json conformal_scores(const ConformalCalibration& c, const ConformalPrediction& p, const Mat& targets, bool categorical) {
  nlohmann::json j{{"method", c.method}, {"confidence_level", c.confidence_level}};
  if (p.lower.size()) {
    const auto inside = (targets.array() >= p.lower.array() && targets.array() <= p.upper.array()).cast<double>();
    j["coverage"] = inside.mean();
    j["mean_width"] = (p.upper - p.lower).mean();
  } else if (p.probabilities.size()) {
    const ClassificationMetrics m = classification_metrics(p.probabilities, targets, categorical);
    j["temperature"] = c.temperature;
    j["nll"] = m.nll;
    j["accuracy"] = m.accuracy;
    j["brier"] = m.brier;
    j["ece"] = m.ece;
  } else {
    const std::vector<Index> labels = flat_labels(targets, categorical);
    double covered = 0, size = 0;
    const Index t = categorical ? 1 : p.in_set.rows() / 2;
    for (std::size_t e = 0; e < labels.size(); ++e) {
      const Index i = static_cast<Index>(e) / t, o = static_cast<Index>(e) % t;
      const Index row = categorical ? labels[e] : 2 * o + labels[e];
      covered += p.in_set(row, i);
      size += categorical ? p.in_set.col(i).sum() : p.in_set(2 * o, i) + p.in_set(2 * o + 1, i);
    }
    j["coverage"] = covered / static_cast<double>(labels.size());
    j["mean_set_size"] = size / static_cast<double>(labels.size());
  }
  return j;
}

std::optional<ConformalCalibration> saved_conformal(const FittedModel& fitted) {
  const nlohmann::json& j = fitted.model_json();
  if (!j.contains("conformal") || j.at("conformal").is_null()) return std::nullopt;
  return ConformalCalibration::from_json(j.at("conformal"), (fitted.directory() / "model.json").string());
}

std::optional<std::pair<ConformalCalibration, ConformalPrediction>> conformal_predict(const FittedModel& fitted, const Mat& inputs,
                                                                                     Rng& rng) {
  std::optional<ConformalCalibration> c = saved_conformal(fitted);
  if (!c) return std::nullopt;
  const PredictiveSummary s = fitted.predict(inputs, conformal_summary_levels(c->method, c->confidence_level), rng);
  ConformalPrediction p = apply_conformal(*c, s);
  return std::pair{std::move(*c), std::move(p)};
}

}  // namespace uqnn
