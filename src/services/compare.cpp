#include "uqnn/services/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/plot/plots.hpp"
#include "uqnn/predictive/predictive.hpp"
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

}  // namespace

CompareReport run_compare(const CompareConfig& config) {
  if (config.methods.empty()) throw InputError("--methods is empty: name at least one method (e.g. map,ens,vi)");
  const auto known = method_names();
  for (const auto& m : config.methods)
    if (std::find(known.begin(), known.end(), m) == known.end())
      throw InputError(fmt::format("--methods: '{}' is not known: valid are {}", m, fmt::join(known, ", ")));
  CompareReport report;
  // One config per method from the same options; an option of another compared method is accepted.
  const auto config_for = [&config](const std::string& method) {
    FitRequest request = config.request;
    request.given.push_back({"method", method, "--methods " + method});
    request.also_accept_methods = config.methods;
    FitConfig cfg = make_fit_config(request);
    if (config.dataset) cfg.data.dataset = config.dataset;
    return cfg;
  };
  // Every method's options are checked before the first fit: a usage error stops at once.
  std::vector<FitConfig> configs;
  for (const auto& method : config.methods) configs.push_back(config_for(method));
  const FitConfig& base = configs.front();
  std::filesystem::create_directories(base.out_dir);
  if (base.data.path.empty() && !base.data.dataset) throw InputError("--data is required: a CSV file with a header row");
  const Dataset data = base.data.dataset ? *base.data.dataset : load_dataset(base.data.path, base.data.targets, base.data.inputs);
  const bool one_d = data.input_dim() == 1 && data.target_dim() == 1;
  Mat grid;
  if (one_d) {
    const double lo = data.inputs.minCoeff(), hi = data.inputs.maxCoeff(), pad = 0.25 * (hi - lo);
    const Index n = 300;
    grid.resize(1, n);
    for (Index i = 0; i < n; ++i) grid(0, i) = lo - pad + (hi - lo + 2 * pad) * static_cast<double>(i) / static_cast<double>(n - 1);
  }
  std::vector<plot::Predictive1d> panels;
  // More than one input: each method's predictions against the truth on the test rows (else the
  // training rows), as every fit's own fit.png does.
  const bool parity = !one_d && data.target_dim() == 1 && !is_classification(base.probability.likelihood);
  const Split split = choose_split(base.data, data.size());
  const IndexVec& parity_rows = split.test.empty() ? split.train : split.test;
  const std::string parity_split = split.test.empty() ? "training" : "test";
  std::vector<plot::ParityPanel> parity_panels;
  std::string md = "| method | draws | seconds |";
  std::vector<std::string> splits;
  std::vector<std::pair<std::string, nlohmann::json>> rows;
  for (std::size_t i = 0; i < config.methods.size(); ++i) {
    const std::string& method = config.methods[i];
    FitConfig cfg = configs[i];
    cfg.out_dir = base.out_dir / method;
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
    if (parity) parity_panels.push_back(reload_parity(cfg.out_dir, data, parity_rows, panel_title, cfg.seed));
  }
  // Markdown table: one row per method that finished, its metrics per split; then the failures.
  for (const auto& [method, row] : rows)
    if (row.contains("splits"))
      for (const auto& [split, m] : row.at("splits").items())
        if (std::find(splits.begin(), splits.end(), split) == splits.end()) splits.push_back(split);
  // Regression: RMSE / NLL / LPPD / 95% coverage; classification: accuracy / NLL / Brier / ECE.
  bool classification = false;
  for (const auto& [method, row] : rows)
    if (row.contains("splits"))
      for (const auto& [split, m] : row.at("splits").items()) classification = classification || m.contains("accuracy");
  const std::vector<std::string> keys = classification ? std::vector<std::string>{"accuracy", "nll", "brier", "ece"}
                                                       : std::vector<std::string>{"rmse", "nll", "lppd", "coverage_95"};
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
  if (report.failed.size() == config.methods.size())
    throw InputError(fmt::format("every method failed; {}: {}", report.failed.front(),
                                 report.table.at(report.failed.front()).at("error").get<std::string>()));
  const auto dir = base.out_dir;
  atomic_write_text(dir / "compare.md", md);
  atomic_write_text(dir / "compare.json", report.table.dump(2) + "\n");
  report.files.push_back(dir / "compare.md");
  report.files.push_back(dir / "compare.json");
  if (one_d && base.figure_format != "none") {
    plot::SideBySideOptions options;
    options.title = "predictive mean, 1 and 2 sd bands by method";
    const auto path = dir / ("compare." + base.figure_format);
    plot::plot_side_by_side(path, panels, options);
    report.files.push_back(path);
  }
  if (!parity_panels.empty() && base.figure_format != "none") {
    const auto path = dir / ("compare." + base.figure_format);
    plot::plot_parity_grid(path, parity_panels, fmt::format("predicted vs true on the {} rows, +-1 sd, by method", parity_split));
    report.files.push_back(path);
  }
  return report;
}

}  // namespace uqnn
