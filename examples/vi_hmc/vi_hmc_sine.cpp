// Seed 000 section 4.1: VI, full HMC and VI-HMC on the sine cases.
//   Case I  (4.1.1): the 1-2-1 sine network of eq. 21 (6 parameters), Table 1 data, sigma_d = 1e-3.
//   Case II (4.1.2): a 1-10-10-1 tanh network (141 parameters), sigma_d = 0.05.
// Writes into OUT (default vi-hmc-sine/): caseI/ and caseII/ sensitivity reports and figures,
// caseI/parameters.png (Fig. 4's joint of phi2 and a), caseII/bands.png (Fig. 7), results.md.
// Usage: vi_hmc_sine [OUT] [--quick]   (--quick: short chains, for a smoke run)
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <numbers>

#include "common.hpp"
#include "sine_network.hpp"
#include "uqnn/data/synthetic.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/plot/sensitivity_report.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/plot/plots.hpp"

using namespace uqnn;
using namespace uqnn::examples;

namespace {

struct Moments {
  Vec mean, sd;
};
Moments moments(const std::vector<Vec>& draws) {
  const Index K = draws.front().size();
  Moments m{Vec::Zero(K), Vec::Zero(K)};
  for (const auto& d : draws) m.mean += d;
  m.mean /= static_cast<double>(draws.size());
  for (const auto& d : draws) m.sd += (d - m.mean).cwiseAbs2();
  m.sd = (m.sd / static_cast<double>(draws.size() - 1)).cwiseSqrt();
  return m;
}

Mat grid_1d(double lo, double hi, Index n) {
  Mat g(1, n);
  for (Index i = 0; i < n; ++i) g(0, i) = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1);
  return g;
}

/// Mean of the function-space sd over grid points in a region.
double mean_sd_where(const Mat& F, const Mat& grid, const std::function<bool(double)>& in) {
  double sum = 0;
  int n = 0;
  for (Index j = 0; j < grid.cols(); ++j)
    if (in(grid(0, j))) {
      const auto col = F.col(j).array();
      sum += std::sqrt((col - col.mean()).square().sum() / static_cast<double>(F.rows() - 1));
      ++n;
    }
  return sum / n;
}
double mean_sd_at(const Model& model, const std::vector<Vec>& draws, const Mat& X) {
  const Mat F = function_draws(model, draws, X);
  return mean_sd_where(F, X, [](double) { return true; });
}

plot::Predictive1d predictive(const std::string& title, const Model& model, const std::vector<Vec>& draws, const Mat& grid,
                              const Dataset& data, double (*truth)(double)) {
  plot::Predictive1d p;
  p.title = title;
  const Mat F = function_draws(model, draws, grid);
  p.x_train = data.inputs.row(0).transpose();
  p.y_train = data.targets.row(0).transpose();
  p.x_grid = grid.row(0).transpose();
  p.mean = F.colwise().mean().transpose();
  p.sd = ((F.rowwise() - F.colwise().mean()).array().square().colwise().sum() / static_cast<double>(F.rows() - 1)).sqrt().transpose();
  Vec t(grid.cols());
  for (Index j = 0; j < grid.cols(); ++j) t[j] = truth(grid(0, j));
  p.truth = t;
  p.sample_paths = F.topRows(std::min<Index>(20, F.rows()));
  return p;
}

double max_rhat(const RunResult& r) {
  double worst = 0;
  for (Index i = 0; i < r.dim(); ++i) worst = std::max(worst, diagnostics::rhat(r.coordinate(i)));
  return worst;
}

/// Bayes by Backprop started at the MAP, with Table C.4's N(0, 1) prior (Adam, learning rate 1e-3).
ViResult vi_from_map(const Posterior& post, const Vec& map, Index epochs, Rng& vi_rng) {
  ViParams vp;
  vp.epochs = epochs;
  vp.learning_rate = 1e-3;
  vp.initial_mean = map;
  return fit_bayes_by_backprop(post, *GaussianPrior::isotropic(map.size(), 1.0), vp, vi_rng);
}

/// 4 chains x (2000 burn-in + 3000 draws), or 200 + 300 with --quick.
RunConfig sampling_run(bool quick, std::uint64_t seed) {
  RunConfig run;
  run.num_chains = 4;
  run.num_warmup = quick ? 200 : 2000;
  run.num_draws = quick ? 300 : 3000;
  run.seed = seed;
  return run;
}

// ------------------------------------------------------------------ case I
std::string case_one(const std::filesystem::path& out, bool quick) {
  std::filesystem::create_directories(out);
  const Dataset data = sine_case_i(20, 1e-3);
  auto model = std::make_shared<SineNetwork>();
  // Table C.4: prior N(0, 1), likelihood sd 1e-3.
  auto post = std::make_shared<Posterior>(model, make_gaussian_likelihood(1e-3), GaussianPrior::isotropic(6, 1.0), data.inputs, data.targets);
  const auto t0 = std::chrono::steady_clock::now();
  const Vec map = map_fit(post, 20, 3000, 0.01, 1);
  Rng vi_rng(2, 0);
  const ViResult vi = vi_from_map(*post, map, quick ? 3000 : 20000, vi_rng);
  const Vec vi_sd = vi.approximation->sd();
  const double vi_seconds = seconds_since(t0);

  const SensitivityReport report = compute_sensitivities(*model, vi.mu, vi_sd, data.inputs);
  write_sensitivity_report(out, report, model->layout());

  const RunConfig run = sampling_run(quick, 3);
  const auto t1 = std::chrono::steady_clock::now();
  const FullHmc hmc = full_hmc(post, map, vi_sd.maxCoeff(), 0.0, run);  // Appendix C: max VI spread for case I
  const double hmc_seconds = seconds_since(t1);
  ViHmcParams p;
  p.tau = 0.9;  // the rest: step size found for 0.8, L = pi max(sd_s) / (2 eps)
  const auto t2 = std::chrono::steady_clock::now();
  const ViHmcResult vh = run_vi_hmc(post, vi.mu, vi_sd, report, p, run);
  const double vh_seconds = seconds_since(t2);

  const std::vector<Vec> vi_draws = vi.approximation->sample(vi_rng, 4000), hmc_draws = draws_of(hmc.run), vh_draws = vh.full_draws();
  const Moments mv = moments(vi_draws), mh = moments(hmc_draws), mvh = moments(vh_draws);
  const std::vector<std::string> names{"w1", "w2", "phi1", "phi2", "a", "b"};
  std::string table = "| method | w1 | w2 | phi1 | phi2 | a | b |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  table += "| true | 4 | -3 | 0 | 1.57 | 0.4 | 0.5 |\n";
  const auto row = [&](const std::string& name, const Moments& m, const IndexVec* sampled) {
    std::string r = "| " + name + " |";
    for (Index i = 0; i < 6; ++i) {
      const bool fixed = sampled && std::find(sampled->begin(), sampled->end(), i) == sampled->end();
      r += fixed ? fmt::format(" {:.3f} (fixed) |", m.mean[i]) : fmt::format(" {:.3f} ± {:.2g} |", m.mean[i], m.sd[i]);
    }
    return r + "\n";
  };
  table += row("VI", mv, nullptr) + row("HMC", mh, nullptr) + row("VI-HMC (tau 0.9)", mvh, &vh.active);
  std::string kept;
  for (Index i : vh.active) kept += names[static_cast<std::size_t>(i)] + " ";
  std::string s2;
  for (Index i : report.ranking) s2 += fmt::format("{} {:.3g}, ", names[static_cast<std::size_t>(i)], report.sensitivity[i]);
  // The same ranking at the paper's own VI posterior (Table 1 "VI" means and sds) on our data.
  Vec paper_mu(6), paper_sd(6);
  paper_mu << -4.05, 2.94, -0.072, -1.61, -0.39, -0.48;
  paper_sd << 0.068, 0.059, 0.030, 0.035, 0.019, 0.020;
  const SensitivityReport paper = compute_sensitivities(*model, paper_mu, paper_sd, data.inputs);
  std::string paper_kept, paper_s2;
  for (Index i : paper.sensitive_subset(0.9)) paper_kept += names[static_cast<std::size_t>(i)] + " ";
  for (Index i : paper.ranking) paper_s2 += fmt::format("{} {:.3g}, ", names[static_cast<std::size_t>(i)], paper.sensitivity[i]);
  s2 += fmt::format("\nAt the paper's VI (Table 1 means and sds): {}tau = 0.9 keeps {}", paper_s2, paper_kept);
  s2 += fmt::format("\nsigma_d^2 / N_d = {:.3g}: a converged mean-field VI has sigma_i^-2 ~ sum_j J_ij^2 / sigma_d^2, so every likelihood-dominated S_i^2 tends to this value.",
                    1e-6 / 20.0);
  std::string text = "### Case I (section 4.1.1, Table 1)\n\n" + table +
                     fmt::format("\nS_i^2 ranked: {}\ntau = 0.9 keeps {} of 6: {}(paper: w1, phi2, a, b).\n", s2, vh.num_kept, kept) +
                     fmt::format("HMC: step {:.3g}, L = {}, accept {:.2f}, max R-hat {:.3f}, {:.1f} s. VI-HMC: step {:.3g}, L = {}, accept {:.2f}, max R-hat {:.3f}, {:.1f} s. VI {:.1f} s.\n",
                                 hmc.step_size, hmc.num_leapfrog_steps, mean_accept(hmc.run), max_rhat(hmc.run), hmc_seconds, vh.step_size,
                                 vh.num_leapfrog_steps, mean_accept(vh.run), max_rhat(vh.run), vh_seconds, vi_seconds);

  // Fig. 4: joint of (phi2, a) for VI, VI-HMC, HMC.
  plot::Figure fig(1, 3);
  const auto joint = [&](int col, const std::string& title, const std::vector<Vec>& d) {
    const Index n = std::min<Index>(1500, static_cast<Index>(d.size()));
    Vec x(n), y(n);
    for (Index k = 0; k < n; ++k) {
      x[k] = d[static_cast<std::size_t>(k * static_cast<Index>(d.size()) / n)][3];
      y[k] = d[static_cast<std::size_t>(k * static_cast<Index>(d.size()) / n)][4];
    }
    fig.panel(0, col).title(title).x_label("phi2").y_label("a").points(x, y);
  };
  joint(0, "VI", vi_draws);
  joint(1, "VI-HMC", vh_draws);
  joint(2, "HMC", hmc_draws);
  fig.title("Case I: joint of (phi2, a) (Thiagarajan et al. 2025, Fig. 4)");
  fig.save(out / "parameters.png");
  const Mat grid = grid_1d(-1.2, 1.2, 200);
  plot::plot_side_by_side(out / "bands.png",
                          {predictive("VI", *model, vi_draws, grid, data, &sine_case_i_truth),
                           predictive("HMC", *model, hmc_draws, grid, data, &sine_case_i_truth),
                           predictive("VI-HMC", *model, vh_draws, grid, data, &sine_case_i_truth)},
                          {"Case I predictive (Thiagarajan et al. 2025, Fig. 3)"});
  return text;
}

// ------------------------------------------------------------------ case II
std::string case_two(const std::filesystem::path& out, bool quick) {
  std::filesystem::create_directories(out);
  const Dataset data = sine_case_ii(20, 0.05);
  auto model = std::make_shared<Mlp>(MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot});
  auto post = std::make_shared<Posterior>(model, make_gaussian_likelihood(0.05), GaussianPrior::isotropic(141, 1.0), data.inputs, data.targets);
  const auto t0 = std::chrono::steady_clock::now();
  const Vec map = map_fit(post, 10, 5000, 0.01, 11);
  Rng vi_rng(12, 0);
  const ViResult vi = vi_from_map(*post, map, quick ? 5000 : 30000, vi_rng);
  const Vec vi_sd = vi.approximation->sd();
  const double vi_seconds = seconds_since(t0);
  const SensitivityReport report = compute_sensitivities(*model, vi.mu, vi_sd, data.inputs);
  write_sensitivity_report(out, report, model->layout());

  const RunConfig run = sampling_run(quick, 13);
  Vec sorted = vi_sd;
  std::sort(sorted.data(), sorted.data() + sorted.size());
  const double median_sd = sorted[70];  // 141 values
  const auto t1 = std::chrono::steady_clock::now();
  const FullHmc hmc = full_hmc(post, map, median_sd, 0.0, run, 0.0);  // Appendix C: median VI spread for case II
  const double hmc_seconds = seconds_since(t1);
  ViHmcParams p;
  p.tau = 0.9;
  p.spread_statistic = SpreadStatistic::Median;
  p.init_spread = 1.0;  // chains around the VI means
  const auto t2 = std::chrono::steady_clock::now();
  const ViHmcResult vh = run_vi_hmc(post, vi.mu, vi_sd, report, p, run);
  const double vh_seconds = seconds_since(t2);
  ViHmcParams pr = p;
  pr.subset = SubsetRule::Random;
  pr.subset_seed = 14;
  const ViHmcResult random = run_vi_hmc(post, vi.mu, vi_sd, report, pr, run);

  const std::vector<Vec> vi_draws = vi.approximation->sample(vi_rng, 4000), hmc_draws = draws_of(hmc.run),
                         vh_draws = vh.full_draws(), random_draws = random.full_draws();
  const Mat grid = grid_1d(-1.2, 1.2, 241);
  const auto at_data = [&](const std::vector<Vec>& d) { return mean_sd_at(*model, d, data.inputs); };
  const auto region = [&](const std::vector<Vec>& d, const std::function<bool(double)>& in) {
    return mean_sd_where(function_draws(*model, d, grid), grid, in);
  };
  const auto gap = [](double x) { return std::abs(x) < 0.2; };
  const auto beyond = [](double x) { return std::abs(x) > 1.0; };
  const auto rmse = [&](const std::vector<Vec>& d) {
    const Mat F = function_draws(*model, d, grid);
    const Vec m = F.colwise().mean().transpose();
    double s = 0;
    for (Index j = 0; j < grid.cols(); ++j) s += std::pow(m[j] - sine_case_ii_truth(grid(0, j)), 2);
    return std::sqrt(s / static_cast<double>(grid.cols()));
  };
  std::string table = "| method | sampled | sd of f at the 20 data x | sd in the gap abs(x) < 0.2 | sd beyond abs(x) > 1 | RMSE of mean vs truth on [-1.2, 1.2] | step | L | accept | max R-hat | seconds |\n"
                      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  const auto row = [&](const std::string& name, const std::vector<Vec>& d, Index sampled, double step, int L, double acc, double rh, double sec) {
    return fmt::format("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {} | {} | {} | {} | {:.1f} |\n", name, sampled, at_data(d), region(d, gap),
                       region(d, beyond), rmse(d), step > 0 ? fmt::format("{:.3g}", step) : "-", L > 0 ? std::to_string(L) : "-",
                       acc > 0 ? fmt::format("{:.2f}", acc) : "-", rh > 0 ? fmt::format("{:.3f}", rh) : "-", sec);
  };
  table += row("VI", vi_draws, 141, 0, 0, 0, 0, vi_seconds);
  table += row("HMC (full)", hmc_draws, 141, hmc.step_size, hmc.num_leapfrog_steps, mean_accept(hmc.run), max_rhat(hmc.run), hmc_seconds);
  table += row("VI-HMC tau 0.9", vh_draws, vh.num_kept, vh.step_size, vh.num_leapfrog_steps, mean_accept(vh.run), max_rhat(vh.run), vh_seconds);
  table += row("random subset, same size", random_draws, random.num_kept, random.step_size, random.num_leapfrog_steps, mean_accept(random.run),
               max_rhat(random.run), 0);
  std::string text = "### Case II (section 4.1.2, Fig. 7)\n\n" + table +
                     fmt::format("\ntau = 0.9 keeps {} of 141 parameters (paper: 79); tau 0.75: {}, 0.5: {}, 0.3: {}.\n", vh.num_kept,
                                 report.num_kept(0.75), report.num_kept(0.5), report.num_kept(0.3));
  plot::plot_side_by_side(out / "bands.png",
                          {predictive("VI", *model, vi_draws, grid, data, &sine_case_ii_truth),
                           predictive("HMC (full, 141)", *model, hmc_draws, grid, data, &sine_case_ii_truth),
                           predictive(fmt::format("VI-HMC (tau 0.9, {} sampled)", vh.num_kept), *model, vh_draws, grid, data, &sine_case_ii_truth),
                           predictive(fmt::format("random {} sampled (control)", random.num_kept), *model, random_draws, grid, data,
                                      &sine_case_ii_truth)},
                          {"Case II predictive, +-1 and 2 sd of f (Thiagarajan et al. 2025, Fig. 7)", 2});
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path out = "vi-hmc-sine";
  bool quick = false;
  CLI::App app("vi_hmc_sine: the sine cases I and II of Thiagarajan et al. 2025 (section 4.1), VI, HMC and VI-HMC");
  app.add_option("out", out, "output directory")->capture_default_str();
  app.add_flag("--quick", quick, "a short run (minutes) instead of the paper's settings");
  CLI11_PARSE(app, argc, argv);
  try {
    std::string text = "## VI-HMC sine cases (Thiagarajan et al. 2025, section 4.1)" +
                       std::string(quick ? " -- QUICK RUN" : "") + "\n\n";
    text += case_one(out / "caseI", quick) + "\n";
    std::cout << text << std::flush;
    const std::string two = case_two(out / "caseII", quick);
    std::cout << two;
    write_text(out / "results.md", text + two);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
