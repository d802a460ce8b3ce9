#include "uqnn/plot/panel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "uqnn/core/error.hpp"

namespace uqnn::plot {
namespace {

void require_same_length(const VecIn& a, const char* a_name, const VecIn& b, const char* b_name) {
  if (a.size() != b.size())
    throw std::invalid_argument(std::string(a_name) + " and " + b_name + " must have the same length (got " +
                                std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")");
}

void check_style(const Style& s) {
  require(s.line_width > 0 && std::isfinite(s.line_width), "style.line_width", "finite and > 0");
  require(s.alpha > 0 && s.alpha <= 1, "style.alpha", "in (0, 1]");
  require(s.point_size > 0 && std::isfinite(s.point_size), "style.point_size", "finite and > 0");
  if (!s.colour.empty()) {
    bool ok = s.colour.size() == 7 && s.colour[0] == '#';
    for (std::size_t i = 1; ok && i < s.colour.size(); ++i) ok = std::isxdigit(static_cast<unsigned char>(s.colour[i]));
    require(ok, "style.colour", "\"#RRGGBB\" (hex) or empty");
  }
}

void check_range(double lo, double hi, const char* name) {
  require(std::isfinite(lo) && std::isfinite(hi) && lo < hi, name, "finite with lo < hi");
}

}  // namespace

Panel& Panel::title(std::string text) { title_ = std::move(text); return *this; }
Panel& Panel::x_label(std::string text) { x_label_ = std::move(text); return *this; }
Panel& Panel::y_label(std::string text) { y_label_ = std::move(text); return *this; }
Panel& Panel::log_x(bool on) { log_x_ = on; return *this; }
Panel& Panel::log_y(bool on) { log_y_ = on; return *this; }
Panel& Panel::key(KeyPosition position) { key_ = position; return *this; }
Panel& Panel::square(bool on) { square_ = on; return *this; }

Panel& Panel::x_range(double lo, double hi) {
  check_range(lo, hi, "x_range");
  x_range_ = {lo, hi};
  return *this;
}

Panel& Panel::y_range(double lo, double hi) {
  check_range(lo, hi, "y_range");
  y_range_ = {lo, hi};
  return *this;
}

Series& Panel::add(SeriesKind kind, std::string label, Style style, bool takes_palette_colour) {
  check_style(style);
  bool has_heatmap = std::any_of(series_.begin(), series_.end(), [](const Series& s) { return s.kind == SeriesKind::Heatmap; });
  if (has_heatmap || (kind == SeriesKind::Heatmap && !series_.empty()))
    throw std::invalid_argument("heatmap: a panel with a heatmap holds no other series");
  if (style.colour.empty()) style.colour = takes_palette_colour ? palette_colour(next_colour_++) : kReferenceGrey;
  Series s;
  s.kind = kind;
  s.label = std::move(label);
  s.style = std::move(style);
  series_.push_back(std::move(s));
  return series_.back();
}

Panel& Panel::line(const VecIn& x, const VecIn& y, std::string label, Style style) {
  require_same_length(x, "x", y, "y");
  add(SeriesKind::Line, std::move(label), std::move(style), true).columns = {x, y};
  return *this;
}

Panel& Panel::points(const VecIn& x, const VecIn& y, std::string label, Style style) {
  require_same_length(x, "x", y, "y");
  add(SeriesKind::Points, std::move(label), std::move(style), true).columns = {x, y};
  return *this;
}

Panel& Panel::band(const VecIn& x, const VecIn& lower, const VecIn& upper, std::string label, std::string colour,
                   double alpha) {
  require_same_length(x, "x", lower, "lower");
  require_same_length(x, "x", upper, "upper");
  require(alpha > 0 && alpha <= 1, "alpha", "in (0, 1]");
  Style style;
  style.colour = std::move(colour);
  style.alpha = alpha;
  add(SeriesKind::Band, std::move(label), std::move(style), true).columns = {x, lower, upper};
  return *this;
}

Panel& Panel::error_bars(const VecIn& x, const VecIn& y, const VecIn& y_err, std::string label, Style style) {
  require_same_length(x, "x", y, "y");
  require_same_length(x, "x", y_err, "y_err");
  for (Index i = 0; i < y_err.size(); ++i)
    if (std::isfinite(y_err[i]) && y_err[i] < 0) throw std::invalid_argument("y_err must be >= 0");
  add(SeriesKind::ErrorBars, std::move(label), std::move(style), true).columns = {x, y, y_err};
  return *this;
}

Panel& Panel::diagonal(std::string label, std::optional<Style> style) {
  Style s;
  if (style) {
    s = *style;
  } else {
    s.colour = kReferenceGrey;
    s.line_width = 1.5;
    s.dash = Dash::Dashed;
  }
  add(SeriesKind::Diagonal, std::move(label), std::move(s), false);
  return *this;
}

Panel& Panel::histogram(const VecIn& values, int bins, std::string label, Style style, bool density) {
  require(bins >= 1, "bins", ">= 1");
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  Index n = 0;
  for (Index i = 0; i < values.size(); ++i)
    if (std::isfinite(values[i])) {
      lo = std::min(lo, values[i]);
      hi = std::max(hi, values[i]);
      ++n;
    }
  require(n > 0, "values", "non-empty with at least one finite value");
  if (hi <= lo) {  // all equal: one bin of width 1 centred on the value
    lo -= 0.5;
    hi += 0.5;
  }
  const double width = (hi - lo) / bins;
  Vec centres(bins), heights = Vec::Zero(bins), widths = Vec::Constant(bins, width);
  for (int b = 0; b < bins; ++b) centres[b] = lo + (b + 0.5) * width;
  for (Index i = 0; i < values.size(); ++i)
    if (std::isfinite(values[i])) {
      int b = static_cast<int>((values[i] - lo) / width);
      heights[std::clamp(b, 0, bins - 1)] += 1.0;  // the maximum falls in the last bin
    }
  if (density) heights /= static_cast<double>(n) * width;
  add(SeriesKind::Histogram, std::move(label), std::move(style), true).columns = {centres, heights, widths};
  return *this;
}

Panel& Panel::step(const VecIn& x, const VecIn& y, std::string label, Style style) {
  require_same_length(x, "x", y, "y");
  add(SeriesKind::Step, std::move(label), std::move(style), true).columns = {x, y};
  return *this;
}

Panel& Panel::bars(const std::vector<std::string>& categories, const VecIn& heights, std::string label, Style style) {
  if (static_cast<Index>(categories.size()) != heights.size())
    throw std::invalid_argument("categories and heights must have the same length (got " +
                                std::to_string(categories.size()) + " and " + std::to_string(heights.size()) + ")");
  require(!categories.empty(), "categories", "non-empty");
  for (const Series& s : series_)
    if (s.kind == SeriesKind::Bars && s.categories != categories)
      throw std::invalid_argument("bars: every bars() call on a panel must use the same categories");
  Series& s = add(SeriesKind::Bars, std::move(label), std::move(style), true);
  s.columns = {heights};
  s.categories = categories;
  return *this;
}

Panel& Panel::heatmap(const Mat& values, std::string colour_label) {
  require(values.rows() > 0 && values.cols() > 0, "heatmap values", "a non-empty matrix");
  Series& s = add(SeriesKind::Heatmap, std::move(colour_label), Style{}, false);
  s.matrix = values;
  return *this;
}

Panel& Panel::paths(const VecIn& x, const Mat& paths, std::string label, Style style) {
  if (paths.cols() != x.size())
    throw std::invalid_argument("paths must have one column per x value (got " + std::to_string(paths.cols()) +
                                " columns and " + std::to_string(x.size()) + " x values)");
  Series& s = add(SeriesKind::Paths, std::move(label), std::move(style), true);
  s.columns = {x};
  s.matrix = paths;
  return *this;
}

}  // namespace uqnn::plot
