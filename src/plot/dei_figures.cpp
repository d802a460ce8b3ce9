#include "uqnn/plot/dei_figures.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/draws_table.hpp"
#include "uqnn/io/draws_csv.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/plot/panel.hpp"

namespace uqnn {

void plot_lppd_traces(const std::filesystem::path& path, const std::vector<std::vector<double>>& traces,
                      const std::vector<std::optional<Index>>& converged_at, const std::vector<bool>& dying,
                      const std::string& title) {
  require(!traces.empty(), "traces", "at least one chain");
  plot::Figure figure;
  plot::Panel& panel = figure.panel();
  panel.title(title).x_label("draw l").y_label("LPPD_l (held-out)").key(plot::KeyPosition::Right);
  for (std::size_t c = 0; c < traces.size(); ++c) {
    if (traces[c].empty()) continue;
    const Index n = static_cast<Index>(traces[c].size());
    Vec x(n), y(n);
    for (Index l = 0; l < n; ++l) {
      x(l) = static_cast<double>(l + 1);
      y(l) = traces[c][static_cast<std::size_t>(l)];
    }
    plot::Style style;
    style.colour = plot::palette_colour(c);
    style.line_width = 1.5;
    const bool is_dying = c < dying.size() && dying[c];
    if (is_dying) style.dash = plot::Dash::Dashed;
    panel.line(x, y, fmt::format("chain {}{}", c, is_dying ? " (dying)" : ""), style);
    if (c < converged_at.size() && converged_at[c]) {
      const Index l = *converged_at[c];
      Vec px(1), py(1);
      px(0) = static_cast<double>(l);
      py(0) = y(l - 1);
      plot::Style marker = style;
      marker.point_size = 1.5;
      marker.marker = plot::Marker::Diamond;
      panel.points(px, py, "", marker);
    }
  }
  figure.save(path);
}

void plot_layer_diagnostics(const std::filesystem::path& path, const std::vector<diagnostics::LayerDiagnostics>& layers,
                            const std::string& title) {
  require(!layers.empty(), "layers", "at least one block");
  std::vector<std::string> names;
  const auto n = static_cast<Index>(layers.size());
  Vec rhat_mean(n), rhat_max(n), crhat(n), ess(n);
  for (Index i = 0; i < n; ++i) {
    const auto& l = layers[static_cast<std::size_t>(i)];
    names.push_back(l.block);
    const auto finite = [](double v) { return std::isfinite(v) ? v : 0.0; };
    rhat_mean(i) = finite(l.rhat_mean);
    rhat_max(i) = finite(l.rhat_max);
    crhat(i) = finite(l.chain_rhat_mean);
    ess(i) = finite(l.ess_bulk_mean);
  }
  plot::Figure figure(1, 3);
  figure.title(title);
  figure.panel(0, 0).title("R-hat^(2) across chains").y_label("R-hat").bars(names, rhat_mean, "mean").bars(names, rhat_max, "max");
  figure.panel(0, 1).title("chain-wise cR-hat^(4)").y_label("cR-hat").bars(names, crhat, "mean");
  figure.panel(0, 2).title("bulk ESS").y_label("ESS per parameter").bars(names, ess, "mean");
  figure.save(path, 1800, 520);
}

void plot_calibration(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, std::map<double, double>>>& series,
                      const std::string& title) {
  require(!series.empty(), "series", "at least one");
  plot::Figure figure;
  plot::Panel& panel = figure.panel();
  panel.title(title).x_label("nominal coverage").y_label("empirical coverage").square().x_range(0, 1).y_range(0, 1);
  panel.key(plot::KeyPosition::BottomRight);
  for (const auto& [name, coverage] : series) {
    Vec x(static_cast<Index>(coverage.size())), y(static_cast<Index>(coverage.size()));
    Index i = 0;
    for (const auto& [nominal, empirical] : coverage) {
      x(i) = nominal;
      y(i) = empirical;
      ++i;
    }
    plot::Style style;
    style.line_width = 1.5;
    panel.line(x, y, name, style);
  }
  panel.diagonal("nominal");
  figure.save(path);
}

void plot_rhat_histograms(const std::filesystem::path& path, const std::vector<std::pair<std::string, Vec>>& series,
                          const std::string& title) {
  require(!series.empty(), "series", "at least one");
  plot::Figure figure(1, static_cast<int>(series.size()));
  figure.title(title);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Vec& r = series[k].second;
    std::vector<double> logs;
    for (Index i = 0; i < r.size(); ++i)
      if (std::isfinite(r(i)) && r(i) > 0) logs.push_back(std::log10(r(i)));
    double mean = 0, sd = 0;
    for (double v : logs) mean += v / static_cast<double>(logs.size());
    for (double v : logs) sd += (v - mean) * (v - mean) / static_cast<double>(std::max<std::size_t>(1, logs.size() - 1));
    sd = std::sqrt(sd);
    const auto skipped = static_cast<std::size_t>(r.size()) - logs.size();
    plot::Panel& panel = figure.panel(0, static_cast<int>(k));
    panel.x_label("log10 R-hat^(2)").y_label("count").title(series[k].first);
    const std::string label = fmt::format("n = {}, mean {:.2f}, sd {:.2f}{}", logs.size(), mean, sd,
                                          skipped ? fmt::format(" ({} not finite)", skipped) : std::string());
    if (!logs.empty()) panel.histogram(Eigen::Map<const Vec>(logs.data(), static_cast<Index>(logs.size())), 30, label);
  }
  figure.save(path);
}

}  // namespace uqnn

namespace uqnn {

std::string diagnose_dei_run(const std::filesystem::path& dir, const std::string& figure_format) {
  const auto json_path = dir / "dei_chains.json";
  std::ifstream in(json_path);
  if (!in) throw InputError(json_path.string() + ": cannot open (not a dei-nuts run directory?)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(json_path.string() + ": " + e.what());
  }
  std::ostringstream out;
  const double lm = j.at("linear_model_rmse").get<double>();
  out << fmt::format("dei-nuts chains (held-out RMSE vs the linear model's {:.4g}; eq. 9 with window {}, epsilon {}):\n",
                     lm, j.at("lppd_window").get<Index>(), j.at("lppd_epsilon").get<double>());
  out << fmt::format("{:>6} {:>6} {:>6} {:>8} {:>6} {:>12} {:>11}\n", "chain", "kept", "dying", "rmse", "draws",
                     "converged_at", "final_lppd");
  std::vector<std::vector<double>> traces;
  std::vector<std::optional<Index>> converged;
  std::vector<bool> dying;
  for (const auto& c : j.at("chains")) {
    traces.push_back(c.at("lppd_trace").get<std::vector<double>>());
    converged.push_back(c.at("converged_at").is_null() ? std::nullopt : std::optional<Index>(c.at("converged_at").get<Index>()));
    dying.push_back(c.at("dying").get<bool>());
    out << fmt::format("{:>6} {:>6} {:>6} {:>8.4f} {:>6} {:>12} {:>11.4f}\n", c.at("chain").get<int>(),
                       c.at("kept").get<bool>() ? "yes" : "no", dying.back() ? "yes" : "no", c.at("rmse").get<double>(),
                       c.at("draws").get<Index>(), converged.back() ? std::to_string(*converged.back()) : "-",
                       traces.back().empty() ? std::nan("") : traces.back().back());
  }
  // Function-space R-hat^(2) of LPL^(k,s) (seed 003 App. B.2) over the chains, cut to a common length.
  std::vector<std::vector<double>> lpl;
  for (const auto& c : j.at("chains"))
    if (c.at("kept").get<bool>()) lpl.push_back(c.at("log_pointwise_likelihood").get<std::vector<double>>());
  std::size_t common = lpl.empty() ? 0 : lpl.front().size();
  for (const auto& v : lpl) common = std::min(common, v.size());
  if (lpl.size() >= 2 && common >= 4) {
    Mat x(static_cast<Index>(common), static_cast<Index>(lpl.size()));
    for (std::size_t c = 0; c < lpl.size(); ++c)
      for (std::size_t s = 0; s < common; ++s) x(static_cast<Index>(s), static_cast<Index>(c)) = lpl[c][s];
    const auto r = diagnostics::rank_normalized_rhat(x, 2);
    out << fmt::format("function-space R-hat^(2) of the held-out LPL over {} kept chains x {} draws: {:.3f}\n",
                       lpl.size(), common, r.max);
  }
  std::vector<std::filesystem::path> figures;
  // Per-parameter and per-held-out-point R-hat^(2) written by the fit (seed 003 Fig. 10, App. B.2).
  if (j.contains("rhat")) {
    std::vector<std::pair<std::string, Vec>> series;
    for (const auto& [key, name] : {std::pair<std::string, std::string>{"parameter_space", "parameter space (per parameter)"},
                                    {"function_space", "function space (per held-out point)"}}) {
      const auto& values = j.at("rhat").at(key);
      Vec v(static_cast<Index>(values.size()));
      for (std::size_t i = 0; i < values.size(); ++i)
        v(static_cast<Index>(i)) = values[i].is_number() ? values[i].get<double>() : std::nan("");
      std::vector<double> finite;
      for (Index i = 0; i < v.size(); ++i)
        if (std::isfinite(v(i))) finite.push_back(v(i));
      std::sort(finite.begin(), finite.end());
      if (!finite.empty())
        out << fmt::format("{}: R-hat^(2) median {:.3f}, 90% {:.3f}, max {:.3f} ({} values, {} above 1.1)\n", name,
                           finite[finite.size() / 2], finite[finite.size() * 9 / 10], finite.back(), finite.size(),
                           std::count_if(finite.begin(), finite.end(), [](double x) { return x > 1.1; }));
      series.emplace_back(name, v);
    }
    if (figure_format != "none") {
      figures.push_back(dir / ("rhat." + figure_format));
      plot_rhat_histograms(figures.back(), series, "R-hat^(2) across the kept chains (Sommer et al. 2024, Fig. 10)");
    }
  }
  if (figure_format != "none") {
    figures.push_back(dir / ("lppd_traces." + figure_format));
    plot_lppd_traces(figures.back(), traces, converged, dying,
                     "chain-wise expanding-window LPPD (Sommer et al. 2024, eq. 8)");
  }
  // Per-layer view from draws.csv: consecutive columns "block[...]" form one block.
  const auto draws_path = dir / "draws.csv";
  if (std::filesystem::exists(draws_path)) {
    // The weights only: lp__ and the sampler's columns are no layer.
    DrawsTable table = diagnostics::without_sampler_columns(read_draws_csv(draws_path.string()));
    if (!table.names.empty() && table.names.front() == "lp__") {
      table.names.erase(table.names.begin());
      table.draws.erase(table.draws.begin());
    }
    ParamLayout layout;
    std::vector<std::string> order;
    std::map<std::string, Index> count;
    for (const auto& name : table.names) {
      const std::string block = name.substr(0, name.find('['));
      if (!count.count(block)) order.push_back(block);
      ++count[block];
    }
    for (const auto& b : order) layout.add_vector(b, count[b], 1);
    std::vector<Mat> chains(static_cast<std::size_t>(table.num_chains()), Mat(table.num_draws(), layout.size()));
    Index k = 0;
    for (const auto& b : order)
      for (const auto& name : table.names)
        if (name.substr(0, name.find('[')) == b) {
          for (Index c = 0; c < table.num_chains(); ++c) chains[static_cast<std::size_t>(c)].col(k) = table.at(name).col(c);
          ++k;
        }
    if (table.num_chains() >= 2 && table.num_draws() >= 16) {
      const auto layers = diagnostics::layerwise_diagnostics(chains, layout, 4);
      out << fmt::format("\nper layer ({} chains x {} draws; R-hat^(2) across chains, cR-hat^(4) within chains):\n",
                         table.num_chains(), table.num_draws());
      out << fmt::format("{:<28} {:>5} {:>10} {:>9} {:>11} {:>9}\n", "block", "size", "rhat_mean", "rhat_max",
                         "crhat_mean", "ess_bulk");
      for (const auto& l : layers)
        out << fmt::format("{:<28} {:>5} {:>10.3f} {:>9.3f} {:>11.3f} {:>9.1f}\n", l.block, l.size, l.rhat_mean,
                           l.rhat_max, l.chain_rhat_mean, l.ess_bulk_mean);
      if (figure_format != "none") {
        figures.push_back(dir / ("layers." + figure_format));
        plot_layer_diagnostics(figures.back(), layers, "per-layer convergence (Sommer et al. 2024, Figs. 8, 9)");
      }
    } else {
      out << "\nper layer: needs >= 2 kept chains with >= 16 draws\n";
    }
  }
  if (!figures.empty()) {
    out << "wrote:";
    for (const auto& f : figures) out << ' ' << f.string();
    out << '\n';
  }
  return out.str();
}

}  // namespace uqnn
