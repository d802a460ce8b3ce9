#include "uqnn/plot/figure.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/plot/gnuplot.hpp"

namespace uqnn::plot {
namespace {

namespace fs = std::filesystem;

enum class Format { Png, Svg };

Format format_of(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".png") return Format::Png;
  if (ext == ".svg") return Format::Svg;
  throw std::invalid_argument("plot: output path '" + path.string() + "' must end in .png or .svg");
}

// ---- text helpers -------------------------------------------------------------------------

void put_number(std::string& out, double v) {
  if (std::isfinite(v)) fmt::format_to(std::back_inserter(out), "{:.10g}", v);
  else out += "NaN";
}

/// gnuplot colour with opacity: "#AARRGGBB" where AA is the transparency (00 = opaque).
std::string colour_spec(const std::string& rgb, double alpha) {
  const int transparency = static_cast<int>(std::lround(255.0 * (1.0 - std::clamp(alpha, 0.0, 1.0))));
  return fmt::format("rgb '#{:02X}{}'", transparency, rgb.substr(1));
}

const char* dash_spec(Dash d) {
  switch (d) {
    case Dash::Solid: return "dt solid";
    case Dash::Dashed: return "dt (8,5)";
    case Dash::Dotted: return "dt (1,4)";
    case Dash::DashDot: return "dt (8,4,1,4)";
  }
  return "dt solid";
}

int marker_code(Marker m) {
  switch (m) {
    case Marker::Circle: return 7;
    case Marker::Square: return 5;
    case Marker::Triangle: return 9;
    case Marker::Diamond: return 13;
    case Marker::Cross: return 2;
    case Marker::Plus: return 1;
  }
  return 7;
}

std::string title_spec(const std::string& label) {
  return label.empty() ? std::string("notitle") : "title " + gnuplot_quote(label);
}

// ---- geometry used by the diagonal and the legend placement ------------------------------

struct Box {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -std::numeric_limits<double>::infinity();
  double y0 = std::numeric_limits<double>::infinity(), y1 = -std::numeric_limits<double>::infinity();
  bool valid() const { return x0 <= x1 && y0 <= y1; }
};

/// Maps data coordinates to [0, 1] on each axis (log10 on log axes); non-finite when unplottable.
struct Frame {
  Box box;  // in transformed coordinates
  bool log_x = false, log_y = false;
  double tx(double x) const { return log_x ? (x > 0 ? std::log10(x) : std::nan("")) : x; }
  double ty(double y) const { return log_y ? (y > 0 ? std::log10(y) : std::nan("")) : y; }
  double nx(double x) const { return (tx(x) - box.x0) / std::max(box.x1 - box.x0, 1e-300); }
  double ny(double y) const { return (ty(y) - box.y0) / std::max(box.y1 - box.y0, 1e-300); }
};

/// Calls f(x0, x1, y0, y1) for every mark-covered rectangle of a series, in data coordinates.
template <typename F>
void for_each_extent(const Series& s, F&& f) {
  auto segments = [&](const Vec& x, const auto& y_at) {
    for (Index i = 0; i < x.size(); ++i) {
      const double xi = x[i], yi = y_at(i);
      if (!std::isfinite(xi) || !std::isfinite(yi)) continue;
      if (i + 1 < x.size() && std::isfinite(x[i + 1]) && std::isfinite(y_at(i + 1)))
        f(std::min(xi, x[i + 1]), std::max(xi, x[i + 1]), std::min(yi, y_at(i + 1)), std::max(yi, y_at(i + 1)));
      else
        f(xi, xi, yi, yi);
    }
  };
  switch (s.kind) {
    case SeriesKind::Line:
    case SeriesKind::Step:
      segments(s.columns[0], [&](Index i) { return s.columns[1][i]; });
      break;
    case SeriesKind::Points:
      for (Index i = 0; i < s.columns[0].size(); ++i) f(s.columns[0][i], s.columns[0][i], s.columns[1][i], s.columns[1][i]);
      break;
    case SeriesKind::ErrorBars:
      for (Index i = 0; i < s.columns[0].size(); ++i) {
        const double e = std::isfinite(s.columns[2][i]) ? s.columns[2][i] : 0.0;
        f(s.columns[0][i], s.columns[0][i], s.columns[1][i] - e, s.columns[1][i] + e);
      }
      break;
    case SeriesKind::Band: {
      const Vec& x = s.columns[0];
      for (Index i = 0; i < x.size(); ++i) {
        const Index j = std::min<Index>(i + 1, x.size() - 1);
        f(std::min(x[i], x[j]), std::max(x[i], x[j]), std::min(s.columns[1][i], s.columns[1][j]),
          std::max(s.columns[2][i], s.columns[2][j]));
      }
      break;
    }
    case SeriesKind::Histogram:
      for (Index i = 0; i < s.columns[0].size(); ++i)
        f(s.columns[0][i] - 0.5 * s.columns[2][i], s.columns[0][i] + 0.5 * s.columns[2][i],
          std::min(0.0, s.columns[1][i]), std::max(0.0, s.columns[1][i]));
      break;
    case SeriesKind::Bars:
      for (Index i = 0; i < s.columns[0].size(); ++i)
        f(i - 0.45, i + 0.45, std::min(0.0, s.columns[0][i]), std::max(0.0, s.columns[0][i]));
      break;
    case SeriesKind::Paths:
      for (Index r = 0; r < s.matrix.rows(); ++r) segments(s.columns[0], [&](Index i) { return s.matrix(r, i); });
      break;
    case SeriesKind::Heatmap:
      f(-0.5, s.matrix.cols() - 0.5, -0.5, s.matrix.rows() - 0.5);
      break;
    case SeriesKind::Diagonal:
      break;
  }
}

/// Bounding box of a panel's data in data coordinates (log axes ignore non-positive values).
Box data_box(const Panel& p) {
  Box b;
  for (const Series& s : p.series())
    for_each_extent(s, [&](double x0, double x1, double y0, double y1) {
      if (!std::isfinite(x0) || !std::isfinite(x1) || !std::isfinite(y0) || !std::isfinite(y1)) return;
      if (p.log_x() && x0 <= 0) return;
      if (p.log_y() && y0 <= 0) return;
      b.x0 = std::min(b.x0, x0);
      b.x1 = std::max(b.x1, x1);
      b.y0 = std::min(b.y0, y0);
      b.y1 = std::max(b.y1, y1);
    });
  if (p.x_range()) std::tie(b.x0, b.x1) = *p.x_range();
  if (p.y_range()) std::tie(b.y0, b.y1) = *p.y_range();
  return b;
}

/// The legend position for KeyPosition::Auto: the first inside corner (top right, top left,
/// bottom right, bottom left) whose legend-sized rectangle no mark touches, else below the plot.
/// The legend's width and height as fractions of the plot area (0 when it has no entries).
std::pair<double, double> key_size(const Panel& p, double plot_w_px, double plot_h_px, double font_px) {
  std::size_t entries = 0, longest = 0;
  for (const Series& s : p.series())
    if (!s.label.empty() && s.kind != SeriesKind::Heatmap) {
      ++entries;
      longest = std::max(longest, s.label.size());
    }
  if (entries == 0) return {0.0, 0.0};
  return {std::min(1.0, (longest * 0.62 * font_px + 5.0 * font_px) / plot_w_px),
          std::min(1.0, (entries * 1.35 * font_px + 1.2 * font_px) / plot_h_px)};
}

KeyPosition auto_key(const Panel& p, double plot_w_px, double plot_h_px, double font_px) {
  const auto [kw, kh] = key_size(p, plot_w_px, plot_h_px, font_px);
  if (kh == 0.0) return KeyPosition::None;
  const Box b = data_box(p);
  if (!b.valid()) return KeyPosition::TopRight;
  Frame fr;
  fr.log_x = p.log_x();
  fr.log_y = p.log_y();
  fr.box = {fr.tx(b.x0), fr.tx(b.x1), fr.ty(b.y0), fr.ty(b.y1)};
  // gnuplot's autoscale widens the range to the next tics; a small pad keeps the estimate
  // conservative (marks look closer to the corners than they will be).
  const double pad = 0.02;
  struct Corner {
    KeyPosition pos;
    double x0, x1, y0, y1;
  };
  const Corner corners[] = {{KeyPosition::TopRight, 1 - kw - pad, 1.01, 1 - kh - pad, 1.01},
                            {KeyPosition::TopLeft, -0.01, kw + pad, 1 - kh - pad, 1.01},
                            {KeyPosition::BottomRight, 1 - kw - pad, 1.01, -0.01, kh + pad},
                            {KeyPosition::BottomLeft, -0.01, kw + pad, -0.01, kh + pad}};
  for (const Corner& c : corners) {
    bool hit = false;
    for (const Series& s : p.series()) {
      for_each_extent(s, [&](double x0, double x1, double y0, double y1) {
        if (hit) return;
        const double a0 = fr.nx(x0), a1 = fr.nx(x1), b0 = fr.ny(y0), b1 = fr.ny(y1);
        if (!std::isfinite(a0) || !std::isfinite(a1) || !std::isfinite(b0) || !std::isfinite(b1)) return;
        if (a1 >= c.x0 && a0 <= c.x1 && b1 >= c.y0 && b0 <= c.y1) hit = true;
      });
      if (s.kind == SeriesKind::Diagonal) {  // the diagonal crosses bottom-left and top-right
        if (c.pos == KeyPosition::TopRight || c.pos == KeyPosition::BottomLeft) hit = true;
      }
      if (hit) break;
    }
    if (!hit) return c.pos;
  }
  return KeyPosition::Below;
}

// ---- script writer -----------------------------------------------------------------------

class ScriptWriter {
 public:
  ScriptWriter(std::string& out) : out_(out) {}

  /// Writes a datablock of equal-length columns; returns its name.
  std::string block(const std::vector<Vec>& cols) {
    const std::string name = next_name();
    out_ += name + " << EOD\n";
    for (Index i = 0; i < cols[0].size(); ++i) {
      for (std::size_t c = 0; c < cols.size(); ++c) {
        if (c) out_ += ' ';
        put_number(out_, cols[c][i]);
      }
      out_ += '\n';
    }
    out_ += "EOD\n";
    return name;
  }

  /// Paths over a shared x, separated by blank lines (one plot element, many polylines).
  std::string paths_block(const Vec& x, const Mat& paths) {
    const std::string name = next_name();
    out_ += name + " << EOD\n";
    for (Index r = 0; r < paths.rows(); ++r) {
      for (Index i = 0; i < x.size(); ++i) {
        put_number(out_, x[i]);
        out_ += ' ';
        put_number(out_, paths(r, i));
        out_ += '\n';
      }
      out_ += '\n';
    }
    out_ += "EOD\n";
    return name;
  }

  /// A matrix datablock for `matrix with image`.
  std::string matrix_block(const Mat& m) {
    const std::string name = next_name();
    out_ += name + " << EOD\n";
    for (Index r = 0; r < m.rows(); ++r) {
      for (Index c = 0; c < m.cols(); ++c) {
        if (c) out_ += ' ';
        put_number(out_, m(r, c));
      }
      out_ += '\n';
    }
    out_ += "EOD\n";
    return name;
  }

 private:
  std::string next_name() { return "$d" + std::to_string(count_++); }
  std::string& out_;
  int count_ = 0;
};

constexpr const char* kPanelDefaults = R"(unset title
unset xlabel
unset ylabel
unset logscale
unset label
unset arrow
unset colorbox
unset cblabel
set xrange [*:*] noreverse
set yrange [*:*] noreverse
set cbrange [*:*]
set offsets 0, 0, 0, 0
set xtics autofreq norotate nomirror out scale 0.5
set ytics autofreq norotate nomirror out scale 0.5
set mxtics default
set format x '% h'
set format y '% h'
set size noratio
set border 3 lw 1 lc rgb '#333333'
set grid xtics ytics back lt 1 lw 1 lc rgb '#E3E3E3' dt solid
set style fill solid 1 noborder
)";

/// The terminal, output and palette lines that open every script.
std::string script_header(Format format, const fs::path& output, int width, int height, double font_size) {
  std::string s;
  const std::string font = fmt::format("sans-serif,{}", font_size);
  s += "set encoding utf8\n";
  if (format == Format::Png)
    s += fmt::format("set terminal pngcairo size {},{} noenhanced font '{}' linewidth 1 rounded background rgb 'white'\n",
                     width, height, font);
  else
    s += fmt::format("set terminal svg size {},{} fixed noenhanced font '{}' linewidth 1 rounded background rgb 'white'\n",
                     width, height, font);
  s += "set output " + gnuplot_quote(output.string()) + "\n";
  s += "set palette defined (0 '#440154', 0.25 '#3B528B', 0.5 '#21918C', 0.75 '#5EC962', 1 '#FDE725')\n";
  return s;
}

/// Writes every series' data as a datablock (they cannot be defined inside multiplot) and returns
/// the blocks' names, per panel and series ("" for a diagonal with no data to span).
std::vector<std::vector<std::string>> write_data_blocks(ScriptWriter& w, const std::vector<Panel>& panels) {
  std::vector<std::vector<std::string>> names(panels.size());
  for (std::size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    const Box box = data_box(panel);
    for (const Series& ser : panel.series()) {
      switch (ser.kind) {
        case SeriesKind::Paths: names[p].push_back(w.paths_block(ser.columns[0], ser.matrix)); break;
        case SeriesKind::Heatmap: names[p].push_back(w.matrix_block(ser.matrix)); break;
        case SeriesKind::Diagonal: {
          if (!box.valid()) {
            names[p].push_back("");
            break;
          }
          double lo = std::min(box.x0, box.y0), hi = std::max(box.x1, box.y1);
          Vec d(2);
          d << lo, hi;
          names[p].push_back(w.block({d, d}));
          break;
        }
        default: names[p].push_back(w.block(ser.columns));
      }
    }
  }
  return names;
}

/// The panel's title, labels, log scales, aspect and ranges as the user set them.
std::string panel_axes(const Panel& panel, double font_size) {
  std::string s;
  if (!panel.title().empty()) s += "set title " + gnuplot_quote(panel.title()) + fmt::format(" font ',{}'\n", font_size + 2);
  if (!panel.x_label().empty()) s += "set xlabel " + gnuplot_quote(panel.x_label()) + "\n";
  if (!panel.y_label().empty()) s += "set ylabel " + gnuplot_quote(panel.y_label()) + "\n";
  if (panel.log_x()) s += "set logscale x 10\n";
  if (panel.log_y()) s += "set logscale y 10\n";
  if (panel.square()) s += "set size ratio -1\n";
  if (panel.x_range()) s += fmt::format("set xrange [{:.10g}:{:.10g}]\n", panel.x_range()->first, panel.x_range()->second);
  if (panel.y_range()) s += fmt::format("set yrange [{:.10g}:{:.10g}]\n", panel.y_range()->first, panel.y_range()->second);
  return s;
}

/// Grouped bars share the x axis of their categories (the first bar series'), rotated when they
/// would overlap, and their y axis includes zero, where bars grow from.
std::string bar_axes(const Panel& panel, const Series& first_bars, double plot_w, double font_px) {
  std::string s;
  const auto& cats = first_bars.categories;
  std::size_t longest = 0;
  for (const auto& c : cats) longest = std::max(longest, c.size());
  s += "set xtics (";
  for (std::size_t i = 0; i < cats.size(); ++i) s += (i ? ", " : "") + gnuplot_quote(cats[i]) + " " + std::to_string(i);
  s += ")";
  if (longest * cats.size() * font_px * 0.6 > plot_w) s += " rotate by 30 right";
  s += "\nset grid noxtics\n";
  if (!panel.x_range()) s += fmt::format("set xrange [-0.6:{}]\n", cats.size() - 0.4);
  if (!panel.y_range()) {
    bool any_pos = false, any_neg = false;
    for (const Series& ser : panel.series())
      if (ser.kind == SeriesKind::Bars)
        for (Index i = 0; i < ser.columns[0].size(); ++i) {
          any_pos = any_pos || ser.columns[0][i] > 0;
          any_neg = any_neg || ser.columns[0][i] < 0;
        }
    if (!panel.log_y()) {
      if (!any_neg) s += "set yrange [0:*]\n";
      else if (!any_pos) s += "set yrange [*:0]\n";
    }
  }
  return s;
}

/// A heatmap's frame: a colour box, square cells, and whole-cell tics.
std::string heatmap_axes(const Panel& panel, const Series& heatmap) {
  std::string s = "set colorbox\nset border 15\nunset grid\nset tics nomirror out\nset size ratio -1\n";
  if (!heatmap.label.empty()) s += "set cblabel " + gnuplot_quote(heatmap.label) + "\n";
  if (!panel.x_range()) s += fmt::format("set xrange [-0.5:{}]\n", heatmap.matrix.cols() - 0.5);
  if (!panel.y_range()) s += fmt::format("set yrange [{}:-0.5]\n", heatmap.matrix.rows() - 0.5);
  // Whole-cell tics, at most about 8 per axis (gnuplot's own would put 0.5 steps on a narrow matrix).
  s += fmt::format("set xtics 0,{}\nset ytics 0,{}\n", std::max<Index>(1, (heatmap.matrix.cols() + 7) / 8),
                   std::max<Index>(1, (heatmap.matrix.rows() + 7) / 8));
  return s;
}

/// The legend: where the panel asks for it, or for Auto the free corner auto_key finds (none on a
/// heatmap).
std::string legend(const Panel& panel, bool heat, double plot_w, double plot_h, double font_px, double font_size) {
  std::string s;
  KeyPosition key = panel.key();
  if (key == KeyPosition::Auto) {
    key = heat ? KeyPosition::None : auto_key(panel, plot_w, plot_h, font_px);
    // No free corner (a histogram fills the panel): a legend below would touch the x label, so
    // the y axis grows upwards to leave the top right corner to the legend.
    const Box b = data_box(panel);
    if (key == KeyPosition::Below && !panel.y_range() && !panel.log_y() && b.valid() && b.y1 > b.y0) {
      const double kh = std::min(0.5, key_size(panel, plot_w, plot_h, font_px).second + 0.06);
      s += fmt::format("set yrange [{:.10g}:{:.10g}]\n", b.y0, b.y1 + (b.y1 - b.y0) * kh / (1 - kh));
      key = KeyPosition::TopRight;
    }
  }
  const std::string key_style = fmt::format(" samplen 2.5 spacing 1.1 font ',{}'", font_size - 1);
  switch (key) {
    case KeyPosition::TopLeft: s += "set key inside top left Left reverse opaque box lc rgb '#CCCCCC'" + key_style + "\n"; break;
    case KeyPosition::TopRight: s += "set key inside top right Left reverse opaque box lc rgb '#CCCCCC'" + key_style + "\n"; break;
    case KeyPosition::BottomLeft: s += "set key inside bottom left Left reverse opaque box lc rgb '#CCCCCC'" + key_style + "\n"; break;
    case KeyPosition::BottomRight: s += "set key inside bottom right Left reverse opaque box lc rgb '#CCCCCC'" + key_style + "\n"; break;
    case KeyPosition::Below: s += "set key below center horizontal Left reverse noopaque nobox" + key_style + "\n"; break;
    case KeyPosition::Right: s += "set key outside right top vertical Left reverse noopaque nobox" + key_style + "\n"; break;
    case KeyPosition::None:
    case KeyPosition::Auto: s += "unset key\n"; break;
  }
  return s;
}

/// One series' element of the plot command, reading its datablock `name` ("" for nothing to draw).
/// Bars are the `bar_index`-th of `num_bars` in their group.
std::string plot_element(const Series& ser, const std::string& name, std::size_t bar_index, std::size_t num_bars) {
  const Style& st = ser.style;
  const std::string lc = "lc " + colour_spec(st.colour, st.alpha);
  const std::string title = title_spec(ser.label);
  switch (ser.kind) {
    case SeriesKind::Line:
    case SeriesKind::Paths:
      return fmt::format("{} using 1:2 with lines lw {} {} {} {}", name, st.line_width, dash_spec(st.dash), lc, title);
    case SeriesKind::Points:
      return fmt::format("{} using 1:2 with points pt {} ps {} {} {}", name, marker_code(st.marker), st.point_size, lc, title);
    case SeriesKind::Band:
      return fmt::format("{} using 1:2:3 with filledcurves fc rgb '{}' fs transparent solid {} noborder {}", name, st.colour,
                         st.alpha, title);
    case SeriesKind::ErrorBars:
      return fmt::format("{} using 1:2:3 with yerrorbars pt {} ps {} lw {} {} {}", name, marker_code(st.marker), st.point_size,
                         std::min(st.line_width, 1.2), lc, title);
    case SeriesKind::Diagonal:
      if (name.empty()) return "";
      return fmt::format("{} using 1:2 with lines lw {} {} {} {}", name, st.line_width, dash_spec(st.dash), lc, title);
    case SeriesKind::Histogram:
      return fmt::format("{} using 1:2:3 with boxes fs transparent solid {} border {} lw 1 {} {}", name, 0.45 * st.alpha,
                         "lc " + colour_spec(st.colour, 1.0), lc, title);
    case SeriesKind::Step:
      return fmt::format("{} using 1:2 with histeps lw {} {} {} {}", name, st.line_width, dash_spec(st.dash), lc, title);
    case SeriesKind::Bars: {
      const double group = 0.8, width = group / static_cast<double>(num_bars);
      const double offset = -0.5 * group + (bar_index + 0.5) * width;
      return fmt::format("{} using ($0{:+.6g}):1:({:.6g}) with boxes fs transparent solid {} border {} {} {}", name, offset,
                         width * 0.92, 0.85 * st.alpha, "lc " + colour_spec(st.colour, 1.0), lc, title);
    }
    case SeriesKind::Heatmap:
      // gnuplot's image needs a 2 x 2 grid at least: a single row or column is drawn cell by cell.
      if (ser.matrix.rows() < 2 || ser.matrix.cols() < 2)
        return name + " matrix using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder lc palette notitle";
      return name + " matrix with image notitle";
  }
  return "";
}

}  // namespace

Figure::Figure(int rows, int cols) : rows_(rows), cols_(cols) {
  require(rows >= 1 && rows <= 100, "rows", "in [1, 100]");
  require(cols >= 1 && cols <= 100, "cols", "in [1, 100]");
  panels_.resize(static_cast<std::size_t>(rows * cols));
}

Panel& Figure::panel(int row, int col) {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_)
    throw std::out_of_range("Figure::panel(" + std::to_string(row) + ", " + std::to_string(col) + ") outside a " +
                            std::to_string(rows_) + " x " + std::to_string(cols_) + " grid");
  return panels_[static_cast<std::size_t>(row * cols_ + col)];
}

const Panel& Figure::panel(int row, int col) const { return const_cast<Figure*>(this)->panel(row, col); }

Figure& Figure::title(std::string text) {
  title_ = std::move(text);
  return *this;
}

Figure& Figure::font_size(double points) {
  require(points >= 4 && points <= 72, "font_size", "in [4, 72] points");
  font_size_ = points;
  return *this;
}

std::pair<int, int> Figure::default_size() const {
  if (rows_ == 1 && cols_ == 1) return {800, 560};
  const int w = std::min(cols_ * 560, 4000);
  const int h = std::min(rows_ * 380 + (title_.empty() ? 0 : 40), 8000);
  return {w, h};
}


std::string Figure::script(const fs::path& output, int width, int height) const {
  const Format format = format_of(output);
  if (width == 0) width = default_size().first;
  if (height == 0) height = default_size().second;
  require(width >= 100 && width <= 20000, "width", "0 (automatic) or in [100, 20000] pixels");
  require(height >= 100 && height <= 20000, "height", "0 (automatic) or in [100, 20000] pixels");

  std::string s;
  s.reserve(1 << 16);
  s += script_header(format, output, width, height, font_size_);
  ScriptWriter w(s);
  const std::vector<std::vector<std::string>> names = write_data_blocks(w, panels_);

  const double font_px = font_size_ * 1.1;  // approximate pixel height of the base font
  const double plot_w = static_cast<double>(width) / cols_ - 9 * font_px;
  const double plot_h = static_cast<double>(height) / rows_ - 6 * font_px - (title_.empty() ? 0 : 30.0 / rows_);

  s += fmt::format("set multiplot layout {},{} rowsfirst", rows_, cols_);
  if (!title_.empty()) s += " title " + gnuplot_quote(title_) + fmt::format(" font ',{}'", font_size_ + 3);
  s += "\n";

  for (std::size_t p = 0; p < panels_.size(); ++p) {
    const Panel& panel = panels_[p];
    if (panel.empty()) {
      s += "set multiplot next\n";
      continue;
    }
    s += "# ---- panel " + std::to_string(p) + "\n";
    s += kPanelDefaults;
    s += panel_axes(panel, font_size_);
    std::size_t num_bars = 0;
    const Series* first_bars = nullptr;
    const Series* heatmap = nullptr;
    for (const Series& ser : panel.series())
      if (ser.kind == SeriesKind::Bars) {
        if (!first_bars) first_bars = &ser;
        ++num_bars;
      }
    if (first_bars) s += bar_axes(panel, *first_bars, plot_w, font_px);
    for (const Series& ser : panel.series())
      if (ser.kind == SeriesKind::Heatmap) {
        heatmap = &ser;
        s += heatmap_axes(panel, ser);
      }
    s += legend(panel, heatmap != nullptr, plot_w, plot_h, font_px, font_size_);

    std::vector<std::string> elements;
    std::size_t bar_index = 0;
    for (std::size_t k = 0; k < panel.series().size(); ++k) {
      const Series& ser = panel.series()[k];
      std::string element = plot_element(ser, names[p][k], bar_index, num_bars);
      if (ser.kind == SeriesKind::Bars) ++bar_index;
      if (!element.empty()) elements.push_back(std::move(element));
    }
    if (elements.empty()) {
      s += "set multiplot next\n";
      continue;
    }
    s += "plot ";
    for (std::size_t e = 0; e < elements.size(); ++e) s += (e ? ", \\\n     " : "") + elements[e];
    s += "\n";
  }
  s += "unset multiplot\nset output\n";
  return s;
}

void Figure::save(const fs::path& path, int width, int height) const {
  format_of(path);  // validate the extension before anything else
  static std::atomic<unsigned> counter{0};
  // Temporary output next to the target (same file system, so the rename is atomic).
  fs::path tmp = path;
  tmp.replace_filename(path.stem().string() + fmt::format(".tmp-{}-{}", ::getpid(), counter++) +
                       path.extension().string());
  const std::string text = script(tmp, width, height);
  auto discard = [&] {
    std::error_code ec;
    fs::remove(tmp, ec);
  };
  try {
    run_gnuplot(text);
  } catch (const std::exception& e) {
    discard();
    throw std::runtime_error("plot: cannot write '" + path.string() + "': " + e.what());
  }
  std::error_code ec;
  if (!fs::exists(tmp, ec) || fs::file_size(tmp, ec) == 0) {
    discard();
    throw std::runtime_error("plot: gnuplot produced no output for '" + path.string() + "'");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    discard();
    throw std::runtime_error("plot: cannot move the figure to '" + path.string() + "': " + ec.message());
  }
}

}  // namespace uqnn::plot
