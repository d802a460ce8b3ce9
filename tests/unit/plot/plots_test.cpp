#include "uqnn/plot/plots.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "unit/plot/plot_test_util.hpp"

namespace uqnn::plot {
namespace {

using test::is_png;
using test::is_svg;
using test::TempDir;
namespace fs = std::filesystem;

struct Toy {
  Vec x_train, y_train, x_grid, mean, sd, truth;
  Mat paths;
  Toy() {
    x_train = Vec::LinSpaced(20, -2, 2);
    y_train = x_train.array().sin();
    x_grid = Vec::LinSpaced(100, -3, 3);
    truth = x_grid.array().sin();
    mean = 0.9 * truth;
    sd = 0.1 + 0.2 * x_grid.array().abs();
    paths.resize(10, 100);
    for (int r = 0; r < 10; ++r) paths.row(r) = (mean.array() + sd.array() * std::sin(1.3 * r)).transpose();
  }
  Predictive1d predictive(const std::string& title) const {
    Predictive1d p;
    p.title = title;
    p.x_train = x_train;
    p.y_train = y_train;
    p.x_grid = x_grid;
    p.mean = mean;
    p.sd = sd;
    p.truth = truth;
    return p;
  }
};

/// Runs `write(path)` for a .png and a .svg path and checks both files.
template <typename F>
void expect_png_and_svg(F write) {
  TempDir dir;
  write(dir / "fig.png");
  write(dir / "fig.svg");
  EXPECT_TRUE(is_png(dir / "fig.png"));
  EXPECT_TRUE(is_svg(dir / "fig.svg"));
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"fig.png", "fig.svg"}));
}

TEST(Plots, Predictive1dWritesPngAndSvg) {
  const Toy t;
  expect_png_and_svg([&](const fs::path& p) {
    plot_predictive_1d(p, t.x_train, t.y_train, t.x_grid, t.mean, t.sd, t.truth, "predictive");
  });
  expect_png_and_svg([&](const fs::path& p) {  // without truth and without data
    plot_predictive_1d(p, Vec(), Vec(), t.x_grid, t.mean, t.sd);
  });
}

TEST(Plots, Predictive1dFromSamplePathsWritesPngAndSvg) {
  const Toy t;
  expect_png_and_svg([&](const fs::path& p) {
    plot_predictive_1d_from_draws(p, t.x_train, t.y_train, t.x_grid, t.paths, t.truth, "draws", 5);
  });
}

TEST(Plots, ParityWritesPngAndSvg) {
  const Toy t;
  expect_png_and_svg([&](const fs::path& p) { plot_parity(p, t.y_train, 0.9 * t.y_train, Vec(0.1 * t.y_train.array().abs()), "parity"); });
  expect_png_and_svg([&](const fs::path& p) { plot_parity(p, t.y_train, 0.9 * t.y_train); });
}

TEST(Plots, HistoryWritesPngAndSvg) {
  std::vector<double> loss, elbo;
  for (int i = 0; i < 500; ++i) {
    loss.push_back(std::exp(-i / 100.0) + 0.01);
    elbo.push_back(2 * std::exp(-i / 150.0) + 0.02);
  }
  expect_png_and_svg([&](const fs::path& p) {
    plot_history(p, {{"loss", loss}, {"-ELBO", elbo}}, {.title = "history", .log_y = true});
  });
}

TEST(Plots, TracesWritePngAndSvg) {
  Mat a(3, 200), b(3, 200);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 200; ++i) {
      a(c, i) = std::sin(0.1 * i + c);
      b(c, i) = std::cos(0.07 * i * (c + 1));
    }
  expect_png_and_svg([&](const fs::path& p) { plot_traces(p, {{"lp__", a}, {"w[0]", b}}, {.title = "traces"}); });
  expect_png_and_svg([&](const fs::path& p) { plot_traces(p, {{"lp__", a}}, {.density = false}); });
}

TEST(Plots, SideBySideWritesPngAndSvg) {
  const Toy t;
  std::vector<Predictive1d> panels = {t.predictive("HMC"), t.predictive("VI"), t.predictive("Laplace")};
  panels[1].sd *= 0.5;
  panels[2].sample_paths = t.paths;
  expect_png_and_svg([&](const fs::path& p) { plot_side_by_side(p, panels, {.title = "methods"}); });
}

TEST(Plots, MismatchedLengthsThrowInvalidArgumentAndWriteNothing) {
  const Toy t;
  TempDir dir;
  const fs::path out = dir / "f.png";
  const Vec short_mean = t.mean.head(50);
  EXPECT_THROW(plot_predictive_1d(out, t.x_train, t.y_train, t.x_grid, short_mean, t.sd), std::invalid_argument);
  EXPECT_THROW(plot_predictive_1d(out, t.x_train, t.y_train.head(3), t.x_grid, t.mean, t.sd), std::invalid_argument);
  EXPECT_THROW(plot_predictive_1d(out, t.x_train, t.y_train, t.x_grid, t.mean, t.sd, Vec(t.truth.head(7))),
               std::invalid_argument);
  EXPECT_THROW(plot_predictive_1d(out, t.x_train, t.y_train, t.x_grid, t.mean, Vec(-t.sd)), std::invalid_argument);
  EXPECT_THROW(plot_predictive_1d_from_draws(out, t.x_train, t.y_train, t.x_grid, Mat(t.paths.leftCols(10))), std::invalid_argument);
  EXPECT_THROW(plot_predictive_1d_from_draws(out, t.x_train, t.y_train, t.x_grid, Mat(t.paths.topRows(1))), std::invalid_argument);
  EXPECT_THROW(plot_parity(out, t.y_train, t.y_train.head(5)), std::invalid_argument);
  EXPECT_THROW(plot_parity(out, t.y_train, t.y_train, Vec::Ones(3)), std::invalid_argument);
  EXPECT_THROW(plot_history(out, {}), std::invalid_argument);
  EXPECT_THROW(plot_history(out, {{"elbo", {-3.0, -2.0}}}, {.log_y = true}), std::invalid_argument);
  EXPECT_THROW(plot_traces(out, {}), std::invalid_argument);
  EXPECT_THROW(plot_traces(out, {{"empty", Mat(2, 0)}}), std::invalid_argument);
  std::vector<Predictive1d> panels = {t.predictive("ok"), t.predictive("bad")};
  panels[1].sd = Vec(panels[1].sd.head(10));  // a copy: assigning a block of itself aliases
  EXPECT_THROW(plot_side_by_side(out, panels), std::invalid_argument);
  EXPECT_THROW(plot_side_by_side(out, {}), std::invalid_argument);
  EXPECT_TRUE(dir.files().empty());
}

TEST(Plots, FailedRunLeavesNoFile) {
  const Toy t;
  TempDir dir;
  const fs::path out = dir / "no-such-dir" / "f.svg";
  EXPECT_THROW(plot_parity(out, t.y_train, t.y_train), std::runtime_error);
  EXPECT_THROW(plot_predictive_1d(out, t.x_train, t.y_train, t.x_grid, t.mean, t.sd), std::runtime_error);
  EXPECT_TRUE(dir.files().empty());
}

}  // namespace
}  // namespace uqnn::plot
