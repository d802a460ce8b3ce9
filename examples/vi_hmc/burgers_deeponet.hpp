#pragma once
// Seed 000 section 4.2.1 and Appendix E: a Bayesian DeepONet (Table A.3) learns the solution
// operator u -> s of viscous Burgers (nu = 0.01, periodic on (0, 1)); VI, then VI-HMC at several tau.
// Used by examples/vi_hmc/vi_hmc_burgers.cpp (full configuration) and by
// tests/unit/hybrid/burgers_reproduction_test.cpp (reduced configuration).
//
// Data: initial conditions from a periodic Gaussian random field with covariance operator
// 625 (-Laplacian + 25 I)^-2 on (0, 1) (sample_periodic_grf defaults: O(1) amplitudes), solved by
// solve_burgers on 500 points with dt = 5e-4 and recorded on the paper's 101 x 101 grid. Branch
// input: u at the 101 grid points. Trunk input: 5 features of (x, t) = (t, sin 2 pi x, cos 2 pi x,
// sin 4 pi x, cos 4 pi x), periodic in x (Table A.3 has 5 trunk inputs; the paper does not list them).
#include <fmt/format.h>

#include <ctime>
#include <numbers>

#include "common.hpp"
#include "uqnn/data/burgers.hpp"
#include "uqnn/hybrid/sensitivity_report.hpp"
#include "uqnn/nn/deeponet.hpp"
#include "uqnn/plot/figure.hpp"

namespace uqnn::examples {

struct BurgersConfig {
  Index num_train = 200, num_test = 100;  ///< paper: 1000 / 1000
  Index train_stride = 4;                 ///< training grid: every k-th x and t of 101 (paper: 1)
  Index test_stride = 2;                  ///< test grid for the relative L2 error
  Index hidden_layers = 8, width = 100;   ///< Table A.3: width 100, depth 9 (8 hidden + the latent layer)
  double prior_sd = 0.1, noise_sd = 1.0;  ///< Table C.4: prior variance 0.1^2, likelihood variance 1
  Index map_epochs = 1500, vi_epochs = 1500;
  double map_lr = 1e-3, vi_lr = 1e-3;
  Index sensitivity_pairs = 256;          ///< (u, (x, t)) pairs for eq. 17
  std::vector<double> taus{0.9, 0.75, 0.5, 0.3};
  double fixed_step_size = 2e-4;          ///< Tables 2 and E.5
  long fixed_step_warmup = 5, fixed_step_draws = 15;  ///< per tau, one chain
  int find_step_iterations = 100;         ///< dual averaging toward 80% acceptance, L = 10
  int max_leapfrog_steps = 100;          ///< cap of L = pi max(sd) / (2 eps) (cost)
  Index predictive_draws = 20;            ///< VI-HMC draws used for predictions
  std::uint64_t seed = 0;
  bool figures = true;
};

struct BurgersTauRow {
  double tau = 0;
  Index num_kept = 0;
  int num_leapfrog_steps = 0;
  double accept_fixed = 0, seconds_per_sample = 0, seconds_per_gradient = 0;
  double step_for_80 = 0, accept_found = 0;
  double relative_l2 = 0;
};

struct BurgersReport {
  Index num_params = 0;
  double vi_relative_l2 = 0, map_relative_l2 = 0, vi_seconds = 0;
  std::vector<BurgersTauRow> rows;
  std::string table;
};

/// Grid features of the trunk for points (x_i, t_j), i, j multiples of `stride` on the 101 grid,
/// x-major; `index` receives the row of each point in the 101 x 101 solution (i * 101 + j... as
/// solution(i, j) of solve_burgers).
inline Mat burgers_features(Index stride, std::vector<std::pair<Index, Index>>* index = nullptr) {
  std::vector<std::pair<Index, Index>> points;
  for (Index i = 0; i <= 100; i += stride)
    for (Index j = 0; j <= 100; j += stride) points.emplace_back(i, j);
  Mat f(5, static_cast<Index>(points.size()));
  for (std::size_t k = 0; k < points.size(); ++k) {
    const double x = points[k].first / 100.0, t = points[k].second / 100.0, w = 2 * std::numbers::pi * x;
    f.col(static_cast<Index>(k)) << t, std::sin(w), std::cos(w), std::sin(2 * w), std::cos(2 * w);
  }
  if (index) *index = points;
  return f;
}

struct BurgersData {
  Mat u;                      ///< [101, functions]: initial conditions at the grid points
  std::vector<Mat> solution;  ///< per function [101 x, 101 t]
};

inline BurgersData make_burgers_data(Index functions, std::uint64_t seed) {
  BurgersData d;
  BurgersParams p;
  d.u.resize(101, functions);
  for (Index f = 0; f < functions; ++f) {
    Rng rng(seed, static_cast<std::uint64_t>(f));
    const Vec u0 = sample_periodic_grf(p.num_points, rng);
    d.solution.push_back(solve_burgers(u0, p));
    d.u.col(f) = d.solution.back().col(0);
  }
  return d;
}

/// Targets [points, functions] of the grid given by `index`.
inline Mat burgers_targets(const BurgersData& d, const std::vector<std::pair<Index, Index>>& index) {
  Mat y(static_cast<Index>(index.size()), d.u.cols());
  for (Index f = 0; f < d.u.cols(); ++f)
    for (std::size_t k = 0; k < index.size(); ++k) y(static_cast<Index>(k), f) = d.solution[static_cast<std::size_t>(f)](index[k].first, index[k].second);
  return y;
}

/// Mean over functions of ||Y - Y_p|| / ||Y|| (seed 000 section 4.2.1), and per function.
inline double relative_l2(const Mat& truth, const Mat& prediction, Vec* per_function = nullptr) {
  Vec e(truth.cols());
  for (Index f = 0; f < truth.cols(); ++f) e[f] = (truth.col(f) - prediction.col(f)).norm() / truth.col(f).norm();
  if (per_function) *per_function = e;
  return e.mean();
}

inline BurgersReport run_burgers_reproduction(const BurgersConfig& cfg, const std::filesystem::path& out,
                                              const std::function<void(const std::string&)>& log = {}) {
  const auto say = [&](const std::string& m) {
    if (log) log(m);
  };
  BurgersReport report;
  std::filesystem::create_directories(out);
  const BurgersData train = make_burgers_data(cfg.num_train, cfg.seed);
  const BurgersData test = make_burgers_data(cfg.num_test, cfg.seed + 1);
  std::vector<std::pair<Index, Index>> train_index, test_index;
  const Mat train_grid = burgers_features(cfg.train_stride, &train_index), test_grid = burgers_features(cfg.test_stride, &test_index);
  DeepOnetSpec spec;
  spec.branch_input = 101;
  spec.trunk_input = 5;
  spec.branch_hidden = std::vector<Index>(static_cast<std::size_t>(cfg.hidden_layers), cfg.width);
  spec.trunk_hidden = spec.branch_hidden;
  spec.latent = cfg.width;
  const DeepOnet pairs(spec);
  auto net = std::make_shared<DeepOnet>(pairs.with_query_grid(train_grid));
  const DeepOnet test_net = pairs.with_query_grid(test_grid);
  report.num_params = net->num_params();
  auto post = std::make_shared<Posterior>(net, make_gaussian_likelihood(cfg.noise_sd),
                                          GaussianPrior::isotropic(net->num_params(), cfg.prior_sd), train.u, burgers_targets(train, train_index));
  const Mat test_y = burgers_targets(test, test_index);
  say(fmt::format("burgers: {} parameters, {} x {} training values", net->num_params(), train_grid.cols(), cfg.num_train));

  // MAP pre-training, then VI from the MAP (small initial sigma).
  const auto t0 = std::chrono::steady_clock::now();
  const Vec map = map_fit(post, 1, cfg.map_epochs, cfg.map_lr, cfg.seed + 7);
  report.map_relative_l2 = relative_l2(test_y, test_net.forward(map, test.u));
  ViParams vp;
  vp.epochs = cfg.vi_epochs;
  vp.learning_rate = cfg.vi_lr;
  vp.initial_mean = map;
  vp.rho_init_lower = -7;
  vp.rho_init_upper = -6;
  Rng vi_rng(cfg.seed + 8, 0);
  const ViResult vi = fit_bayes_by_backprop(*post, *GaussianPrior::isotropic(net->num_params(), cfg.prior_sd), vp, vi_rng);
  const Vec vi_sd = vi.approximation->sd();
  report.vi_seconds = seconds_since(t0);
  {
    Mat mean = Mat::Zero(test_y.rows(), test_y.cols());
    for (const Vec& th : vi.approximation->sample(vi_rng, cfg.predictive_draws)) mean += test_net.forward(th, test.u);
    report.vi_relative_l2 = relative_l2(test_y, mean / static_cast<double>(cfg.predictive_draws));
  }
  say(fmt::format("burgers: MAP rel L2 {:.4f}, VI rel L2 {:.4f} ({:.0f} s)", report.map_relative_l2, report.vi_relative_l2, report.vi_seconds));

  // Sensitivities (eq. 17) over random (u, (x, t)) pairs of the training data, pairs mode.
  Mat XY(106, cfg.sensitivity_pairs);
  Rng pick(cfg.seed + 9, 0);
  for (Index k = 0; k < cfg.sensitivity_pairs; ++k) {
    XY.col(k).head(101) = train.u.col(static_cast<Index>(pick.uniform_index(static_cast<std::uint64_t>(cfg.num_train))));
    XY.col(k).tail(5) = train_grid.col(static_cast<Index>(pick.uniform_index(static_cast<std::uint64_t>(train_grid.cols()))));
  }
  const SensitivityReport sens = compute_sensitivities(pairs, vi.mu, vi_sd, XY, 16);
  if (cfg.figures) write_sensitivity_report(out, sens, net->layout());

  std::vector<Vec> vh_best_draws;
  for (double tau : cfg.taus) {
    BurgersTauRow row;
    row.tau = tau;
    ViHmcParams p;
    p.tau = tau;
    p.step_size = cfg.fixed_step_size;
    p.spread_statistic = SpreadStatistic::Max;            // Appendix C: max for Burgers
    // The sd (our default): with this short VI the variance rule gives L = 1 (max sd ~ 1e-3).
    p.spread_measure = SpreadMeasure::StandardDeviation;
    p.max_leapfrog_steps = cfg.max_leapfrog_steps;
    RunConfig run;
    run.num_chains = 1;
    run.num_warmup = cfg.fixed_step_warmup;
    run.num_draws = cfg.fixed_step_draws;
    run.seed = cfg.seed + 10;
    // Process CPU time: wall time means little on a shared machine.
    const std::clock_t cpu_start = std::clock();
    const ViHmcResult r = run_vi_hmc(post, vi.mu, vi_sd, sens, p, run);
    const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    row.num_kept = r.num_kept;
    row.num_leapfrog_steps = r.num_leapfrog_steps;
    row.accept_fixed = mean_accept(r.run);
    const double iterations = static_cast<double>(run.num_warmup + run.num_draws);
    long gradients = 0;
    for (const auto& chain : r.run.warmup_stats)
      for (const auto& st : chain) gradients += st.n_leapfrog;
    for (const auto& chain : r.run.stats)
      for (const auto& st : chain) gradients += st.n_leapfrog;
    row.seconds_per_sample = cpu_seconds / iterations;  // includes the sensitivity-subset view and one start gradient
    row.seconds_per_gradient = cpu_seconds / static_cast<double>(std::max<long>(1, gradients));
    const std::vector<Vec> draws = r.full_draws();
    Mat mean = Mat::Zero(test_y.rows(), test_y.cols());
    const Index used = std::min<Index>(cfg.predictive_draws, static_cast<Index>(draws.size()));
    for (Index k = 0; k < used; ++k) mean += test_net.forward(draws[draws.size() - 1 - static_cast<std::size_t>(k)], test.u);
    row.relative_l2 = relative_l2(test_y, mean / static_cast<double>(used));
    if (tau == cfg.taus.front()) vh_best_draws = draws;
    // Step size for 80% acceptance (Table 2 column 4): dual averaging with L = 10 from the VI means.
    FindStepSizeOptions o;
    o.num_iterations = cfg.find_step_iterations;
    o.seed = cfg.seed + 11;
    const FindStepSizeResult found = find_step_size(*r.view, r.view->restrict(vi.mu), 0.8, o);
    row.step_for_80 = found.step_size;
    row.accept_found = found.mean_accept_stat;
    say(fmt::format("burgers tau {}: {} sampled, L {}, accept {:.2f} at eps {}, {:.2f} s/sample, eps(80%) {:.3g}, rel L2 {:.4f}", tau,
                    row.num_kept, row.num_leapfrog_steps, row.accept_fixed, cfg.fixed_step_size, row.seconds_per_sample, row.step_for_80,
                    row.relative_l2));
    report.rows.push_back(row);
  }

  report.table = fmt::format(
      "| tau | sampled (of {}) | L (pi max sd / 2 eps, capped) | acceptance at eps = {} | CPU s / sample | CPU ms / gradient | eps for 80% acceptance | rel. L2 of the mean |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
      report.num_params, cfg.fixed_step_size);
  for (const auto& r : report.rows)
    report.table += fmt::format("| {} | {} | {} | {:.0f}% | {:.2f} | {:.1f} | {:.2g} | {:.2f}% |\n", r.tau, r.num_kept, r.num_leapfrog_steps,
                                100 * r.accept_fixed, r.seconds_per_sample, 1e3 * r.seconds_per_gradient, r.step_for_80, 100 * r.relative_l2);
  report.table += fmt::format("| VI | - | - | - | - | - | - | {:.2f}% |\n| MAP (pre-training) | - | - | - | - | - | - | {:.2f}% |\n",
                              100 * report.vi_relative_l2, 100 * report.map_relative_l2);

  if (cfg.figures) {
    // Fig. 10: best and worst test functions (by the VI mean's error) at t = 1, VI and VI-HMC bands.
    const auto draws_at_t1 = [&](const std::vector<Vec>& draws, Index f) {
      Mat g(5, 101);
      for (Index i = 0; i <= 100; ++i) {
        const double w = 2 * std::numbers::pi * i / 100.0;
        g.col(i) << 1.0, std::sin(w), std::cos(w), std::sin(2 * w), std::cos(2 * w);
      }
      const DeepOnet at_t1 = pairs.with_query_grid(g);
      Mat F(static_cast<Index>(draws.size()), 101);
      for (std::size_t k = 0; k < draws.size(); ++k) F.row(static_cast<Index>(k)) = at_t1.forward(draws[k], test.u.col(f)).transpose();
      return F;
    };
    const std::vector<Vec> vi_draws = vi.approximation->sample(vi_rng, cfg.predictive_draws);
    std::vector<Vec> vh_draws(vh_best_draws.end() - std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(cfg.predictive_draws), static_cast<std::ptrdiff_t>(vh_best_draws.size())),
                              vh_best_draws.end());
    Mat vi_mean = Mat::Zero(test_y.rows(), test_y.cols()), vh_mean = vi_mean;
    for (const Vec& th : vi_draws) vi_mean += test_net.forward(th, test.u) / static_cast<double>(vi_draws.size());
    for (const Vec& th : vh_draws) vh_mean += test_net.forward(th, test.u) / static_cast<double>(vh_draws.size());
    Vec e_vi, e_vh;
    relative_l2(test_y, vi_mean, &e_vi);
    relative_l2(test_y, vh_mean, &e_vh);
    Index best_vi, worst_vi, best_vh, worst_vh;
    e_vi.minCoeff(&best_vi);
    e_vi.maxCoeff(&worst_vi);
    e_vh.minCoeff(&best_vh);
    e_vh.maxCoeff(&worst_vh);
    plot::Figure fig(2, 2);
    Vec x(101);
    for (Index i = 0; i <= 100; ++i) x[i] = i / 100.0;
    const auto panel = [&](int r, int c, const std::string& title, const std::vector<Vec>& draws, Index f, double err) {
      const Mat F = draws_at_t1(draws, f);
      const Vec m = F.colwise().mean().transpose();
      const Vec sd = ((F.rowwise() - F.colwise().mean()).array().square().colwise().sum() / std::max<double>(1, F.rows() - 1)).sqrt().transpose();
      auto& p = fig.panel(r, c);
      p.title(fmt::format("{}: test function {} (rel. L2 {:.2f}%)", title, f, 100 * err)).x_label("x").y_label("s(x, t = 1)");
      p.band(x, m - 2 * sd, m + 2 * sd, "mean +- 2 sd");
      p.line(x, m, "mean prediction");
      p.line(x, test.solution[static_cast<std::size_t>(f)].col(100), "true solution", plot::Style{.dash = plot::Dash::Dashed});
      p.line(x, test.u.col(f), "initial condition");
    };
    panel(0, 0, "VI, best", vi_draws, best_vi, e_vi[best_vi]);
    panel(0, 1, fmt::format("VI-HMC tau {}, best", cfg.taus.front()), vh_draws, best_vh, e_vh[best_vh]);
    panel(1, 0, "VI, worst", vi_draws, worst_vi, e_vi[worst_vi]);
    panel(1, 1, fmt::format("VI-HMC tau {}, worst", cfg.taus.front()), vh_draws, worst_vh, e_vh[worst_vh]);
    fig.title("Burgers DeepONet at t = 1 (seed 000 Fig. 10)");
    fig.save(out / "best_worst.png");
  }
  return report;
}

}  // namespace uqnn::examples
