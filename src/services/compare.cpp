#include "uqnn/services/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <map>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/staged_output_dir.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/plot/plots.hpp"
#include "uqnn/predictive/agreement.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/services/evaluate.hpp"
#include "uqnn/services/fit_output.hpp"
#include "uqnn/services/fitted_model.hpp"

namespace uqnn {

namespace {

/// The 1-D predictive of a finished fit on `grid` (original units), reloaded from its files.
plot::Predictive1d reload_predictive(const std::filesystem::path& dir, const Mat& grid, const Dataset& data,
                                     const std::string& title, std::uint64_t seed) {
  const FittedModel fitted = FittedModel::load(dir);
  Rng rng(seed, 0x9ed);
  const PredictiveSummary s = fitted.predict(grid, {}, rng);
  plot::Predictive1d p;
  p.title = title;
  p.x_train = data.inputs.row(0).transpose();
  p.y_train = data.targets.row(0).transpose();
  p.x_grid = grid.row(0).transpose();
  p.mean = s.mean.row(0).transpose();
  p.sd = s.sd.row(0).transpose();
  return p;
}

/// A finished regression fit's predictions against the truth on `rows` of `data` (one target).
plot::ParityPanel reload_parity(const std::filesystem::path& dir, const Dataset& data, const IndexVec& rows,
                                const std::string& title, std::uint64_t seed) {
  const Dataset part = data.subset(rows);
  const FittedModel fitted = FittedModel::load(dir);
  Rng rng(seed, 0x9ed);
  const PredictiveSummary s = fitted.predict(part.inputs, {}, rng);
  return {title, part.targets.row(0).transpose(), s.mean.row(0).transpose(), Vec(s.sd.row(0).transpose())};
}

/// Samples of a fit's predictive at `inputs`: [samples, t * n] (entry o + t i), drawn over the
/// draws uniformly.
Mat predictive_samples(const FittedModel& fitted, const Mat& inputs, Index count, Rng& rng) {
  std::vector<Index> index(static_cast<std::size_t>(count));
  for (auto& k : index) k = static_cast<Index>(rng.uniform_index(static_cast<std::uint64_t>(fitted.draws().size())));
  const std::vector<Mat> y = fitted.sample_predictive(inputs, index, rng);
  Mat out(count, y.front().size());
  for (Index s = 0; s < count; ++s) out.row(s) = Eigen::Map<const Eigen::RowVectorXd>(y[static_cast<std::size_t>(s)].data(), y[static_cast<std::size_t>(s)].size());
  return out;
}

/// Samples per row for the 1-Wasserstein distances: the distance between two empirical
/// distributions of m samples is within about sd / sqrt(m) of the true one.
constexpr Index kReferenceSamples = 2000;

/// One method scored against the reference on `inputs`: the per-row distances (W1 or total
/// variation) and the summary for the table.
struct ReferenceScore {
  Vec per_row;
  nlohmann::json summary;
};

ReferenceScore score_against_reference(const FittedModel& method, const FittedModel& reference, const Mat& inputs, std::uint64_t seed) {
  ReferenceScore r;
  Rng rng(seed, 0x7ef);
  if (!method.regression()) {
    const Mat p = method.predict(inputs, {}, rng).mean, q = reference.predict(inputs, {}, rng).mean;
    const ClassAgreement a = class_agreement(p, q);
    r.per_row = a.total_variation;
    r.summary = {{"top1_agreement", a.top1.mean()}, {"total_variation", a.total_variation.mean()}, {"rows", inputs.cols()}};
    return r;
  }
  const Mat a = predictive_samples(method, inputs, kReferenceSamples, rng), b = predictive_samples(reference, inputs, kReferenceSamples, rng);
  r.per_row.resize(a.cols());
  for (Index e = 0; e < a.cols(); ++e)
    r.per_row(e) = wasserstein1(std::vector<double>(a.col(e).data(), a.col(e).data() + a.rows()),
                                std::vector<double>(b.col(e).data(), b.col(e).data() + b.rows()));
  const Mat sd = method.predict(inputs, {}, rng).sd, sd_ref = reference.predict(inputs, {}, rng).sd;
  const Vec ratio = Eigen::Map<const Vec>(sd.data(), sd.size()).array() / Eigen::Map<const Vec>(sd_ref.data(), sd_ref.size()).array();
  std::vector<double> sorted(ratio.data(), ratio.data() + ratio.size());
  std::sort(sorted.begin(), sorted.end());
  r.summary = {{"wasserstein1", r.per_row.mean()},
               {"sd_ratio_median", sorted[sorted.size() / 2]},
               {"sd_ratio_mean", ratio.mean()},
               {"rows", inputs.cols()}};
  return r;
}

/// The scalar metrics of `uqnn evaluate` (evaluate_fitted) that compare.json keeps: the curves and
/// bins of metrics.json are left to `uqnn evaluate`.
nlohmann::json evaluation_summary(const nlohmann::json& metrics) {
  nlohmann::json j = nlohmann::json::object();
  for (const char* key : {"task", "n", "rmse", "mae", "nll", "crps", "intervals", "accuracy", "brier", "ece", "mce", "ece_adaptive", "aurc"})
    if (metrics.contains(key)) j[key] = metrics.at(key);
  return j;
}

/// The evaluation's cells of compare.md: RMSE, NLL, CRPS and coverage at 90 and 95%; accuracy, NLL,
/// Brier and ECE.
std::string evaluation_cells(const nlohmann::json& e) {
  if (e.at("task") == "regression")
    return fmt::format(" {:.4g} | {:.4g} | {:.4g} | {:.3f} | {:.3f} |", e.at("rmse").get<double>(), e.at("nll").get<double>(),
                       e.at("crps").get<double>(), e.at("intervals").at("0.9").at("coverage").get<double>(),
                       e.at("intervals").at("0.95").at("coverage").get<double>());
  return fmt::format(" {:.4f} | {:.4g} | {:.4g} | {:.4f} |", e.at("accuracy").get<double>(), e.at("nll").get<double>(),
                     e.at("brier").get<double>(), e.at("ece").get<double>());
}

/// The per-row distances of each method, sorted: x = share of rows, y = distance.
void reference_figure(const std::vector<std::pair<std::string, Vec>>& distances, bool regression, const std::string& reference,
                      const std::filesystem::path& path) {
  plot::Figure fig;
  plot::Panel& p = fig.panel();
  p.title(fmt::format("predictive against the reference ({}), per scored row", reference))
      .x_label("share of rows")
      .y_label(regression ? "1-Wasserstein distance to the reference predictive" : "total variation to the reference")
      .key(plot::KeyPosition::TopLeft);
  std::size_t colour = 0;
  for (const auto& [name, d] : distances) {
    std::vector<double> v(d.data(), d.data() + d.size());
    std::sort(v.begin(), v.end());
    Vec x(d.size()), y(d.size());
    for (Index i = 0; i < d.size(); ++i) {
      x(i) = (static_cast<double>(i) + 0.5) / static_cast<double>(d.size());
      y(i) = v[static_cast<std::size_t>(i)];
    }
    plot::Style st;
    st.colour = plot::kPalette[colour++ % plot::kPalette.size()];
    st.line_width = 2;
    p.line(x, y, name, st);
  }
  fig.save(path, 720, 480);
}

/// One fit configuration per method from the same options (an option of another compared method is
/// accepted), every one checked before the first fit: a usage error stops at once. With --reference
/// nuts, nuts runs first.
std::pair<std::vector<std::string>, std::vector<FitConfig>> method_configs(const CompareConfig& config) {
  if (config.methods.empty()) throw InputError("--methods is empty: name at least one method (e.g. map,ens,vi)");
  const auto known = method_names();
  for (const auto& m : config.methods)
    if (std::find(known.begin(), known.end(), m) == known.end())
      throw InputError(fmt::format("--methods: '{}' is not known: valid are {}", m, fmt::join(known, ", ")));
  std::vector<std::string> methods = config.methods;
  if (config.reference == "nuts" && std::find(methods.begin(), methods.end(), "nuts") == methods.end()) methods.insert(methods.begin(), "nuts");
  std::vector<FitConfig> configs;
  for (const auto& method : methods) {
    FitRequest request = config.request;
    request.given.push_back({"method", method, "--methods " + method});
    request.also_accept_methods = methods;
    configs.push_back(make_fit_config(request));
    if (config.dataset) configs.back().data.dataset = config.dataset;
  }
  return {methods, configs};
}

/// compare.md's first table: one row per method that finished, its metrics per split (regression:
/// RMSE / NLL / LPPD / 95% coverage; classification: accuracy / NLL / Brier / ECE); then the failures.
std::string metrics_table(const std::vector<std::pair<std::string, nlohmann::json>>& rows, const CompareReport& report) {
  std::vector<std::string> splits;
  bool classification = false;
  for (const auto& [method, row] : rows)
    if (row.contains("splits"))
      for (const auto& [split, m] : row.at("splits").items()) {
        if (std::find(splits.begin(), splits.end(), split) == splits.end()) splits.push_back(split);
        classification = classification || m.contains("accuracy");
      }
  const std::vector<std::string> keys = classification ? std::vector<std::string>{"accuracy", "nll", "brier", "ece"}
                                                       : std::vector<std::string>{"rmse", "nll", "lppd", "coverage_95"};
  std::string md = "| method | draws | seconds |";
  for (const auto& s : splits)
    for (const auto& k : keys) md += " " + s + " " + k + " |";
  md += "\n|---|---:|---:|";
  for (std::size_t i = 0; i < splits.size() * keys.size(); ++i) md += "---:|";
  md += "\n";
  for (const auto& [method, row] : rows) {
    md += fmt::format("| {} | {} | {:.2f} |", method, row.at("num_draws").get<Index>(), row.at("seconds").get<double>());
    for (const auto& s : splits)
      for (const auto& k : keys) {
        if (row.contains("splits") && row.at("splits").contains(s) && row.at("splits").at(s).contains(k))
          md += fmt::format(" {:.4g} |", row.at("splits").at(s).at(k).get<double>());
        else
          md += " |";
      }
    md += "\n";
  }
  for (const auto& method : report.failed)
    md += fmt::format("\n{} failed: {}\n", method, report.table.at(method).at("error").get<std::string>());
  return md;
}

/// The columns of `uqnn evaluate`'s scores in compare.md's tables: their header and rule.
std::pair<std::string, std::string> evaluation_columns(bool regression) {
  if (regression) return {" RMSE | NLL | CRPS | coverage 90% | coverage 95% |", "---:|---:|---:|---:|---:|"};
  return {" accuracy | NLL | Brier | ECE |", "---:|---:|---:|---:|"};
}

/// --reference: every method's predictive scored against the reference's on the scored rows;
/// returns the markdown section and writes reference.json and its figure.
std::string reference_section(const CompareConfig& config, const FitConfig& base, const std::filesystem::path& dir,
                              const StagedOutputDir& out, const std::vector<std::pair<std::string, nlohmann::json>>& rows,
                              const std::map<std::string, nlohmann::json>& evaluation, const Dataset& scored,
                              const std::string& scored_split, CompareReport& report) {
  const bool reference_is_nuts = config.reference == "nuts";
  const std::filesystem::path ref_dir = reference_is_nuts ? dir / "nuts" : std::filesystem::path(config.reference);
  const std::filesystem::path ref_shown = reference_is_nuts ? out.final_path(ref_dir) : ref_dir;
  if (reference_is_nuts && std::find(report.failed.begin(), report.failed.end(), "nuts") != report.failed.end())
    throw InputError("--reference nuts: the NUTS fit failed: " + report.table.at("nuts").at("error").get<std::string>());
  const FittedModel reference = FittedModel::load(ref_dir);
  const bool regression = reference.regression();
  const auto [evaluation_header, evaluation_rule] = evaluation_columns(!is_classification(base.probability.likelihood));
  std::string md = fmt::format("\nAgainst the reference predictive ({}, {} draws) on the {} {} rows, with each method scored as "
                               "`uqnn evaluate` scores a fit on the same rows:\n\n",
                               ref_shown.string(), reference.draws().size(), scored.size(), scored_split);
  md += (regression ? "| method | mean 1-Wasserstein | median sd ratio | mean sd ratio |" : "| method | top-1 agreement | mean total variation |") +
        evaluation_header + "\n" + (regression ? "|---|---:|---:|---:|" : "|---|---:|---:|") + evaluation_rule + "\n";
  nlohmann::json table = nlohmann::json::object();
  std::vector<std::pair<std::string, Vec>> distances;
  for (const auto& [method, row] : rows) {
    if (reference_is_nuts && method == "nuts") {
      // The reference itself: its own scores, no agreement.
      md += fmt::format("| {} (reference) |{}", method, regression ? " | | |" : " | |") + evaluation_cells(evaluation.at(method)) + "\n";
      continue;
    }
    const ReferenceScore r = score_against_reference(FittedModel::load(dir / method), reference, scored.inputs, base.seed);
    table[method] = r.summary;
    table[method]["evaluation"] = evaluation.at(method);
    report.table[method]["reference"] = r.summary;
    distances.emplace_back(method, r.per_row);
    md += (regression ? fmt::format("| {} | {:.4g} | {:.3g} | {:.3g} |", method, r.summary.at("wasserstein1").get<double>(),
                                    r.summary.at("sd_ratio_median").get<double>(), r.summary.at("sd_ratio_mean").get<double>())
                      : fmt::format("| {} | {:.4f} | {:.4f} |", method, r.summary.at("top1_agreement").get<double>(),
                                    r.summary.at("total_variation").get<double>())) +
          evaluation_cells(evaluation.at(method)) + "\n";
  }
  atomic_write_text(dir / "reference.json",
                    nlohmann::json{{"reference", ref_shown.string()}, {"rows", scored_split}, {"methods", table}}.dump(2) + "\n");
  report.files.push_back(dir / "reference.json");
  if (base.figure_format != "none" && !distances.empty()) {
    const auto path = dir / ("reference." + base.figure_format);
    reference_figure(distances, regression, ref_shown.filename().string(), path);
    report.files.push_back(path);
  }
  return md;
}

}  // namespace

CompareReport run_compare(const CompareConfig& config) {
  const auto [methods, configs] = method_configs(config);
  const FitConfig& base = configs.front();
  // Every method's run and the comparison's files are written into a staging directory beside
  // --out (checked and locked before any fit), moved into place only when the set is complete: a
  // stopped or failed comparison leaves nothing behind, and a second one into the same --out waits
  // for none but is refused.
  StagedOutputDir out(base.out_dir, "--out");
  const std::filesystem::path dir = out.staging();
  if (base.data.path.empty() && !base.data.dataset) throw InputError("--data is required: a CSV file with a header row");
  const Dataset data = base.data.dataset ? *base.data.dataset : load_dataset(base.data.path, base.data.targets, base.data.inputs);
  const bool regression = !is_classification(base.probability.likelihood);
  // One input: every method's band over a grid, side by side. More inputs: each method's
  // predictions against the truth on the test rows (else the training rows), as a fit's own fit.png.
  const bool one_d = data.input_dim() == 1 && data.target_dim() == 1;
  const Mat grid = one_d ? predictive_figure_grid(data.inputs) : Mat();
  const bool parity = !one_d && data.target_dim() == 1 && regression;
  const Split split = choose_split(base.data, data.inputs);
  const IndexVec& scored_rows = split.test.empty() ? split.train : split.test;
  const std::string scored_split = split.test.empty() ? "training" : "test";
  std::vector<plot::Predictive1d> panels;
  std::vector<plot::ParityPanel> parity_panels;
  CompareReport report;
  std::vector<std::pair<std::string, nlohmann::json>> rows;
  for (std::size_t i = 0; i < methods.size(); ++i) {
    const std::string& method = methods[i];
    FitConfig cfg = configs[i];
    cfg.out_dir = dir / method;
    FitReport fit;
    try {
      fit = run_fit(cfg);
    } catch (const std::exception& e) {
      // One method failing (a Laplace too large for memory, a diverged fit) loses neither the
      // finished fits nor the table and figure of the others.
      report.table[method] = {{"error", e.what()}};
      report.failed.push_back(method);
      continue;
    }
    for (const auto& f : fit.files) report.files.push_back(f);
    nlohmann::json row{{"seconds", fit.metrics.at("seconds")}, {"num_draws", fit.metrics.at("num_draws")}};
    if (fit.metrics.contains("splits")) row["splits"] = fit.metrics.at("splits");
    report.table[method] = row;
    rows.emplace_back(method, row);
    const std::string panel_title = fmt::format("{} ({} draws)", method, row.at("num_draws").get<Index>());
    if (one_d) panels.push_back(reload_predictive(cfg.out_dir, grid, data, panel_title, cfg.seed));
    if (parity) parity_panels.push_back(reload_parity(cfg.out_dir, data, scored_rows, panel_title, cfg.seed));
  }
  std::string md = metrics_table(rows, report);
  if (report.failed.size() == methods.size())
    throw InputError(fmt::format("every method failed; {}: {}", report.failed.front(),
                                 report.table.at(report.failed.front()).at("error").get<std::string>()));
  // Each method scored as `uqnn evaluate` scores a fit, on the test rows (else the training rows).
  const Dataset scored = data.subset(scored_rows);
  std::map<std::string, nlohmann::json> evaluation;
  for (const auto& [method, row] : rows) {
    const nlohmann::json e = evaluation_summary(evaluate_fitted(FittedModel::load(dir / method), scored.inputs, scored.targets));
    evaluation[method] = e;
    report.table[method]["evaluation"] = e;
    report.table[method]["evaluation"]["rows"] = scored_split;
  }
  if (config.reference.empty()) {
    const auto [header, rule] = evaluation_columns(regression);
    md += fmt::format("\nScored as `uqnn evaluate` scores a fit, on the {} {} rows:\n\n| method |{}\n|---|{}\n", scored.size(), scored_split,
                      header, rule);
    for (const auto& [method, row] : rows) md += "| " + method + " |" + evaluation_cells(evaluation.at(method)) + "\n";
  } else {
    md += reference_section(config, base, dir, out, rows, evaluation, scored, scored_split, report);
  }
  atomic_write_text(dir / "compare.md", md);
  atomic_write_text(dir / "compare.json", report.table.dump(2) + "\n");
  report.files.push_back(dir / "compare.md");
  report.files.push_back(dir / "compare.json");
  if (base.figure_format != "none" && (one_d || !parity_panels.empty())) {
    const auto path = dir / ("compare." + base.figure_format);
    if (one_d) {
      plot::SideBySideOptions options;
      options.title = "predictive mean, 1 and 2 sd bands by method";
      plot::plot_side_by_side(path, panels, options);
    } else {
      plot::plot_parity_grid(path, parity_panels, fmt::format("predicted vs true on the {} rows, +-1 sd, by method", scored_split));
    }
    report.files.push_back(path);
  }
  out.commit();
  for (auto& f : report.files) f = out.final_path(f);
  return report;
}

}  // namespace uqnn
