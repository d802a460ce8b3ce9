#include "uqnn/plot/figure.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "unit/plot/plot_test_util.hpp"
#include "uqnn/plot/gnuplot.hpp"

namespace uqnn::plot {
namespace {

using test::is_png;
using test::is_svg;
using test::TempDir;
namespace fs = std::filesystem;

/// A figure using every mark once.
Figure every_mark() {
  const Vec x = Vec::LinSpaced(50, 0.0, 5.0);
  const Vec y = x.array().sin();
  Figure fig(2, 3);
  fig.title("every mark");
  fig.panel(0, 0).title("lines").x_label("x").y_label("y").line(x, y, "sin").points(x, y.array() + 0.1, "points")
      .band(x, y.array() - 0.3, y.array() + 0.3, "band");
  fig.panel(0, 1).title("parity").square().error_bars(y, y.array() * 0.9, Vec::Constant(50, 0.1), "pred").diagonal();
  fig.panel(0, 2).title("histogram").histogram(y, 20, "h", {}, true);
  fig.panel(1, 0).title("bars").bars({"layer1", "layer2"}, Eigen::Vector2d(1.0, 2.0), "a")
      .bars({"layer1", "layer2"}, Eigen::Vector2d(0.5, 1.5), "b");
  fig.panel(1, 1).title("heatmap").heatmap(Mat::Random(4, 5), "value");
  Mat paths(3, 50);
  for (int r = 0; r < 3; ++r) paths.row(r) = (x.array() + r).sin().transpose();
  fig.panel(1, 2).title("paths + step, log y").log_y().paths(x, paths.array().abs() + 0.1, "draws")
      .step(x, x.array() + 1.0, "step");
  return fig;
}

TEST(Figure, WritesPngAndSvgChosenByExtension) {
  TempDir dir;
  const Figure fig = every_mark();
  fig.save(dir / "f.png");
  fig.save(dir / "f.svg", 900, 600);
  fig.save(dir / "upper.PNG");
  EXPECT_TRUE(is_png(dir / "f.png"));
  EXPECT_TRUE(is_svg(dir / "f.svg"));
  EXPECT_TRUE(is_png(dir / "upper.PNG"));
  // Nothing but the figures: no temporary outputs or scripts are left behind.
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"f.png", "f.svg", "upper.PNG"}));
}

TEST(Figure, RejectsOtherExtensionsAndSizes) {
  TempDir dir;
  const Figure fig = every_mark();
  EXPECT_THROW(fig.save(dir / "f.pdf"), std::invalid_argument);
  EXPECT_THROW(fig.save(dir / "f"), std::invalid_argument);
  EXPECT_THROW(fig.save(dir / "f.png", 50, 400), std::invalid_argument);
  EXPECT_TRUE(dir.files().empty());
}

TEST(Figure, FailedGnuplotRunThrowsWithItsMessageAndLeavesNoFile) {
  TempDir dir;
  const fs::path target = dir / "missing-dir" / "f.png";
  try {
    every_mark().save(target);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gnuplot failed"), std::string::npos) << what;
    EXPECT_NE(what.find("cannot open file"), std::string::npos) << what;  // gnuplot's own stderr
  }
  EXPECT_FALSE(fs::exists(target));
  EXPECT_TRUE(dir.files().empty());
}

TEST(Figure, FailureKeepsAnExistingFileAndRemovesTheTemporary) {
  TempDir dir;
  const fs::path target = dir / "f.png";
  { std::ofstream(target) << "previous"; }
  test::ScopedEnv env("UQNN_GNUPLOT", "false");  // starts, writes nothing, exits 1
  EXPECT_THROW(every_mark().save(target), std::runtime_error);
  EXPECT_EQ(test::read_bytes(target), "previous");
  EXPECT_EQ(dir.files(), std::vector<std::string>{"f.png"});
}

TEST(Figure, MissingGnuplotGivesAClearError) {
  TempDir dir;
  test::ScopedEnv env("UQNN_GNUPLOT", "/nonexistent/bin/gnuplot");
  try {
    every_mark().save(dir / "f.png");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("gnuplot-nox"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.files().empty());
}

TEST(Gnuplot, StuckRunIsKilledAfterTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(run_gnuplot("pause 30\n", std::chrono::seconds(1)), std::runtime_error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Gnuplot, QuotesStringsLiterally) {
  EXPECT_EQ(gnuplot_quote("it's"), "\"it's\"");
  EXPECT_EQ(gnuplot_quote("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(gnuplot_quote("a\nb"), "\"a b\"");
  EXPECT_EQ(gnuplot_quote("`ls`"), "\"\\`ls\\`\"");
  EXPECT_EQ(gnuplot_quote("$x_1^2 \\n"), "\"$x_1^2 \\\\n\"");
}

TEST(Figure, AwkwardLabelsRender) {
  TempDir dir;
  Figure fig;
  fig.title("it's \"quoted\" $DATA @ {braces} back\\slash ±σ");
  fig.panel().title("layer1.weight[0,0]_x^2").x_label("x'").line(Vec::LinSpaced(3, 0, 1), Vec::LinSpaced(3, 0, 1),
                                                                   "'; system('touch pwned'); '");
  fig.panel().y_label("`touch pwned` \"; system(\"touch pwned\")");
  fig.save(dir / "f.png");
  EXPECT_TRUE(is_png(dir / "f.png"));
  EXPECT_EQ(dir.files(), std::vector<std::string>{"f.png"});
  EXPECT_FALSE(fs::exists("pwned"));  // labels are data, never gnuplot commands
}

TEST(Figure, NonFiniteValuesLeaveGaps) {
  TempDir dir;
  Vec x = Vec::LinSpaced(20, 0, 1), y = x;
  y[5] = std::nan("");
  y[6] = std::numeric_limits<double>::infinity();
  Figure fig;
  fig.panel().line(x, y, "gappy").points(x, y, "pts");
  EXPECT_NE(fig.script("out.png").find("NaN"), std::string::npos);
  fig.save(dir / "f.png");
  EXPECT_TRUE(is_png(dir / "f.png"));
}

TEST(Panel, MismatchedLengthsThrowInvalidArgument) {
  Panel p;
  const Vec a = Vec::Zero(3), b = Vec::Zero(4);
  EXPECT_THROW(p.line(a, b), std::invalid_argument);
  EXPECT_THROW(p.points(a, b), std::invalid_argument);
  EXPECT_THROW(p.band(a, a, b), std::invalid_argument);
  EXPECT_THROW(p.band(a, b, a), std::invalid_argument);
  EXPECT_THROW(p.error_bars(a, a, b), std::invalid_argument);
  EXPECT_THROW(p.step(a, b), std::invalid_argument);
  EXPECT_THROW(p.bars({"a", "b"}, a), std::invalid_argument);
  EXPECT_THROW(p.paths(a, Mat::Zero(2, 4)), std::invalid_argument);
  EXPECT_TRUE(p.empty());
}

TEST(Panel, RejectsInvalidArguments) {
  Panel p;
  const Vec a = Vec::LinSpaced(3, 0, 1);
  EXPECT_THROW(p.error_bars(a, a, -a.array() - 1), std::invalid_argument);
  EXPECT_THROW(p.histogram(a, 0), std::invalid_argument);
  EXPECT_THROW(p.histogram(Vec::Constant(3, std::nan(""))), std::invalid_argument);
  EXPECT_THROW(p.x_range(1, 1), std::invalid_argument);
  EXPECT_THROW(p.band(a, a, a, "", "", 0.0), std::invalid_argument);
  Style bad;
  bad.colour = "red";
  EXPECT_THROW(p.line(a, a, "", bad), std::invalid_argument);
  EXPECT_THROW(p.heatmap(Mat()), std::invalid_argument);
  p.bars({"a", "b"}, Eigen::Vector2d(1, 2));
  EXPECT_THROW(p.bars({"a", "c"}, Eigen::Vector2d(1, 2)), std::invalid_argument);
  EXPECT_THROW(p.heatmap(Mat::Ones(2, 2)), std::invalid_argument);  // a heatmap stands alone
  Figure fig(2, 2);
  EXPECT_THROW(fig.panel(2, 0), std::out_of_range);
  EXPECT_THROW(Figure(0, 1), std::invalid_argument);
}

TEST(Panel, HistogramCountsEveryFiniteValue) {
  Panel p;
  Vec v(6);
  v << 0, 1, 2, 3, 4, std::nan("");
  p.histogram(v, 2);
  const Series& s = p.series().front();
  EXPECT_DOUBLE_EQ(s.columns[1].sum(), 5.0);  // the maximum lands in the last bin
  EXPECT_DOUBLE_EQ(s.columns[1][0], 2.0);
  EXPECT_DOUBLE_EQ(s.columns[1][1], 3.0);
  Panel d;
  d.histogram(v, 2, "", {}, true);
  const Series& sd = d.series().front();
  EXPECT_NEAR((sd.columns[1].array() * sd.columns[2].array()).sum(), 1.0, 1e-12);  // unit area
}

TEST(Panel, SeriesTakePaletteColoursInOrder) {
  Panel p;
  const Vec a = Vec::LinSpaced(3, 0, 1);
  p.line(a, a).line(a, a).diagonal();
  EXPECT_EQ(p.series()[0].style.colour, kPalette[0]);
  EXPECT_EQ(p.series()[1].style.colour, kPalette[1]);
  EXPECT_EQ(p.series()[2].style.colour, kReferenceGrey);
}

TEST(Figure, AutoLegendAvoidsData) {
  const Vec x = Vec::LinSpaced(50, 0, 1);
  {  // rising line: top-right and bottom-left are taken, top-left is free
    Figure fig;
    fig.panel().line(x, x, "rising");
    EXPECT_NE(fig.script("o.png").find("set key inside top left"), std::string::npos);
  }
  Vec xs(400), ys(400);
  for (int i = 0; i < 400; ++i) {
    xs[i] = (i % 20) / 19.0;
    ys[i] = (i / 20) / 19.0;
  }
  {  // data filling the whole frame: the y axis grows to free the top right corner (a legend below
     // would touch the x label)
    Figure fig;
    fig.panel().points(xs, ys, "grid");
    const std::string script = fig.script("o.png");
    EXPECT_NE(script.find("set key inside top right"), std::string::npos) << script;
    const auto at = script.find("set yrange [0:");
    ASSERT_NE(at, std::string::npos) << script;
    EXPECT_GT(std::stod(script.substr(at + 14)), 1.1) << "headroom above the data";
  }
  {  // ... unless the y range is fixed: then below the axes
    Figure fig;
    fig.panel().y_range(0, 1).points(xs, ys, "grid");
    EXPECT_NE(fig.script("o.png").find("set key below"), std::string::npos);
  }
  {  // an explicit position is kept
    Figure fig;
    fig.panel().key(KeyPosition::None).line(x, x, "rising");
    EXPECT_NE(fig.script("o.png").find("unset key"), std::string::npos);
  }
}

TEST(Figure, BarsStartAtZero) {
  Figure fig;
  fig.panel().bars({"a", "b"}, Eigen::Vector2d(0.5, 0.9), "h");
  EXPECT_NE(fig.script("o.svg").find("set yrange [0:*]"), std::string::npos);
}

}  // namespace
}  // namespace uqnn::plot
