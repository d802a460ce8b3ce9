#pragma once
/// @file Figure: a grid of panels written to PNG or SVG through gnuplot.
#include <filesystem>
#include <string>
#include <vector>

#include "uqnn/plot/panel.hpp"

namespace uqnn::plot {

/// A rows x cols grid of panels with an optional overall title, saved as PNG or SVG.
///
/// Why gnuplot: it is a Debian package (gnuplot-nox, terminals pngcairo and svg), needs no
/// Python, and renders thousands of points quickly. The figure is turned into one self-contained
/// script (data inline in `$name << EOD` blocks), gnuplot runs it as a child process with stdin
/// closed, and the output is written to a temporary file in the target directory and renamed on
/// success, so a failed run never leaves a partial or stale-looking file.
class Figure {
 public:
  /// A grid of `rows` x `cols` panels (both >= 1).
  explicit Figure(int rows = 1, int cols = 1);

  /// The panel in row `row`, column `col` (0-based, row-major); throws std::out_of_range.
  Panel& panel(int row = 0, int col = 0);
  const Panel& panel(int row = 0, int col = 0) const;
  /// Overall title above all panels.
  Figure& title(std::string text);
  /// Base font size in points (default 11); titles are 2 points larger.
  Figure& font_size(double points);

  int rows() const { return rows_; }
  int cols() const { return cols_; }

  /// Writes the figure to `path`; the format follows the extension (.png or .svg, any case).
  /// `width`/`height` in pixels; 0 picks a size from the grid (about 640 x 440 per panel).
  /// Throws std::invalid_argument for another extension or a size outside [100, 20000], and
  /// std::runtime_error (with gnuplot's messages) when gnuplot is missing or fails; in that case
  /// no file is created at `path` (an existing file is left unchanged).
  void save(const std::filesystem::path& path, int width = 0, int height = 0) const;

  /// The gnuplot script save() would run, writing to `output` (useful to debug a figure).
  std::string script(const std::filesystem::path& output, int width = 0, int height = 0) const;

  /// The size save() uses when given 0: {width, height} in pixels.
  std::pair<int, int> default_size() const;

 private:
  int rows_, cols_;
  std::string title_;
  double font_size_ = 11.0;
  std::vector<Panel> panels_;
};

}  // namespace uqnn::plot
