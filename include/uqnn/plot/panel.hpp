#pragma once
/// @file One panel (a set of axes) of a Figure and the series drawn on it.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/plot/style.hpp"

namespace uqnn::plot {

/// Read-only vector argument: accepts a Vec, a segment or column of a matrix, or an Eigen::Map
/// over a std::vector (`Eigen::Map<const Vec>(v.data(), v.size())`).
using VecIn = Eigen::Ref<const Vec>;

/// What kind of mark a series draws.
enum class SeriesKind { Line, Points, Band, ErrorBars, Diagonal, Histogram, Step, Bars, Heatmap, Paths };

/// One series of a panel: its kind, label, style and data. `columns` holds the data column-wise
/// (for example x, y; or x, lower, upper). Built by Panel's methods; read by the renderer.
struct Series {
  SeriesKind kind = SeriesKind::Line;
  std::string label;                    ///< legend entry; empty = no legend entry
  Style style;                          ///< colour resolved when the series is added
  std::vector<Vec> columns;             ///< data columns, all the same length (Heatmap: unused)
  Mat matrix;                           ///< Heatmap values; Paths: one path per row
  std::vector<std::string> categories;  ///< Bars: category names along x
};

/// A set of axes with a title, axis labels, optional fixed ranges and log scales, and series.
///
/// Why a builder: solvers and examples compose figures from a few marks (data points, predictive
/// bands, reference diagonals), so each mark is one call that validates its inputs at once
/// (lengths, finiteness of ranges) and throws std::invalid_argument naming the argument, instead
/// of failing later inside gnuplot. Methods return `*this` so calls chain.
class Panel {
 public:
  /// Panel title (drawn above the axes).
  Panel& title(std::string text);
  /// Label of the x axis.
  Panel& x_label(std::string text);
  /// Label of the y axis.
  Panel& y_label(std::string text);
  /// Logarithmic x axis (all plotted x must then be positive).
  Panel& log_x(bool on = true);
  /// Logarithmic y axis (all plotted y must then be positive).
  Panel& log_y(bool on = true);
  /// Fixed x range; requires lo < hi, both finite.
  Panel& x_range(double lo, double hi);
  /// Fixed y range; requires lo < hi, both finite.
  Panel& y_range(double lo, double hi);
  /// Legend placement (default KeyPosition::Auto).
  Panel& key(KeyPosition position);
  /// Equal axis lengths (square plotting area), e.g. for parity plots.
  Panel& square(bool on = true);

  /// Polyline through (x[i], y[i]); NaN values break the line.
  Panel& line(const VecIn& x, const VecIn& y, std::string label = "", Style style = {});
  /// Markers at (x[i], y[i]).
  Panel& points(const VecIn& x, const VecIn& y, std::string label = "", Style style = {});
  /// Shaded region between `lower` and `upper` over `x` (transparent fill, no border).
  /// `alpha` is the fill opacity in (0, 1]; empty `colour` = next palette colour.
  Panel& band(const VecIn& x, const VecIn& lower, const VecIn& upper, std::string label = "",
              std::string colour = "", double alpha = 0.25);
  /// Markers at (x[i], y[i]) with vertical error bars y[i] +- y_err[i] (y_err >= 0).
  Panel& error_bars(const VecIn& x, const VecIn& y, const VecIn& y_err, std::string label = "",
                    Style style = {});
  /// The line y = x across the panel's data (parity plots); dashed grey unless styled.
  Panel& diagonal(std::string label = "y = x", std::optional<Style> style = std::nullopt);
  /// Histogram of the finite `values` in `bins` equal-width bins (bins >= 1); `density` scales
  /// bar heights so the area is 1. Drawn as transparent filled bars.
  Panel& histogram(const VecIn& values, int bins = 30, std::string label = "", Style style = {},
                   bool density = false);
  /// Staircase through (x[i], y[i]), each step centred on x[i] (gnuplot `histeps`).
  Panel& step(const VecIn& x, const VecIn& y, std::string label = "", Style style = {});
  /// Bars of `heights` over named categories (e.g. one bar per layer). Several bars() calls on
  /// one panel are drawn as grouped bars and must use the same categories.
  Panel& bars(const std::vector<std::string>& categories, const VecIn& heights, std::string label = "",
              Style style = {});
  /// Colour map of `values` (row 0 at the top, column 0 at the left) with a colour bar labelled
  /// `colour_label`. A panel with a heatmap holds no other series.
  Panel& heatmap(const Mat& values, std::string colour_label = "");
  /// Many thin lines over a shared `x`: row r of `paths` is one path (e.g. posterior function
  /// draws). Only the first path gets the legend entry `label`.
  Panel& paths(const VecIn& x, const Mat& paths, std::string label = "", Style style = {});

  const std::string& title() const { return title_; }
  const std::string& x_label() const { return x_label_; }
  const std::string& y_label() const { return y_label_; }
  bool log_x() const { return log_x_; }
  bool log_y() const { return log_y_; }
  const std::optional<std::pair<double, double>>& x_range() const { return x_range_; }
  const std::optional<std::pair<double, double>>& y_range() const { return y_range_; }
  KeyPosition key() const { return key_; }
  bool square() const { return square_; }
  const std::vector<Series>& series() const { return series_; }
  bool empty() const { return series_.empty(); }

 private:
  Series& add(SeriesKind kind, std::string label, Style style, bool takes_palette_colour);

  std::string title_, x_label_, y_label_;
  bool log_x_ = false, log_y_ = false, square_ = false;
  std::optional<std::pair<double, double>> x_range_, y_range_;
  KeyPosition key_ = KeyPosition::Auto;
  std::vector<Series> series_;
  std::size_t next_colour_ = 0;
};

}  // namespace uqnn::plot
