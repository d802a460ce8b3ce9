#include "uqnn/plot/sensitivity_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "uqnn/io/atomic_file.hpp"
#include "uqnn/plot/figure.hpp"

namespace uqnn {

nlohmann::json sensitivity_summary(const SensitivityReport& r, const ParamLayout& layout, const std::vector<double>& taus) {
  nlohmann::json j;
  j["num_params"] = r.sensitivity.size();
  j["total_variance"] = r.total;
  nlohmann::json kept = nlohmann::json::array();
  for (double tau : taus) kept.push_back({{"tau", tau}, {"num_kept", r.num_kept(tau)}});
  j["num_kept"] = kept;
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& b : block_sensitivities(layout, r.sensitivity))
    blocks.push_back({{"block", b.name}, {"count", b.count}, {"sum", b.sum}, {"share", r.total > 0 ? b.sum / r.total : 0.0}, {"max", b.max}});
  j["blocks"] = blocks;
  nlohmann::json top = nlohmann::json::array();
  for (std::size_t k = 0; k < std::min<std::size_t>(10, r.ranking.size()); ++k)
    top.push_back({{"name", layout.name_of(r.ranking[k])}, {"s2", r.sensitivity[r.ranking[k]]}});
  j["most_sensitive"] = top;
  return j;
}

namespace {

/// The 99th percentile of the values (nearest rank).
double percentile99(Vec values) {
  std::sort(values.data(), values.data() + values.size());
  const auto k = static_cast<Index>(std::ceil(0.99 * static_cast<double>(values.size()))) - 1;
  return values[std::clamp<Index>(k, 0, values.size() - 1)];
}

}  // namespace

std::vector<std::filesystem::path> write_sensitivity_report(const std::filesystem::path& dir, const SensitivityReport& r,
                                                            const ParamLayout& layout, const std::string& figure_format,
                                                            const std::vector<double>& taus) {
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> files;
  const Index P = r.sensitivity.size();
  Vec rank_of(P);
  for (Index k = 0; k < P; ++k) rank_of[r.ranking[static_cast<std::size_t>(k)]] = static_cast<double>(k);
  files.push_back(dir / "sensitivity.csv");
  atomic_write(files.back(), [&](std::ostream& out) {
    out << "index,name,s2,rank,cumulative_ratio_at_rank\n";
    for (Index i = 0; i < P; ++i) {
      const auto k = static_cast<Index>(rank_of[i]);
      out << fmt::format("{},\"{}\",{:.17g},{},{:.17g}\n", i, layout.name_of(i), r.sensitivity[i], k + 1, r.cumulative_ratio[k]);
    }
  });
  files.push_back(dir / "sensitivity.json");
  atomic_write_text(files.back(), sensitivity_summary(r, layout, taus).dump(2) + "\n");
  if (figure_format == "none") return files;

  // Histogram to the 99th percentile (Figs. 6a, 9a) and cumulative variance captured (Figs. 2, 6b, 9b).
  plot::Figure fig(1, 2);
  const double cut = percentile99(r.sensitivity);
  std::vector<double> shown;
  for (Index i = 0; i < P; ++i)
    if (r.sensitivity[i] <= cut) shown.push_back(r.sensitivity[i]);
  fig.panel(0, 0)
      .title(fmt::format("S_i^2 histogram ({} of {} parameters, up to the 99th percentile)", shown.size(), P))
      .x_label("S_i^2")
      .y_label("count")
      .histogram(Eigen::Map<const Vec>(shown.data(), static_cast<Index>(shown.size())), 40, "", {});
  Vec n(P);
  for (Index k = 0; k < P; ++k) n[k] = static_cast<double>(k + 1);
  auto& cum = fig.panel(0, 1);
  cum.title("variance captured by the n most sensitive parameters")
      .x_label("number of parameters n")
      .y_label("sum of top-n S^2 / sum of all S^2")
      .y_range(0.0, 1.02)
      .line(n, r.cumulative_ratio, "ratio (eq. 18)");
  for (double tau : {0.9, 0.5}) {
    const Index kept = r.num_kept(tau);
    Vec x(2), y(2);
    x << static_cast<double>(kept), static_cast<double>(kept);
    y << 0.0, tau;
    cum.line(x, y, fmt::format("tau = {}: N-hat = {}", tau, kept));
  }
  files.push_back(dir / ("sensitivity." + figure_format));
  fig.save(files.back());

  // Per-layer matrices (Fig. B.14): a weight block [out, in] with its following bias as one more column.
  struct LayerMatrix {
    std::string name;
    Mat values;
  };
  std::vector<LayerMatrix> layers;
  const double floor = r.total > 0 ? r.sensitivity.maxCoeff() * 1e-12 : 1e-300;
  const auto& blocks = layout.blocks();
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto& w = blocks[b];
    if (w.offset + w.size() > P) break;
    const bool has_bias = b + 1 < blocks.size() && blocks[b + 1].rows == w.rows && blocks[b + 1].cols == 1 &&
                          blocks[b + 1].name.ends_with("bias") && w.name.ends_with("weight");
    if (!w.name.ends_with("weight")) {
      if (w.name.ends_with("bias") && b > 0 && blocks[b - 1].name.ends_with("weight")) continue;  // drawn with its weight
    }
    Mat m(w.rows, w.cols + (has_bias ? 1 : 0));
    for (Index i = 0; i < w.rows; ++i) {
      for (Index j = 0; j < w.cols; ++j) m(i, j) = std::log10(std::max(r.sensitivity[w.offset + i * w.cols + j], floor));
      if (has_bias) m(i, w.cols) = std::log10(std::max(r.sensitivity[blocks[b + 1].offset + i], floor));
    }
    std::string name = w.name.substr(0, w.name.size() - (w.name.ends_with(".weight") ? 7 : 0)) + (has_bias ? " [W | b]" : "");
    // A single output row (e.g. the last layer) reads better as a column.
    if (m.rows() < 3 && m.cols() > 3 * m.rows()) {
      m.transposeInPlace();
      name += " (transposed)";
    }
    layers.push_back({name, m});
  }
  if (!layers.empty()) {
    const int count = static_cast<int>(layers.size());
    const int cols = std::min(count, count > 8 ? (count + 1) / 2 : 4);
    const int rows = (count + cols - 1) / cols;
    plot::Figure lf(rows, cols);
    lf.title("log10 S_i^2 per layer (rows: outputs, columns: inputs then bias)");
    for (int k = 0; k < count; ++k) lf.panel(k / cols, k % cols).title(layers[static_cast<std::size_t>(k)].name).heatmap(layers[static_cast<std::size_t>(k)].values, "log10 S^2");
    files.push_back(dir / ("sensitivity_layers." + figure_format));
    lf.save(files.back(), std::min(20000, 380 * cols), std::min(20000, 340 * rows + 60));
  }
  return files;
}

}  // namespace uqnn
