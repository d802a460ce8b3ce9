#include "uqnn/services/conformal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

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
       {.name = "cv+",
        .summary = "CV+ intervals from the out-of-fold residuals of an ensemble whose member k leaves out fold k of K = "
                   "the members (ens, rms)",
        .reference = "Barber et al. 2021",
        .out_of_fold = true},
       {.name = "jackknife+",
        .summary = "jackknife+ intervals: CV+ with one member per training row, each leaving its row out (ens, rms; at most " +
                   std::to_string(kJackknifePlusMaxRows) + " training rows)",
        .reference = "Barber et al. 2021",
        .out_of_fold = true},
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

bool ConformalCalibration::out_of_fold() const { return conformal_kinds().find(method).out_of_fold; }

nlohmann::json ConformalCalibration::to_json() const {
  nlohmann::json j{{"method", method},
                   {"confidence_level", confidence_level},
                   {"num_calibration_rows", num_calibration_rows},
                   {"reference", conformal_kinds().find(method).reference}};
  if (method == "temperature") {
    j["temperature"] = temperature;
  } else if (out_of_fold()) {
    j["num_folds"] = folds.empty() ? 0 : *std::max_element(folds.begin(), folds.end()) + 1;
    j["folds"] = folds;
    std::vector<std::vector<double>> r(static_cast<std::size_t>(residuals.rows()));
    for (Index o = 0; o < residuals.rows(); ++o)
      for (Index i = 0; i < residuals.cols(); ++i) r[static_cast<std::size_t>(o)].push_back(residuals(o, i));
    j["residuals"] = r;  // per target, one out-of-fold residual per training row
  } else {
    j["quantiles"] = quantiles;
  }
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
    } else if (c.out_of_fold()) {
      c.folds = j.at("folds").get<IndexVec>();
      const auto r = j.at("residuals").get<std::vector<std::vector<double>>>();
      if (c.folds.empty()) throw bad("folds", "is empty");
      const auto num_folds = j.at("num_folds").get<Index>();
      for (const Index k : c.folds)
        if (k < 0 || k >= num_folds) throw bad("folds", fmt::format("has fold {} outside [0, {})", k, num_folds));
      if (r.empty()) throw bad("residuals", "is empty");
      c.residuals.resize(static_cast<Index>(r.size()), static_cast<Index>(c.folds.size()));
      for (std::size_t o = 0; o < r.size(); ++o) {
        if (r[o].size() != c.folds.size())
          throw bad("residuals", fmt::format("target {} has {} residuals for {} folds entries", o, r[o].size(), c.folds.size()));
        for (std::size_t i = 0; i < r[o].size(); ++i) {
          if (!(r[o][i] >= 0 && std::isfinite(r[o][i]))) throw bad("residuals", "must be finite and >= 0");
          c.residuals(static_cast<Index>(o), static_cast<Index>(i)) = r[o][i];
        }
      }
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

namespace {
/// `rows` of `kind` (calibration, training) cannot give an interval at `level`: ceil((n + 1) level)
/// <= n needs n >= level / (1 - level).
std::string too_few_rows(Index rows, double level, const std::string& kind = "calibration",
                         const std::string& remedy = "raise --calibration-fraction or lower --confidence-level") {
  const auto needed = static_cast<Index>(std::ceil(level / (1 - level) - 1e-9));
  return fmt::format("{} {} rows are too few for --confidence-level {}: the interval would be the whole line; it needs at least {} ({})",
                     rows, kind, format_double(level), needed, remedy);
}
}  // namespace

std::vector<std::string> out_of_fold_methods() { return {"ens", "rms"}; }

IndexVec out_of_fold_assignment(const std::string& method, Index num_rows, Index folds, std::uint64_t seed) {
  IndexVec fold(static_cast<std::size_t>(num_rows));
  if (method == "jackknife+") {
    std::iota(fold.begin(), fold.end(), Index{0});
    return fold;
  }
  if (method != "cv+") throw std::invalid_argument("out_of_fold_assignment: " + method + " is not cv+ or jackknife+");
  if (folds < 2 || folds > num_rows)
    throw InputError(fmt::format("--conformal cv+ takes one fold per member: {} members for {} training rows; it needs between 2 "
                                 "and {} (give --ens-members K)",
                                 folds, num_rows, num_rows));
  // Position p of a random permutation goes to fold p mod K: fold sizes differ by at most one.
  Rng rng(seed, 0xc0f01d5);
  IndexVec order(static_cast<std::size_t>(num_rows));
  std::iota(order.begin(), order.end(), Index{0});
  for (Index i = num_rows - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(rng.uniform_index(static_cast<std::uint64_t>(i + 1)))]);
  for (Index p = 0; p < num_rows; ++p) fold[static_cast<std::size_t>(order[static_cast<std::size_t>(p)])] = p % folds;
  return fold;
}

std::vector<Mat> member_means(const PredictiveDraws& draws, const Vec& target_mean, const Vec& target_scale) {
  std::vector<Mat> out;
  for (const Mat& m : draws.means) {
    Mat scaled = m;
    for (Index o = 0; o < scaled.rows(); ++o) scaled.row(o) = scaled.row(o).array() * target_scale(o) + target_mean(o);
    out.push_back(std::move(scaled));
  }
  return out;
}

ConformalCalibration calibrate_out_of_fold(const ConformalConfig& config, const std::vector<Mat>& means, const Mat& targets,
                                           const IndexVec& folds) {
  if (!conformal_kinds().find(config.method).out_of_fold)
    throw std::invalid_argument("calibrate_out_of_fold: " + config.method + " is not calibrated out of fold");
  const Index n = targets.cols(), t = targets.rows();
  if (static_cast<Index>(folds.size()) != n) throw std::invalid_argument("calibrate_out_of_fold: one fold per training row");
  const Index K = static_cast<Index>(means.size());
  ConformalCalibration c;
  c.method = config.method;
  c.confidence_level = config.confidence_level;
  c.num_calibration_rows = n;
  c.folds = folds;
  c.residuals.resize(t, n);
  for (Index i = 0; i < n; ++i) {
    const Index k = folds[static_cast<std::size_t>(i)];
    if (k < 0 || k >= K)
      throw InputError(fmt::format("--conformal {}: training row {} is in fold {}, but the fit has {} members (one per fold)", config.method,
                                   i, k, K));
    // R_i = |y_i - mu_{-k(i)}(x_i)|: member k(i) never trained on row i (Barber et al. 2021, sec. 3).
    c.residuals.col(i) = (targets.col(i) - means[static_cast<std::size_t>(k)].col(i)).cwiseAbs();
  }
  // floor(alpha (n + 1)) >= 1 needs n >= 1 / alpha - 1, as split conformal.
  const double alpha = 1 - config.confidence_level;
  if (std::ceil((static_cast<double>(n) + 1) * (1 - alpha) - 1e-9) > static_cast<double>(n))
    throw InputError(too_few_rows(n, config.confidence_level, "training", "lower --confidence-level"));
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

}  // namespace

ConformalCalibration calibrate_conformal(const ConformalConfig& config, const PredictiveSummary& summary, const Mat& targets,
                                         bool categorical) {
  const ConformalKind& kind = conformal_kinds().find(config.method);
  if (config.method == "none" || kind.out_of_fold)
    throw std::invalid_argument("calibrate_conformal: method " + config.method + " (cv+ and jackknife+: calibrate_out_of_fold)");
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

ConformalPrediction apply_conformal(const ConformalCalibration& c, const PredictiveSummary& summary, const std::vector<Mat>& means) {
  ConformalPrediction out;
  const Index t = summary.mean.rows(), n = summary.mean.cols();
  if (c.out_of_fold()) {
    const Index K = c.folds.empty() ? 0 : *std::max_element(c.folds.begin(), c.folds.end()) + 1;
    if (static_cast<Index>(means.size()) != K)
      throw InputError(fmt::format("--conformal {} was calibrated with {} members (one per fold), but the fit's draws have {}", c.method,
                                   K, means.size()));
    if (c.residuals.rows() != t)
      throw InputError(fmt::format("conformal calibration has residuals of {} targets for {} targets", c.residuals.rows(), t));
    out.lower.resize(t, n);
    out.upper.resize(t, n);
    const double alpha = 1 - c.confidence_level;
    for (Index o = 0; o < t; ++o) {
      Mat model_means(K, n);
      for (Index k = 0; k < K; ++k) model_means.row(k) = means[static_cast<std::size_t>(k)].row(o);
      const ConformalIntervals ci = cv_plus(model_means, c.residuals.row(o).transpose(), c.folds, alpha);
      out.lower.row(o) = ci.lower.transpose();
      out.upper.row(o) = ci.upper.transpose();
    }
    return out;
  }
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
  std::vector<Mat> means;
  if (c->out_of_fold())
    means = member_means(fitted.predictive_draws(inputs), fitted.standardizer().target_mean(), fitted.standardizer().target_scale());
  ConformalPrediction p = apply_conformal(*c, s, means);
  return std::pair{std::move(*c), std::move(p)};
}

}  // namespace uqnn
