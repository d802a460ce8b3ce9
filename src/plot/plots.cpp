#include "uqnn/plot/plots.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "uqnn/core/error.hpp"

namespace uqnn::plot {
namespace {

void same_length(Index a, const char* a_name, Index b, const char* b_name) {
  if (a != b)
    throw std::invalid_argument(fmt::format("{} and {} must have the same length (got {} and {})", a_name, b_name, a, b));
}

/// Running [lo, hi] over finite values.
struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  void add(const Eigen::Ref<const Vec>& v) {
    for (Index i = 0; i < v.size(); ++i) add(v[i]);
  }
  bool valid() const { return lo <= hi; }
  /// [lo, hi] widened by `frac` of its width below and `frac_top` above (width 1 if degenerate).
  std::pair<double, double> padded(double frac, double frac_top) const {
    const double w = hi > lo ? hi - lo : std::max(1.0, std::abs(lo));
    return {lo - frac * w, hi + frac_top * w};
  }
};

Range x_extent(const Predictive1d& p) {
  Range r;
  r.add(p.x_grid);
  r.add(p.x_train);
  return r;
}

Range y_extent(const Predictive1d& p) {
  Range r;
  r.add(p.y_train);
  for (Index i = 0; i < p.mean.size(); ++i) {
    r.add(p.mean[i] - 2 * p.sd[i]);
    r.add(p.mean[i] + 2 * p.sd[i]);
  }
  if (p.truth) r.add(*p.truth);
  for (Index k = 0; k < p.sample_paths.rows(); ++k) r.add(p.sample_paths.row(k).transpose());
  return r;
}

Predictive1d from_paths(const VecIn& x_train, const VecIn& y_train, const VecIn& x_grid, const Mat& sample_paths,
                        const std::optional<Vec>& truth, const std::string& title, int max_paths_drawn) {
  if (sample_paths.rows() < 2) throw std::invalid_argument("sample_paths must have at least 2 rows (draws)");
  same_length(sample_paths.cols(), "sample_paths columns", x_grid.size(), "x_grid");
  require(max_paths_drawn >= 0, "max_paths_drawn", ">= 0");
  Predictive1d p;
  p.title = title;
  p.x_train = x_train;
  p.y_train = y_train;
  p.x_grid = x_grid;
  p.mean = sample_paths.colwise().mean().transpose();
  const Mat centred = sample_paths.rowwise() - p.mean.transpose();
  p.sd = (centred.array().square().colwise().sum() / static_cast<double>(sample_paths.rows() - 1)).sqrt().transpose();
  p.truth = truth;
  p.sample_paths = sample_paths.topRows(std::min<Index>(max_paths_drawn, sample_paths.rows()));
  return p;
}

}  // namespace

void validate(const Predictive1d& p) {
  same_length(p.x_train.size(), "x_train", p.y_train.size(), "y_train");
  require(p.x_grid.size() >= 2, "x_grid", "at least 2 points");
  same_length(p.x_grid.size(), "x_grid", p.mean.size(), "mean");
  same_length(p.x_grid.size(), "x_grid", p.sd.size(), "sd");
  for (Index i = 0; i < p.sd.size(); ++i)
    if (p.sd[i] < 0) throw std::invalid_argument(fmt::format("sd must be >= 0 (sd[{}] = {})", i, p.sd[i]));
  if (p.truth) same_length(p.x_grid.size(), "x_grid", p.truth->size(), "truth");
  if (p.sample_paths.rows() > 0) same_length(p.sample_paths.cols(), "sample_paths columns", p.x_grid.size(), "x_grid");
}

void draw_predictive_1d(Panel& panel, const Predictive1d& p) {
  validate(p);
  const std::string blue = kPalette[0], vermillion = kPalette[1];
  panel.title(p.title).x_label("x").y_label("y");
  panel.band(p.x_grid, p.mean - 2 * p.sd, p.mean + 2 * p.sd, "±2 sd", blue, 0.14);
  panel.band(p.x_grid, p.mean - p.sd, p.mean + p.sd, "±1 sd", blue, 0.26);
  if (p.sample_paths.rows() > 0)
    panel.paths(p.x_grid, p.sample_paths, "posterior draws", Style{.colour = "#4D4D4D", .line_width = 0.8, .alpha = 0.35});
  if (p.truth) panel.line(p.x_grid, *p.truth, "truth", Style{.colour = vermillion, .dash = Dash::Dashed});
  panel.line(p.x_grid, p.mean, "predictive mean", Style{.colour = blue, .line_width = 2.5});
  if (p.x_train.size() > 0)
    panel.points(p.x_train, p.y_train, "training data", Style{.colour = "#000000", .alpha = 0.8, .point_size = 0.75});
  // Headroom above the data gives the legend an empty corner.
  const Range xr = x_extent(p), yr = y_extent(p);
  if (xr.valid() && xr.hi > xr.lo) panel.x_range(xr.lo, xr.hi);
  if (yr.valid()) {
    const auto [lo, hi] = yr.padded(0.04, 0.30);
    panel.y_range(lo, hi);
  }
}

void plot_predictive_1d(const std::filesystem::path& path, const VecIn& x_train, const VecIn& y_train,
                        const VecIn& x_grid, const VecIn& mean, const VecIn& sd, const std::optional<Vec>& truth,
                        const std::string& title, int width, int height) {
  Predictive1d p;
  p.title = title;
  p.x_train = x_train;
  p.y_train = y_train;
  p.x_grid = x_grid;
  p.mean = mean;
  p.sd = sd;
  p.truth = truth;
  Figure fig;
  draw_predictive_1d(fig.panel(), p);
  fig.save(path, width, height);
}

void plot_predictive_1d_from_draws(const std::filesystem::path& path, const VecIn& x_train, const VecIn& y_train,
                                   const VecIn& x_grid, const Mat& sample_paths, const std::optional<Vec>& truth,
                        const std::string& title, int max_paths_drawn, int width, int height) {
  const Predictive1d p = from_paths(x_train, y_train, x_grid, sample_paths, truth, title, max_paths_drawn);
  Figure fig;
  draw_predictive_1d(fig.panel(), p);
  fig.save(path, width, height);
}

namespace {

/// Parity marks in `panel`: predictions (with +-1 sd bars) against the truth, the diagonal, the RMSE
/// in the legend. Returns the range the marks span.
Range draw_parity(Panel& panel, const VecIn& y_true, const VecIn& y_pred, const std::optional<Vec>& y_sd) {
  same_length(y_true.size(), "y_true", y_pred.size(), "y_pred");
  require(y_true.size() > 0, "y_true", "non-empty");
  if (y_sd) same_length(y_true.size(), "y_true", y_sd->size(), "y_sd");
  Range r;
  r.add(y_true);
  double sq = 0;
  Index n = 0;
  for (Index i = 0; i < y_true.size(); ++i) {
    const double e = y_sd ? (*y_sd)[i] : 0.0;
    r.add(y_pred[i] - e);
    r.add(y_pred[i] + e);
    if (std::isfinite(y_true[i]) && std::isfinite(y_pred[i])) {
      sq += (y_true[i] - y_pred[i]) * (y_true[i] - y_pred[i]);
      ++n;
    }
  }
  const std::string rmse = n > 0 ? fmt::format("RMSE {:.3g}", std::sqrt(sq / n)) : std::string("RMSE n/a");
  panel.x_label("true").y_label("predicted").square();
  panel.diagonal("y = x");
  Style marks;
  marks.colour = kPalette[0];
  marks.alpha = 0.75;
  marks.point_size = 0.6;
  if (y_sd) panel.error_bars(y_true, y_pred, *y_sd, "prediction ± 1 sd (" + rmse + ")", marks);
  else panel.points(y_true, y_pred, "prediction (" + rmse + ")", marks);
  return r;
}

}  // namespace

void plot_parity(const std::filesystem::path& path, const VecIn& y_true, const VecIn& y_pred,
                 const std::optional<Vec>& y_sd, const std::string& title, int width, int height) {
  const int default_side = 620;
  Figure fig;
  Panel& panel = fig.panel();
  panel.title(title);
  const Range r = draw_parity(panel, y_true, y_pred, y_sd);
  if (r.valid()) {
    const auto [lo, hi] = r.padded(0.05, 0.05);
    panel.x_range(lo, hi).y_range(lo, hi);
  }
  fig.save(path, width ? width : default_side, height ? height : default_side);
}

void plot_parity_grid(const std::filesystem::path& path, const std::vector<ParityPanel>& panels, const std::string& title) {
  require(!panels.empty(), "panels", "non-empty");
  const int n = static_cast<int>(panels.size());
  const int cols = n <= 3 ? n : (n == 4 ? 2 : 3);
  const int rows = (n + cols - 1) / cols;
  Figure fig(rows, cols);
  fig.title(title);
  Range all;
  std::vector<Panel*> drawn;
  for (int i = 0; i < n; ++i) {
    const ParityPanel& p = panels[static_cast<std::size_t>(i)];
    Panel& panel = fig.panel(i / cols, i % cols);
    panel.title(p.title);
    const Range r = draw_parity(panel, p.y_true, p.y_pred, p.y_sd);
    if (r.valid()) {
      all.add(r.lo);
      all.add(r.hi);
    }
    drawn.push_back(&panel);
  }
  if (all.valid())
    for (Panel* panel : drawn) {
      const auto [lo, hi] = all.padded(0.05, 0.05);
      panel->x_range(lo, hi).y_range(lo, hi);
    }
  fig.save(path, 480 * cols, 480 * rows + 40);
}

void plot_history(const std::filesystem::path& path, const SeriesList& series, const HistoryOptions& options) {
  require(!series.empty(), "series", "non-empty");
  Figure fig;
  Panel& panel = fig.panel();
  panel.title(options.title).x_label(options.x_label).y_label(options.y_label).log_y(options.log_y);
  Index longest = 0;
  for (const auto& [name, values] : series) {
    if (options.log_y)
      for (std::size_t i = 0; i < values.size(); ++i)
        if (std::isfinite(values[i]) && values[i] <= 0)
          throw std::invalid_argument(fmt::format(
              "plot_history: series '{}' has value {} at index {}; log_y needs values > 0", name, values[i], i));
    const Index n = static_cast<Index>(values.size());
    longest = std::max(longest, n);
    Vec x = Vec::LinSpaced(n, 1.0, static_cast<double>(n));
    Style st;
    st.line_width = n > 2000 ? 1.2 : 1.8;
    panel.line(x, Eigen::Map<const Vec>(values.data(), n), name, st);
  }
  if (longest > 1) panel.x_range(1.0, static_cast<double>(longest));
  if (options.log_y) {  // gnuplot would widen a log axis to whole decades; keep it tight
    double lo = std::numeric_limits<double>::infinity(), hi = 0;
    for (const auto& entry : series)
      for (double v : entry.second)
        if (std::isfinite(v)) {
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
    if (lo <= hi) panel.y_range(lo / 1.25, hi * 1.25);
  } else {
    // A linear axis: the first epochs' loss, often orders of magnitude above the rest, would flatten
    // the curve the user wants to read; the range covers the series after their first 5%.
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& entry : series) {
      const std::size_t skip = entry.second.size() >= 20 ? entry.second.size() / 20 : 0;
      for (std::size_t i = 0; i < entry.second.size(); ++i)
        if (std::isfinite(entry.second[i])) {
          lo = std::min(lo, entry.second[i]);
          if (i >= skip) hi = std::max(hi, entry.second[i]);
        }
    }
    if (lo < hi) panel.y_range(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo));
  }
  fig.save(path, options.width, options.height);
}

void plot_traces(const std::filesystem::path& path, const std::vector<std::pair<std::string, Mat>>& quantities,
                 const TraceOptions& options) {
  require(!quantities.empty(), "quantities", "non-empty");
  require(options.bins >= 1, "bins", ">= 1");
  const int rows = static_cast<int>(quantities.size());
  const int cols = options.density ? 2 : 1;
  Figure fig(rows, cols);
  fig.title(options.title);
  for (int q = 0; q < rows; ++q) {
    const auto& [name, draws] = quantities[static_cast<std::size_t>(q)];
    if (draws.rows() == 0 || draws.cols() == 0)
      throw std::invalid_argument("plot_traces: quantity '" + name + "' has no draws ([chain, draw] matrix is empty)");
    const Index chains = draws.rows(), n = draws.cols();
    Panel& trace = fig.panel(q, cols - 1);
    trace.title(name).y_label(options.density ? "" : "value");
    if (q == rows - 1) trace.x_label("draw");
    trace.x_range(0.0, std::max<double>(1.0, static_cast<double>(n - 1)));
    const Vec iteration = Vec::LinSpaced(n, 0.0, static_cast<double>(n - 1));
    for (Index c = 0; c < chains; ++c) {
      Style st;
      st.colour = palette_colour(static_cast<std::size_t>(c));
      st.line_width = n > 1500 ? 0.6 : 0.9;
      st.alpha = chains > 1 ? 0.75 : 1.0;
      trace.line(iteration, draws.row(c).transpose(), "chain " + std::to_string(c), st);
    }
    if (!options.density) {  // no density column to hold the legend: one beside every row keeps rows aligned
      trace.key(KeyPosition::Right);
      continue;
    }
    trace.key(KeyPosition::None);

    // Per-chain densities on common bins, drawn as staircases (ArviZ plot_trace's left column).
    Range r;
    for (Index c = 0; c < chains; ++c) r.add(draws.row(c).transpose());
    if (!r.valid()) continue;
    const auto [lo, hi] = r.hi > r.lo ? std::pair{r.lo, r.hi} : r.padded(0.5, 0.5);
    const double w = (hi - lo) / options.bins;
    Vec centres(options.bins);
    for (int b = 0; b < options.bins; ++b) centres[b] = lo + (b + 0.5) * w;
    Panel& dens = fig.panel(q, 0);
    dens.title(name).y_label("density");
    for (Index c = 0; c < chains; ++c) {
      Vec h = Vec::Zero(options.bins);
      Index m = 0;
      for (Index i = 0; i < n; ++i)
        if (std::isfinite(draws(c, i))) {
          h[std::clamp(static_cast<int>((draws(c, i) - lo) / w), 0, options.bins - 1)] += 1;
          ++m;
        }
      if (m > 0) h /= static_cast<double>(m) * w;
      Style st;
      st.colour = palette_colour(static_cast<std::size_t>(c));
      st.line_width = 1.5;
      dens.step(centres, h, "chain " + std::to_string(c), st);
    }
    dens.x_range(lo - w, hi + w);
    dens.key(q == 0 ? KeyPosition::Auto : KeyPosition::None);
  }
  const auto [dw, dh] = fig.default_size();
  fig.save(path, options.width ? options.width : std::max(dw, 900),
           options.height ? options.height : std::min(std::max(280 * rows + 60, 400), 8000));
}

void plot_side_by_side(const std::filesystem::path& path, const std::vector<Predictive1d>& panels,
                       const SideBySideOptions& options) {
  require(!panels.empty(), "panels", "non-empty");
  require(options.cols >= 0, "cols", ">= 0 (0 = automatic)");
  for (const Predictive1d& p : panels) validate(p);
  const int n = static_cast<int>(panels.size());
  const int cols = options.cols > 0 ? std::min(options.cols, n) : (n <= 3 ? n : (n == 4 ? 2 : 3));
  const int rows = (n + cols - 1) / cols;
  Range xr, yr;
  for (const Predictive1d& p : panels) {
    const Range a = x_extent(p), b = y_extent(p);
    xr.add(a.lo);
    xr.add(a.hi);
    yr.add(b.lo);
    yr.add(b.hi);
  }
  Figure fig(rows, cols);
  fig.title(options.title);
  for (int i = 0; i < n; ++i) {
    Panel& panel = fig.panel(i / cols, i % cols);
    draw_predictive_1d(panel, panels[static_cast<std::size_t>(i)]);
    if (xr.valid() && xr.hi > xr.lo) panel.x_range(xr.lo, xr.hi);
    if (options.shared_y && yr.valid()) {
      const auto [lo, hi] = yr.padded(0.04, 0.30);
      panel.y_range(lo, hi);
    }
    if (i % cols != 0 && options.shared_y) panel.y_label("");
    // One legend is enough when every panel shows the same marks.
    if (i > 0) panel.key(KeyPosition::None);
  }
  const auto [dw, dh] = fig.default_size();
  fig.save(path, options.width ? options.width : dw, options.height ? options.height : dh);
}

void plot_classification(const std::filesystem::path& path, const ClassificationMetrics& metrics, const std::string& title) {
  require(metrics.n > 0, "classification metrics", "at least one point");
  std::vector<double> confidence, accuracy;
  for (const auto& bin : metrics.bins)
    if (bin.count > 0) {
      confidence.push_back(bin.confidence);
      accuracy.push_back(bin.accuracy);
    }
  Figure fig(1, 2);
  fig.title(title);
  Panel& reliability = fig.panel(0, 0);
  reliability.title("reliability diagram").x_label("confidence (top-class probability)").y_label("accuracy").square();
  // A little headroom: well-calibrated bins sit on accuracy 1.
  reliability.x_range(0, 1).y_range(0, 1.04).key(KeyPosition::BottomRight);
  reliability.diagonal("perfect calibration");
  Style marks;
  marks.colour = kPalette[0];
  marks.point_size = 1.0;
  const Eigen::Map<const Vec> x(confidence.data(), static_cast<Index>(confidence.size()));
  const Eigen::Map<const Vec> y(accuracy.data(), static_cast<Index>(accuracy.size()));
  reliability.line(x, y, fmt::format("{} bins (ECE {:.3f}, accuracy {:.3f})", metrics.bins.size(), metrics.ece, metrics.accuracy), marks);
  reliability.points(x, y, "", marks);
  Panel& entropy = fig.panel(0, 1);
  entropy.title("predictive entropy").x_label("entropy (nats)").y_label("points");
  Style bars;
  bars.colour = kPalette[1];
  entropy.histogram(metrics.entropy, 30, fmt::format("{} points", metrics.n), bars);
  fig.save(path, 1100, 520);
}

}  // namespace uqnn::plot
