#include "uqnn/services/evaluate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "uqnn/core/error.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/io/staged_output_dir.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/predictive/conformal.hpp"
#include "uqnn/predictive/scores.hpp"
#include "uqnn/services/conformal.hpp"
#include "uqnn/services/fitted_model.hpp"

namespace uqnn {

const std::vector<std::string>& conformal_methods() {
  static const std::vector<std::string> methods = [] {
    // cv+ and jackknife+ need an ensemble's members trained without their folds: a fit's, not
    // predictions'.
    std::vector<std::string> names;
    for (const ConformalKind& k : conformal_kinds())
      if (k.name != "none" && !k.out_of_fold) names.push_back(k.name);
    return names;
  }();
  return methods;
}

void EvaluateConfig::validate() const {
  if (model_dir.empty() == predictions.empty())
    throw InputError("give either --model (a `uqnn fit` run directory) or --predictions (a CSV of predictions), not both");
  if (!model_dir.empty() && data.empty()) throw InputError("--model needs --data: a CSV with the model's inputs and targets");
  if (!ood_data.empty() && model_dir.empty()) throw InputError("--ood-data needs --model; with --predictions give --ood-predictions");
  if (!ood_predictions.empty() && predictions.empty()) throw InputError("--ood-predictions needs --predictions; with --model give --ood-data");
  if (levels.empty()) throw InputError("--levels: give at least one nominal level in (0, 1)");
  for (double l : levels)
    if (!(l > 0 && l < 1)) throw InputError(fmt::format("--levels: {} is not in (0, 1)", format_double(l)));
  if (bins < 1 || bins > 1000) throw InputError(fmt::format("--bins {} is not in [1, 1000]", bins));
  if (!conformal.empty()) {
    const auto& m = conformal_methods();
    if (conformal_kinds().contains(conformal) && conformal_kinds().find(conformal).out_of_fold)
      throw InputError("--conformal " + conformal + " needs an ensemble whose members each left a fold of the training rows out: "
                       "ask for it when fitting (uqnn fit --method ens --conformal " + conformal + "); here valid are " +
                       fmt::format("{}", fmt::join(m, ", ")));
    if (std::find(m.begin(), m.end(), conformal) == m.end())
      throw InputError("--conformal '" + conformal + "' is not known: valid are " + fmt::format("{}", fmt::join(m, ", ")));
    const bool fraction = calibration_fraction != 0.0;
    if (fraction == !calibration_data.empty())
      throw InputError("--conformal needs either --calibration-fraction (in (0, 1)) or --calibration-data, not both");
    if (fraction && !(calibration_fraction > 0 && calibration_fraction < 1))
      throw InputError(fmt::format("--calibration-fraction {} is not in (0, 1)", format_double(calibration_fraction)));
  } else if (calibration_fraction != 0.0 || !calibration_data.empty()) {
    throw InputError("--calibration-fraction and --calibration-data need --conformal METHOD");
  }
  if (!(raps_lambda >= 0 && std::isfinite(raps_lambda))) throw InputError("--raps-lambda must be >= 0 and finite");
  if (raps_k_reg < 0) throw InputError("--raps-k-reg must be >= 0");
}

namespace {

/// One labelled (or OOD) set of rows and a predictive for them. Regression predictions are
/// flattened over targets: entry o + t i is target o of row i.
struct Rows {
  bool regression = true;
  Index num_rows = 0, targets_per_row = 1;
  // Regression: one of the three forms (the mixture's components or the samples, as rows).
  RegressionPredictive::Form form = RegressionPredictive::Form::Gaussian;
  Mat a, b;      ///< mixture: means, sds [S, N]; samples: [m, N]
  Vec mean, sd;  ///< gaussian
  Vec y;         ///< [N] flattened targets (empty for unlabelled rows)
  // Classification.
  bool categorical = true;
  Mat probabilities;        ///< [K, n] (categorical) or [t, n] (bernoulli)
  std::vector<Mat> draws;   ///< per-draw probabilities (empty: only the mean is known)
  Mat targets;              ///< [1, n] class indices or [t, n] 0/1

  RegressionPredictive predictive() const {
    switch (form) {
      case RegressionPredictive::Form::Mixture: return RegressionPredictive::mixture(a, b);
      case RegressionPredictive::Form::Samples: return RegressionPredictive::samples(a);
      default: return RegressionPredictive::gaussian(mean, sd);
    }
  }

  /// The rows `keep` (indices of rows, not entries).
  Rows subset(const std::vector<Index>& keep) const {
    Rows r = *this;
    r.num_rows = static_cast<Index>(keep.size());
    const Index t = targets_per_row;
    std::vector<Index> entries;
    for (Index i : keep)
      for (Index o = 0; o < t; ++o) entries.push_back(o + t * i);
    const auto cols = [](const Mat& m, const std::vector<Index>& c) {
      Mat out(m.rows(), static_cast<Index>(c.size()));
      for (std::size_t k = 0; k < c.size(); ++k) out.col(static_cast<Index>(k)) = m.col(c[k]);
      return out;
    };
    const auto elems = [](const Vec& v, const std::vector<Index>& c) {
      Vec out(static_cast<Index>(c.size()));
      for (std::size_t k = 0; k < c.size(); ++k) out(static_cast<Index>(k)) = v(c[k]);
      return out;
    };
    if (regression) {
      if (a.size()) r.a = cols(a, entries);
      if (b.size()) r.b = cols(b, entries);
      if (mean.size()) r.mean = elems(mean, entries);
      if (sd.size()) r.sd = elems(sd, entries);
      if (y.size()) r.y = elems(y, entries);
    } else {
      r.probabilities = cols(probabilities, keep);
      for (Mat& d : r.draws) d = cols(d, keep);
      if (targets.size()) r.targets = cols(targets, keep);
    }
    return r;
  }

  /// Class probabilities and labels as set_scores and fit_temperature read them: categorical
  /// [K, n] with class indices, bernoulli flattened to [1, t n] with 0/1 labels.
  std::pair<Mat, std::vector<Index>> classes() const {
    std::vector<Index> labels;
    if (categorical) {
      for (Index i = 0; i < targets.cols(); ++i) labels.push_back(static_cast<Index>(targets(0, i)));
      return {probabilities, labels};
    }
    const Mat flat = Eigen::Map<const Mat>(probabilities.data(), 1, probabilities.size());
    for (Index i = 0; i < targets.size(); ++i) labels.push_back(static_cast<Index>(targets.data()[i]));
    return {flat, labels};
  }
};

std::string columns_of(const CsvTable& t) {
  std::string s;
  for (const auto& n : t.column_names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

Index need_column(const CsvTable& t, const std::string& name, const std::string& why) {
  const Index c = t.find_column(name);
  if (c < 0) throw InputError(fmt::format("{}: no column '{}' ({}; available: {})", t.source, name, why, columns_of(t)));
  return c;
}

/// Targets of classification rows checked where they are read, so that the message names the file,
/// line and column (the header is line 1).
void check_class_targets(const CsvTable& t, Index column, bool categorical, Index num_classes) {
  for (Index r = 0; r < t.num_rows(); ++r) {
    const double v = t.values(r, column);
    const bool ok = categorical ? (v >= 0 && v < static_cast<double>(num_classes) && v == std::floor(v)) : (v == 0.0 || v == 1.0);
    if (!ok)
      throw InputError(fmt::format("{}:{}: column '{}': {} is not {}", t.source, r + 2, t.column_names[static_cast<std::size_t>(column)],
                                   format_double(v),
                                   categorical ? fmt::format("a class index in [0, {})", num_classes) : std::string("0 or 1")));
  }
}

/// The fit's predictions on the rows of `path` (targets read when `labelled`).
/// A fit's predictive at `inputs` (data units) with the targets [t, n] when `targets` is given
/// (classification: class indices [1, n] or 0/1 [t, n]).
Rows model_rows(const FittedModel& fitted, const Mat& inputs, const Mat* targets) {
  Rows r;
  r.regression = fitted.regression();
  r.num_rows = inputs.cols();
  const PredictiveDraws pd = fitted.predictive_draws(inputs);
  const Index S = pd.num_draws();
  if (r.regression) {
    const Index t = pd.means.front().rows();
    r.targets_per_row = t;
    r.form = RegressionPredictive::Form::Mixture;
    r.a.resize(S, t * r.num_rows);
    r.b.resize(S, t * r.num_rows);
    const Vec& shift = fitted.standardizer().target_mean();
    const Vec& scale = fitted.standardizer().target_scale();
    for (Index s = 0; s < S; ++s)
      for (Index i = 0; i < r.num_rows; ++i)
        for (Index o = 0; o < t; ++o) {
          r.a(s, o + t * i) = shift(o) + scale(o) * pd.means[static_cast<std::size_t>(s)](o, i);
          r.b(s, o + t * i) = std::abs(scale(o)) * std::sqrt(pd.noise_variance[static_cast<std::size_t>(s)](o, i));
        }
    if (targets) {
      r.y.resize(t * r.num_rows);
      for (Index o = 0; o < t; ++o)
        for (Index i = 0; i < r.num_rows; ++i) r.y(o + t * i) = (*targets)(o, i);
    }
    return r;
  }
  r.categorical = fitted.likelihood().kind() == "categorical";
  r.draws = pd.means;
  r.probabilities = Mat::Zero(pd.means.front().rows(), r.num_rows);
  for (const Mat& d : pd.means) r.probabilities += d;
  r.probabilities /= static_cast<double>(S);
  if (targets) r.targets = *targets;
  return r;
}

Rows model_rows(const FittedModel& fitted, const std::filesystem::path& path, bool labelled) {
  const CsvTable table = read_csv(path);
  const auto& input_names = fitted.input_names();
  const auto& target_names = fitted.target_names();
  Mat inputs(static_cast<Index>(input_names.size()), table.num_rows());
  for (std::size_t i = 0; i < input_names.size(); ++i)
    inputs.row(static_cast<Index>(i)) = table.values.col(need_column(table, input_names[i], "an input of the model")).transpose();
  if (!labelled) return model_rows(fitted, inputs, nullptr);
  const bool categorical = !fitted.regression() && fitted.likelihood().kind() == "categorical";
  const Index t = categorical ? 1 : static_cast<Index>(target_names.size());
  Mat targets(t, table.num_rows());
  for (Index o = 0; o < t; ++o) {
    const Index c = need_column(table, target_names[static_cast<std::size_t>(o)], "a target of the model");
    targets.row(o) = table.values.col(c).transpose();
  }
  Rows r = model_rows(fitted, inputs, &targets);
  if (!r.regression)
    for (Index o = 0; o < t; ++o)
      check_class_targets(table, need_column(table, target_names[static_cast<std::size_t>(o)], "a target of the model"), r.categorical,
                          r.probabilities.rows());
  return r;
}

/// External predictions (see evaluate.hpp); targets from `labels` (or from the predictions file).
Rows external_rows(const std::filesystem::path& path, const std::filesystem::path& labels, const std::string& target, bool labelled) {
  const CsvTable table = read_csv(path);
  Rows r;
  r.num_rows = table.num_rows();
  std::vector<Index> samples, probs;
  for (Index c = 0; c < table.num_columns(); ++c) {
    const std::string& n = table.column_names[static_cast<std::size_t>(c)];
    if (n.rfind("sample", 0) == 0) samples.push_back(c);
    if (n.rfind("prob_", 0) == 0) probs.push_back(c);
  }
  const Index mean_c = table.find_column("mean"), sd_c = table.find_column("sd");
  const int forms = (mean_c >= 0 && sd_c >= 0) + !samples.empty() + !probs.empty();
  if (forms != 1)
    throw InputError(fmt::format("{}: predictions need exactly one of: columns 'mean' and 'sd'; 'sample_*' columns; 'prob_0', "
                                 "'prob_1', ... columns (found: {})", table.source, columns_of(table)));
  if (!probs.empty()) {
    r.regression = false;
    const auto K = static_cast<Index>(probs.size());
    if (K < 2) throw InputError(fmt::format("{}: class probabilities need at least two columns prob_0, prob_1, ...", table.source));
    r.probabilities.resize(K, r.num_rows);
    for (Index k = 0; k < K; ++k) {
      const Index c = table.find_column("prob_" + std::to_string(k));
      if (c < 0) throw InputError(fmt::format("{}: no column 'prob_{}' (class columns are prob_0 .. prob_{})", table.source, k, K - 1));
      r.probabilities.row(k) = table.values.col(c).transpose();
    }
    for (Index i = 0; i < r.num_rows; ++i) {
      const double total = r.probabilities.col(i).sum();
      if ((r.probabilities.col(i).array() < 0).any() || std::abs(total - 1) > 1e-6)
        throw InputError(fmt::format("{}:{}: class probabilities must be >= 0 and sum to 1 (they sum to {})", table.source, i + 2,
                                     format_double(total)));
    }
  } else if (!samples.empty()) {
    if (samples.size() < 2) throw InputError(fmt::format("{}: predictive samples need at least two 'sample_*' columns", table.source));
    r.form = RegressionPredictive::Form::Samples;
    r.a.resize(static_cast<Index>(samples.size()), r.num_rows);
    for (std::size_t k = 0; k < samples.size(); ++k) r.a.row(static_cast<Index>(k)) = table.values.col(samples[k]).transpose();
  } else {
    r.form = RegressionPredictive::Form::Gaussian;
    r.mean = table.values.col(mean_c);
    r.sd = table.values.col(sd_c);
    for (Index i = 0; i < r.num_rows; ++i)
      if (!(r.sd(i) > 0)) throw InputError(fmt::format("{}:{}: column 'sd': {} is not > 0", table.source, i + 2, format_double(r.sd(i))));
  }
  if (!labelled) return r;
  const CsvTable label_table = labels.empty() ? table : read_csv(labels);
  if (label_table.num_rows() != r.num_rows)
    throw InputError(fmt::format("{} has {} rows but {} has {}: the predictions and the labelled rows must match one to one", label_table.source,
                                 label_table.num_rows(), table.source, r.num_rows));
  const Index c = need_column(label_table, target, "the target; --target names it");
  if (r.regression) {
    r.y = label_table.values.col(c);
  } else {
    check_class_targets(label_table, c, true, r.probabilities.rows());
    r.targets = label_table.values.col(c).transpose();
  }
  return r;
}

std::string level_key(double level) { return format_double(level); }

nlohmann::json bins_json(const std::vector<ClassificationMetrics::Bin>& bins) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : bins)
    out.push_back({{"lower", b.lower}, {"upper", b.upper}, {"confidence", b.confidence}, {"accuracy", b.accuracy}, {"count", b.count}});
  return out;
}

/// At most ~100 evenly spaced points of a long curve, always with its last point.
std::vector<Index> thin(Index n) {
  std::vector<Index> idx;
  const Index step = std::max<Index>(1, n / 100);
  for (Index i = step - 1; i < n; i += step) idx.push_back(i);
  if (idx.empty() || idx.back() != n - 1) idx.push_back(n - 1);
  return idx;
}

/// Runs `draw` to write a figure into the report, or records why it could not be written.
void figure(EvaluateReport& report, const std::filesystem::path& path, const std::function<void()>& draw) {
  try {
    draw();
    report.files.push_back(path);
  } catch (const std::exception& e) {
    report.figure_warnings.push_back(path.filename().string() + " not written: " + e.what());
  }
}

void regression_figure(const RegressionScores& s, const std::string& title, const std::filesystem::path& path) {
  plot::Figure fig(1, 2);
  fig.title(title);
  plot::Panel& pit = fig.panel(0, 0);
  pit.title("PIT histogram (flat when calibrated)").x_label("PIT = F(y)").y_label("density").x_range(0, 1);
  pit.histogram(s.pit, 20, fmt::format("{} points", s.n), {}, true);
  Vec ux(2), uy(2);
  ux << 0, 1;
  uy << 1, 1;
  plot::Style dashed;
  dashed.colour = "#555555";
  dashed.dash = plot::Dash::Dashed;
  pit.line(ux, uy, "uniform", dashed);
  plot::Panel& curve = fig.panel(0, 1);
  curve.title("calibration curve").x_label("nominal coverage of the central interval").y_label("observed coverage").square();
  curve.x_range(0, 1).y_range(0, 1).key(plot::KeyPosition::BottomRight);
  curve.diagonal("perfect calibration");
  const Eigen::Map<const Vec> x(s.calibration_nominal.data(), static_cast<Index>(s.calibration_nominal.size()));
  const Eigen::Map<const Vec> y(s.calibration_observed.data(), static_cast<Index>(s.calibration_observed.size()));
  plot::Style marks;
  marks.colour = plot::kPalette[0];
  marks.point_size = 1.0;
  curve.line(x, y, fmt::format("observed (CRPS {:.4g})", s.crps), marks);
  curve.points(x, y, "", marks);
  fig.save(path, 1100, 520);
}

void classification_figure(const ClassificationScores& s, const std::string& title, const std::filesystem::path& path) {
  plot::Figure fig(1, 2);
  fig.title(title);
  plot::Panel& rel = fig.panel(0, 0);
  rel.title("reliability diagram").x_label("confidence (top-class probability)").y_label("accuracy").square();
  // Top left: overconfident bins lie below the diagonal, at the bottom right.
  rel.x_range(0, 1).y_range(0, 1.04).key(plot::KeyPosition::TopLeft);
  rel.diagonal("perfect calibration");
  const auto series = [&](const CalibrationError& e, const std::string& label, std::size_t colour) {
    std::vector<double> cx, cy;
    for (const auto& b : e.bins)
      if (b.count > 0) {
        cx.push_back(b.confidence);
        cy.push_back(b.accuracy);
      }
    plot::Style st;
    st.colour = plot::kPalette[colour];
    st.point_size = 1.0;
    const Eigen::Map<const Vec> x(cx.data(), static_cast<Index>(cx.size())), y(cy.data(), static_cast<Index>(cy.size()));
    rel.line(x, y, label, st);
    rel.points(x, y, "", st);
  };
  series(s.equal_width, fmt::format("equal-width bins (ECE {:.3f}, MCE {:.3f})", s.equal_width.ece, s.equal_width.mce), 0);
  series(s.equal_mass, fmt::format("equal-mass bins (ECE {:.3f}, MCE {:.3f})", s.equal_mass.ece, s.equal_mass.mce), 1);
  plot::Panel& rc = fig.panel(0, 1);
  rc.title("risk-coverage curve").x_label("coverage (share of points accepted, most confident first)").y_label("risk (error rate)");
  rc.x_range(0, 1).key(plot::KeyPosition::TopLeft);
  plot::Style st;
  st.colour = plot::kPalette[2];
  st.line_width = 1.5;
  rc.line(s.risk_coverage.coverage, s.risk_coverage.risk, fmt::format("AURC {:.4f}, accuracy {:.3f}", s.risk_coverage.aurc, s.basic.accuracy), st);
  fig.save(path, 1100, 520);
}

nlohmann::json regression_json(const RegressionScores& s, const RegressionPredictive& p) {
  nlohmann::json j;
  j["task"] = "regression";
  j["n"] = s.n;
  j["rmse"] = s.rmse;
  j["mae"] = s.mae;
  j["nll"] = s.nll;
  j["gaussian_nll"] = s.gaussian_nll;
  j["crps"] = s.crps;
  const char* forms[] = {"gaussian", "mixture", "samples"};
  j["predictive_form"] = forms[static_cast<int>(p.form())];
  j["crps_method"] = p.form() == RegressionPredictive::Form::Gaussian ? "closed form of the Gaussian (Gneiting and Raftery 2007)"
                     : p.form() == RegressionPredictive::Form::Samples ? "energy form on the samples (Gneiting and Raftery 2007)"
                     : p.num_components() <= kCrpsExactMaxComponents ? "closed form of the Gaussian mixture (Grimit et al. 2006)"
                                                                      : "energy form on quantiles of the mixture's components";
  nlohmann::json intervals = nlohmann::json::object();
  for (const auto& [level, c] : s.coverage) intervals[level_key(level)] = {{"coverage", c}, {"mean_width", s.width.at(level)}};
  j["intervals"] = intervals;
  j["calibration_curve"] = {{"nominal", s.calibration_nominal}, {"observed", s.calibration_observed}};
  std::vector<Index> counts(10, 0);
  for (Index i = 0; i < s.pit.size(); ++i) ++counts[static_cast<std::size_t>(std::min<Index>(9, static_cast<Index>(s.pit(i) * 10)))];
  j["pit_histogram"] = {{"bins", 10}, {"counts", counts}};
  return j;
}

nlohmann::json classification_json(const ClassificationScores& s) {
  nlohmann::json j;
  j["task"] = "classification";
  j["n"] = s.basic.n;
  j["accuracy"] = s.basic.accuracy;
  j["nll"] = s.basic.nll;
  j["brier"] = s.basic.brier;
  j["ece"] = s.equal_width.ece;
  j["mce"] = s.equal_width.mce;
  j["ece_adaptive"] = s.equal_mass.ece;
  j["mce_adaptive"] = s.equal_mass.mce;
  j["aurc"] = s.risk_coverage.aurc;
  j["reliability"] = {{"equal_width", bins_json(s.equal_width.bins)}, {"equal_mass", bins_json(s.equal_mass.bins)}};
  std::vector<double> cov, risk;
  for (Index i : thin(s.risk_coverage.coverage.size())) {
    cov.push_back(s.risk_coverage.coverage(i));
    risk.push_back(s.risk_coverage.risk(i));
  }
  j["risk_coverage"] = {{"coverage", cov}, {"risk", risk}};
  return j;
}

/// The metrics of a regression or classification predictive on labelled rows (metrics.json's top
/// level before the source, conformal and OOD sections), with the scores for the figures.
nlohmann::json score_rows(const Rows& rows, const std::vector<double>& levels, int bins, std::optional<RegressionScores>* regression_scores,
                          std::optional<ClassificationScores>* classification_scores) {
  if (rows.regression) {
    const RegressionPredictive p = rows.predictive();
    RegressionScores s = score_regression(p, rows.y, levels);
    nlohmann::json j = regression_json(s, p);
    if (regression_scores) *regression_scores = std::move(s);
    return j;
  }
  ClassificationScores s = score_classification(rows.probabilities, rows.targets, rows.categorical, bins);
  nlohmann::json j = classification_json(s);
  if (classification_scores) *classification_scores = std::move(s);
  return j;
}

nlohmann::json detection_json(const DetectionScores& d) {
  return {{"auroc", d.auroc}, {"aupr", d.aupr}, {"fpr_at_95_tpr", d.fpr_at_95_tpr}};
}

UncertaintyScores uncertainty_of(const Rows& r) {
  if (!r.draws.empty()) return uncertainty_scores(r.draws);
  return uncertainty_scores({r.probabilities});
}

/// The conformal section of metrics.json: calibrated on `cal`, scored on `test`.
nlohmann::json conformal_json(const EvaluateConfig& cfg, const Rows& cal, const Rows& test, Rng& rng,
                              std::vector<std::pair<std::string, std::map<double, double>>>& curves) {
  const std::string& m = cfg.conformal;
  nlohmann::json j = {{"method", m}, {"calibration_rows", cal.num_rows}, {"test_rows", test.num_rows}};
  const bool wants_regression = m == "split" || m == "cqr";
  if (wants_regression != test.regression)
    throw InputError(fmt::format("--conformal {} is for {} (this evaluation is of {}): valid are {}", m,
                                 wants_regression ? "regression" : "classification", test.regression ? "regression" : "classification",
                                 test.regression ? "split, cqr" : "aps, raps, temperature"));
  if (test.regression) {
    const RegressionPredictive pc = cal.predictive(), pt = test.predictive();
    const Index nt = pt.size();
    std::map<double, double> own_curve, conformal_curve;
    nlohmann::json levels = nlohmann::json::object();
    for (double level : cfg.levels) {
      const double alpha = 1 - level;
      Vec lo_c(pc.size()), hi_c(pc.size()), lo_t(nt), hi_t(nt);
      for (Index i = 0; i < pc.size(); ++i) {
        lo_c(i) = pc.quantile(i, alpha / 2);
        hi_c(i) = pc.quantile(i, 1 - alpha / 2);
      }
      for (Index i = 0; i < nt; ++i) {
        lo_t(i) = pt.quantile(i, alpha / 2);
        hi_t(i) = pt.quantile(i, 1 - alpha / 2);
      }
      const ConformalIntervals c = m == "split"
                                       ? normalized_split_conformal(pt.mean(), pt.sd(), normalized_split_conformal_quantile(pc.mean(), pc.sd(), cal.y, alpha))
                                       : cqr(lo_t, hi_t, cqr_quantile(lo_c, hi_c, cal.y, alpha));
      const auto share = [&](const Vec& lo, const Vec& hi) {
        return static_cast<double>((test.y.array() >= lo.array() && test.y.array() <= hi.array()).count()) / static_cast<double>(nt);
      };
      const double coverage = share(c.lower, c.upper), own = share(lo_t, hi_t);
      levels[level_key(level)] = {{"coverage", coverage},
                                  {"mean_width", std::isfinite(c.quantile) ? (c.upper - c.lower).mean() : std::numeric_limits<double>::infinity()},
                                  {"quantile", c.quantile},
                                  {"own_coverage", own},
                                  {"own_mean_width", (hi_t - lo_t).mean()},
                                  {"expected_coverage_upper_bound", std::min(1.0, level + 1.0 / static_cast<double>(cal.y.size() + 1))}};
      if (!std::isfinite(c.quantile))
        levels[level_key(level)]["note"] = fmt::format("{} calibration rows are too few for level {}: the interval is the whole line",
                                                       cal.y.size(), format_double(level));
      own_curve[level] = own;
      conformal_curve[level] = coverage;
    }
    j["levels"] = levels;
    j["reference"] = m == "split" ? "Lei et al. (2018), normalised by the predictive sd" : "Romano et al. (2019)";
    curves = {{"the method's own intervals", own_curve}, {m == "split" ? "split conformal (normalised)" : "CQR", conformal_curve}};
    return j;
  }
  // Not structured bindings: clang 14 cannot capture those in the lambdas below.
  const auto cal_classes = cal.classes(), test_classes = test.classes();
  const auto& pc = cal_classes.first;
  const auto& yc = cal_classes.second;
  const auto& pt = test_classes.first;
  const auto& yt = test_classes.second;
  if (m == "temperature") {
    const TemperatureFit fit = fit_temperature(pc, yc);
    const Mat scaled = apply_temperature(test.probabilities, fit.temperature);
    const ClassificationScores before = score_classification(test.probabilities, test.targets, test.categorical, cfg.bins);
    const ClassificationScores after = score_classification(scaled, test.targets, test.categorical, cfg.bins);
    j["temperature"] = fit.temperature;
    j["converged"] = fit.converged;
    j["iterations"] = fit.iterations;
    j["gradient"] = fit.gradient;
    j["calibration_nll"] = {{"before", fit.nll_before}, {"after", fit.nll_after}};
    j["test"] = {{"nll_before", before.basic.nll}, {"nll_after", after.basic.nll}, {"ece_before", before.equal_width.ece},
                 {"ece_after", after.equal_width.ece}, {"accuracy", after.basic.accuracy}};
    j["reference"] = "Guo et al. (2017)";
    return j;
  }
  SetScoreOptions options;
  if (m == "raps") {
    options.lambda = cfg.raps_lambda;
    options.k_reg = cfg.raps_k_reg;
  }
  nlohmann::json levels = nlohmann::json::object();
  std::map<double, double> own_curve, conformal_curve;
  for (double level : cfg.levels) {
    const double alpha = 1 - level;
    const Vec scores = set_scores(pc, yc, options, rng);
    const double q = conformal_quantile(std::vector<double>(scores.data(), scores.data() + scores.size()), alpha);
    const auto sets = prediction_sets(pt, q, options, rng);
    // The method's own sets: the most probable classes until their probability reaches the level.
    Rng unused(0, 0);
    const auto own = prediction_sets(pt, level, SetScoreOptions{0.0, 0, false}, unused);
    double covered = 0, size = 0, own_covered = 0, own_size = 0;
    for (std::size_t i = 0; i < sets.size(); ++i) {
      covered += std::find(sets[i].begin(), sets[i].end(), yt[i]) != sets[i].end();
      size += static_cast<double>(sets[i].size());
      // The own set is the prefix whose cumulative probability first reaches the level.
      std::vector<Index> o = own[i];
      if (o.size() < static_cast<std::size_t>(pt.rows()) && [&] {
            double total = 0;
            for (Index k : o) total += pt(k, static_cast<Index>(i));
            return total < level;
          }()) {
        std::vector<Index> order(static_cast<std::size_t>(pt.rows()));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return pt(a, static_cast<Index>(i)) > pt(b, static_cast<Index>(i)); });
        o.push_back(order[o.size()]);
      }
      own_covered += std::find(o.begin(), o.end(), yt[i]) != o.end();
      own_size += static_cast<double>(o.size());
    }
    const double n = static_cast<double>(sets.size());
    levels[level_key(level)] = {{"coverage", covered / n}, {"mean_set_size", size / n}, {"quantile", q},
                                {"own_coverage", own_covered / n}, {"own_mean_set_size", own_size / n}};
    own_curve[level] = own_covered / n;
    conformal_curve[level] = covered / n;
  }
  j["levels"] = levels;
  j["reference"] = m == "aps" ? "Romano et al. (2020), randomised" : "Angelopoulos et al. (2021), randomised";
  if (m == "raps") j["raps"] = {{"lambda", options.lambda}, {"k_reg", options.k_reg}};
  curves = {{"the method's own sets (top classes to the level)", own_curve}, {m == "aps" ? "APS" : "RAPS", conformal_curve}};
  return j;
}

void conformal_figure(const std::vector<std::pair<std::string, std::map<double, double>>>& curves, const std::string& title,
                      const std::filesystem::path& path) {
  plot::Figure fig;
  plot::Panel& p = fig.panel();
  p.title(title).x_label("nominal coverage").y_label("observed coverage on the test rows").square().key(plot::KeyPosition::BottomRight);
  double lo = 1;
  for (const auto& [name, c] : curves)
    for (const auto& [nominal, observed] : c) lo = std::min({lo, nominal, observed});
  lo = std::max(0.0, std::floor(lo * 10 - 0.5) / 10);
  p.x_range(lo, 1).y_range(lo, 1);
  p.diagonal("nominal");
  std::size_t colour = 0;
  for (const auto& [name, c] : curves) {
    Vec x(static_cast<Index>(c.size())), y(static_cast<Index>(c.size()));
    Index i = 0;
    for (const auto& [nominal, observed] : c) {
      x(i) = nominal;
      y(i++) = observed;
    }
    plot::Style st;
    st.colour = plot::kPalette[colour++];
    st.point_size = 1.2;
    st.line_width = 1.5;
    p.line(x, y, name, st);
    p.points(x, y, "", st);
  }
  fig.save(path, 640, 560);
}

}  // namespace

EvaluateReport run_evaluate(const EvaluateConfig& cfg) {
  cfg.validate();
  const bool external = cfg.model_dir.empty();
  std::optional<FittedModel> fitted;
  if (!external) fitted.emplace(FittedModel::load(cfg.model_dir));
  const auto load = [&](const std::filesystem::path& path, const std::filesystem::path& labels, bool labelled) {
    return external ? external_rows(path, labels, cfg.target, labelled) : model_rows(*fitted, path, labelled);
  };
  Rows rows = external ? load(cfg.predictions, cfg.data, true) : load(cfg.data, {}, true);
  std::optional<Rows> calibration;
  Rng rng(cfg.seed, 0xe7a1);
  if (!cfg.conformal.empty()) {
    if (!cfg.calibration_data.empty()) {
      calibration = external ? load(cfg.calibration_data, {}, true) : load(cfg.calibration_data, {}, true);
    } else {
      // A random split of the rows (Fisher-Yates with the seed's stream): calibration first.
      std::vector<Index> order(static_cast<std::size_t>(rows.num_rows));
      std::iota(order.begin(), order.end(), 0);
      for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.uniform_index(i)]);
      const auto n_cal = static_cast<std::size_t>(std::llround(cfg.calibration_fraction * static_cast<double>(rows.num_rows)));
      if (n_cal < 1 || n_cal >= order.size())
        throw InputError(fmt::format("--calibration-fraction {} of {} rows leaves {} calibration and {} test rows: both need at least one",
                                     format_double(cfg.calibration_fraction), rows.num_rows, n_cal, order.size() - n_cal));
      std::vector<Index> cal(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_cal)), test(order.begin() + static_cast<std::ptrdiff_t>(n_cal), order.end());
      std::sort(cal.begin(), cal.end());
      std::sort(test.begin(), test.end());
      calibration = rows.subset(cal);
      rows = rows.subset(test);
    }
    if (calibration->regression != rows.regression) throw InputError("--calibration-data holds predictions of another kind than --data's");
  }

  EvaluateReport report;
  const std::string source = external ? cfg.predictions.string() : cfg.model_dir.string();
  const std::string title = external ? cfg.predictions.filename().string() : (fitted->method() + " on " + cfg.data.filename().string());
  const std::filesystem::path out_dir = !cfg.out.empty() ? cfg.out
                                        : external        ? std::filesystem::path("uqnn-evaluate")
                                                          : cfg.model_dir / ("evaluation_" + cfg.data.stem().string());
  StagedOutputDir out(out_dir, "--out");
  nlohmann::json& j = report.metrics;
  std::vector<std::pair<std::string, std::map<double, double>>> curves;
  std::optional<RegressionScores> regression_scores;
  std::optional<ClassificationScores> classification_scores;
  j = score_rows(rows, cfg.levels, cfg.bins, &regression_scores, &classification_scores);
  if (cfg.figures && regression_scores)
    figure(report, out.staging() / "calibration.png", [&] { regression_figure(*regression_scores, title, out.staging() / "calibration.png"); });
  if (cfg.figures && classification_scores)
    figure(report, out.staging() / "reliability.png",
           [&] { classification_figure(*classification_scores, title, out.staging() / "reliability.png"); });
  j["source"] = source;
  if (!external) {
    j["method"] = fitted->method();
    j["num_draws"] = fitted->draws().size();
  }
  j["data"] = external ? (cfg.data.empty() ? cfg.predictions.string() : cfg.data.string()) : cfg.data.string();
  if (calibration) {
    j["conformal"] = conformal_json(cfg, *calibration, rows, rng, curves);
    if (cfg.figures && !curves.empty())
      figure(report, out.staging() / "conformal.png", [&] {
        conformal_figure(curves, fmt::format("coverage before and after {} ({} calibration rows)", cfg.conformal, calibration->num_rows),
                         out.staging() / "conformal.png");
      });
  }
  const std::filesystem::path ood_path = external ? cfg.ood_predictions : cfg.ood_data;
  if (!ood_path.empty()) {
    const Rows ood = load(ood_path, {}, false);
    nlohmann::json o = {{"in_distribution_rows", rows.num_rows}, {"ood_rows", ood.num_rows}, {"positive_class", "out-of-distribution"}};
    if (rows.regression) {
      // Regression: the predictive sd, and the spread of the draws' means (epistemic) when the
      // predictive is a mixture.
      const RegressionPredictive pi = rows.predictive(), po = ood.predictive();
      o["predictive_sd"] = detection_json(detection_scores(pi.sd(), po.sd()));
      if (rows.form == RegressionPredictive::Form::Mixture && rows.a.rows() > 1) {
        const auto spread = [](const Mat& a) {
          return Vec(((a.rowwise() - a.colwise().mean()).array().square().colwise().sum() / static_cast<double>(a.rows() - 1)).sqrt().transpose());
        };
        o["epistemic_sd"] = detection_json(detection_scores(spread(rows.a), spread(ood.a)));
      }
    } else {
      for (const auto& [name, d] : ood_detection(uncertainty_of(rows), uncertainty_of(ood))) o[name] = detection_json(d);
      if (rows.draws.size() <= 1) o["note"] = "one set of probabilities per row: the mutual information is 0 for every row";
    }
    j["ood"] = o;
  }
  atomic_write_text(out.staging() / "metrics.json", j.dump(2) + "\n");
  report.files.insert(report.files.begin(), out.staging() / "metrics.json");
  out.commit();
  for (auto& f : report.files) f = out.final_path(f);
  return report;
}

nlohmann::json evaluate_fitted(const FittedModel& fitted, const Mat& inputs, const Mat& targets, const std::vector<double>& levels,
                               int bins) {
  return score_rows(model_rows(fitted, inputs, &targets), levels, bins, nullptr, nullptr);
}

}  // namespace uqnn
