#pragma once
// Seed 000 section 4.2.1 and Appendix E: a Bayesian DeepONet (Table A.3) learns the solution
// operator u -> s of viscous Burgers (nu = 0.01, periodic on (0, 1)); VI, then VI-HMC at several tau.
// Used by examples/vi_hmc/vi_hmc_burgers.cpp (full configuration) and by
// tests/unit/hybrid/burgers_reproduction_test.cpp (reduced configuration).
//
// Data: initial conditions from a periodic Gaussian random field with covariance operator
// 625 (-Laplacian + 25 I)^-2 on (0, 1) (sample_periodic_grf defaults) with its constant (m = 0) mode
// removed, as the GRF code of the FNO / DeepONet Burgers benchmark [62] does (mean zero, sd ~0.58;
// Burgers conserves the mean, so a random mean would only shift and advect every solution), solved by
// solve_burgers on 500 points with dt = 5e-4 and recorded on the paper's 101 x 101 grid. Branch
// input: u at the 101 grid points. Trunk input: 5 features of (x, t) = (t, sin 2 pi x, cos 2 pi x,
// sin 4 pi x, cos 4 pi x), periodic in x (Table A.3 has 5 trunk inputs; the paper does not list them).
#include <fmt/format.h>

#include <ctime>
#include <mutex>
#include <optional>
#include <numbers>

#include "common.hpp"
#include "uqnn/data/burgers.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"
#include "uqnn/plot/sensitivity_report.hpp"
#include "uqnn/nn/deeponet.hpp"
#include "uqnn/plot/figure.hpp"

namespace uqnn::examples {

struct BurgersConfig {
  Index num_train = 1000, num_test = 1000;  ///< paper: 1000 / 1000
  Index train_stride = 1;                 ///< grid of the posterior: every k-th x and t of 101 (paper: 1)
  Index test_stride = 1;                  ///< test grid for the relative L2 error (paper: 1)
  Index hidden_layers = 8, width = 100;   ///< Table A.3: width 100, depth 9 (8 hidden + the latent layer)
  double prior_sd = 0.1, noise_sd = 1.0;  ///< Table C.4: prior variance 0.1^2, likelihood variance 1
  /// Training (MAP, then VI from it): Adam on minibatches of `batch_functions` functions x
  /// `batch_points` grid points drawn afresh at every step (an unbiased estimate of the full-grid
  /// likelihood); an epoch is one pass over the functions; the learning rate decays exponentially
  /// from `*_lr` to `*_final_lr` over the epochs (the paper reduces it 10x on plateaus, Fig. 8).
  Index batch_functions = 50, batch_points = 200;
  Index map_epochs = 3000, vi_epochs = 400;
  double map_lr = 1e-3, map_final_lr = 1e-5, vi_lr = 1e-3, vi_final_lr = 1e-5;
  /// When set, the trained MAP / VI parameters are read from / written to this file (reruns skip
  /// training when the file was written with the same data and training settings).
  std::filesystem::path training_cache;
  bool reuse_training = false;  ///< read the cache (it is always written when the path is set)
  Index sensitivity_pairs = 256;          ///< (u, (x, t)) pairs for eq. 17
  std::vector<double> taus{0.9, 0.75, 0.5, 0.3};
  double fixed_step_size = 2e-4;          ///< Tables 2 and E.5
  long fixed_step_warmup = 2, fixed_step_draws = 5;  ///< per tau, one chain (cost: full-data gradients)
  int find_step_iterations = 30;          ///< dual averaging toward 80% acceptance, L = 10
  int max_leapfrog_steps = 50;           ///< cap of L = pi max(sd) / (2 eps) (cost)
  Index predictive_draws = 20;            ///< VI-HMC draws used for predictions
  bool stop_after_training = false;       ///< only MAP, VI and their errors (experiments)
  bool full_space_hmc = true;             ///< also HMC on all parameters (Table 2's HMC row)
  std::uint64_t seed = 0;
  bool figures = true;
};

struct BurgersTauRow {
  double tau = 0;
  Index num_kept = 0;
  int num_leapfrog_steps = 0;
  double accept_fixed = 0, seconds_per_sample = 0, seconds_per_gradient = 0;
  double step_for_80 = 0, accept_found = 0;
  /// eps for 80% from the acceptance a at the fixed step eps0 and HMC's high-dimensional limit
  /// a(eps) = 2 Phi(-K eps^2) (Beskos, Pillai, Roberts, Sanz-Serna, Stuart 2013, "Optimal tuning of the
  /// hybrid Monte Carlo algorithm", Bernoulli 19): eps0 sqrt(Phi^-1(0.4) / Phi^-1(a / 2)). Dual averaging
  /// with the few iterations affordable here has not forgotten its start (biased low).
  double step_for_80_scaling() const {
    if (!(accept_fixed > 0 && accept_fixed < 1)) return std::numeric_limits<double>::quiet_NaN();
    return fixed_step * std::sqrt(diagnostics::inverse_normal_cdf(0.4) / diagnostics::inverse_normal_cdf(accept_fixed / 2));
  }
  double fixed_step = 0;
  double relative_l2 = 0;
};

struct BurgersReport {
  Index num_params = 0;
  double vi_relative_l2 = 0, map_relative_l2 = 0, vi_seconds = 0;
  double map_train_relative_l2 = 0;  ///< on training functions (generalisation gap)
  double map_cpu_seconds = 0, vi_cpu_seconds = 0;  ///< 0 when read from the training cache
  double data_cpu_seconds = 0, vi_max_sd = 0, vi_median_sd = 0;
  std::optional<BurgersTauRow> full_space;  ///< HMC on all parameters (tau = 1 in the row)
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
    Vec u0 = sample_periodic_grf(p.num_points, rng);
    u0.array() -= u0.mean();  // drop the m = 0 mode (see the file comment)
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

/// log p(Y | theta) of the Gaussian likelihood (sd `noise_sd`) of functions `rows` on the grid,
/// estimated from `points` grid points drawn without replacement at each call and scaled by
/// grid size / points (unbiased). Each call costs, in multiply-adds, about
///   forward: 91,000 |rows| (branch) + 81,400 points (trunk) + 100 |rows| points (T^T B)
/// and twice that backward (172,401-parameter Table A.3 network), against 91,000 |rows| +
/// 81,400 * 10,201 + 100 * 10,201 |rows| on the full grid: the trunk on the full grid is what
/// makes full-grid minibatches expensive.
class BurgersMinibatchLikelihood {
 public:
  BurgersMinibatchLikelihood(const DeepOnet& pairs, Mat grid, Mat u, Mat y, double noise_sd, Index points, std::uint64_t seed)
      : pairs_(pairs), grid_(std::move(grid)), u_(std::move(u)), y_(std::move(y)), noise_sd_(noise_sd),
        points_(std::min(points, grid_.cols())), rng_(seed, 0) {}
  Index num_functions() const { return u_.cols(); }
  double operator()(const Vec& theta, const IndexVec& rows, Vec* grad) const {
    IndexVec picked;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const IndexVec order = rng_.permutation(grid_.cols());
      picked.assign(order.begin(), order.begin() + points_);
    }
    Mat sub_grid(grid_.rows(), points_), X(u_.rows(), static_cast<Index>(rows.size())), Y(points_, static_cast<Index>(rows.size()));
    for (Index k = 0; k < points_; ++k) sub_grid.col(k) = grid_.col(picked[static_cast<std::size_t>(k)]);
    for (std::size_t f = 0; f < rows.size(); ++f) {
      X.col(static_cast<Index>(f)) = u_.col(rows[f]);
      for (Index k = 0; k < points_; ++k) Y(k, static_cast<Index>(f)) = y_(picked[static_cast<std::size_t>(k)], rows[f]);
    }
    const double scale = static_cast<double>(grid_.cols()) / static_cast<double>(points_), inv_var = 1.0 / (noise_sd_ * noise_sd_);
    const double log_norm = -0.5 * std::log(2 * std::numbers::pi * noise_sd_ * noise_sd_);
    const OutputLoss<double> log_likelihood = [&](const Mat& F, Mat& dF) {
      dF = -scale * inv_var * (F - Y);
      return scale * (-0.5 * inv_var * (F - Y).squaredNorm() + log_norm * static_cast<double>(F.size()));
    };
    const DeepOnet net = pairs_.with_query_grid(sub_grid);
    if (grad) return net.value_and_gradient(theta, X, log_likelihood, *grad);
    Vec unused = Vec::Zero(theta.size());
    return net.value_and_gradient(theta, X, log_likelihood, unused);
  }

 private:
  const DeepOnet& pairs_;
  Mat grid_, u_, y_;
  double noise_sd_;
  Index points_;
  mutable Rng rng_;
  mutable std::mutex mutex_;
};

/// MAP objective on those minibatches: -(1/n) log p(Y_batch | theta) - log p(theta) / N, the
/// minibatch form of NegativeLogPosteriorObjective.
class BurgersMinibatchObjective : public Objective {
 public:
  BurgersMinibatchObjective(const BurgersMinibatchLikelihood& likelihood, std::shared_ptr<const Prior> prior)
      : likelihood_(likelihood), prior_(std::move(prior)) {}
  Index dim() const override { return prior_->dim(); }
  Index num_data() const override { return likelihood_.num_functions(); }
  double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override {
    grad = Vec::Zero(theta.size());
    const double n = static_cast<double>(batch.size()), N = static_cast<double>(num_data());
    Vec prior_grad = Vec::Zero(theta.size());
    const double value = -likelihood_(theta, batch, &grad) / n - prior_->log_density(theta, &prior_grad) / N;
    grad = -grad / n - prior_grad / N;
    return value;
  }

 private:
  const BurgersMinibatchLikelihood& likelihood_;
  std::shared_ptr<const Prior> prior_;
};

/// Process CPU seconds (wall time means little on a shared machine).
inline double cpu_seconds_since(std::clock_t start) { return static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC; }

struct BurgersTraining {
  Vec map, vi_mean, vi_rho;
  double map_cpu_seconds = 0, vi_cpu_seconds = 0;
  bool from_cache = false;
};

/// Everything the MAP depends on (`vi` false) / the VI fit depends on (`vi` true), written at the
/// head of the cache file: a changed VI setting reuses the cached MAP.
inline std::string burgers_training_key(const BurgersConfig& c, bool vi) {
  std::string key = fmt::format("burgers-deeponet-v2 train {} stride {} depth {} width {} prior {} noise {} batch {}x{} map {} {} {} seed {}",
                                c.num_train, c.train_stride, c.hidden_layers, c.width, c.prior_sd, c.noise_sd, c.batch_functions,
                                c.batch_points, c.map_epochs, c.map_lr, c.map_final_lr, c.seed);
  if (vi) key += fmt::format(" vi {} {} {}", c.vi_epochs, c.vi_lr, c.vi_final_lr);
  return key;
}

/// The cached training (vi_mean empty when only the MAP matches), or nothing.
inline std::optional<BurgersTraining> read_burgers_training(const std::filesystem::path& path, const BurgersConfig& c, Index dim) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string map_key, vi_key;
  std::getline(in, map_key);
  std::getline(in, vi_key);
  if (map_key != burgers_training_key(c, false)) return std::nullopt;
  BurgersTraining t;
  for (Vec* v : {&t.map, &t.vi_mean, &t.vi_rho}) {
    v->resize(dim);
    in.read(reinterpret_cast<char*>(v->data()), static_cast<std::streamsize>(dim * sizeof(double)));
  }
  if (!in) return std::nullopt;
  if (vi_key != burgers_training_key(c, true)) t.vi_mean.resize(0);
  t.from_cache = true;
  return t;
}

inline void write_burgers_training(const std::filesystem::path& path, const BurgersConfig& c, const BurgersTraining& t) {
  atomic_write(path, [&](std::ostream& o) {
    o << burgers_training_key(c, false) << '\n' << burgers_training_key(c, true) << '\n';
    for (const Vec* v : {&t.map, &t.vi_mean, &t.vi_rho})
      o.write(reinterpret_cast<const char*>(v->data()), static_cast<std::streamsize>(v->size() * sizeof(double)));
  });
}

/// Exponential decay from `initial` to `final` over `epochs` epochs (per-epoch factor).
inline ScheduleParams exponential_decay(double initial, double final, Index epochs) {
  ScheduleParams s;
  s.name = "exponential";
  s.gamma = std::pow(final / initial, 1.0 / static_cast<double>(std::max<Index>(1, epochs - 1)));
  return s;
}

/// MAP from the Glorot initialisation, then Bayes by Backprop from the MAP, both on minibatches of
/// functions x points; or the cached result.
inline BurgersTraining train_burgers_deeponet(const BurgersConfig& cfg, const Posterior& post, const BurgersMinibatchLikelihood& likelihood,
                                              const std::function<void(const std::string&)>& say) {
  BurgersTraining out;
  if (cfg.reuse_training && !cfg.training_cache.empty())
    if (auto cached = read_burgers_training(cfg.training_cache, cfg, post.dim())) {
      say(fmt::format("burgers: {} read from {}", cached->vi_mean.size() ? "MAP and VI" : "MAP", cfg.training_cache.string()));
      if (cached->vi_mean.size()) return *cached;
      out.map = cached->map;
      out.from_cache = true;
    }
  const Index steps_per_epoch = (likelihood.num_functions() + cfg.batch_functions - 1) / cfg.batch_functions;
  const double macs = 91000.0 * static_cast<double>(cfg.batch_functions) + 81400.0 * static_cast<double>(cfg.batch_points) +
                      100.0 * static_cast<double>(cfg.batch_functions * cfg.batch_points);
  say(fmt::format("burgers: training on {} x {} minibatches, {} steps per epoch, ~{:.2g} GFLOP per step (6 x {:.3g} multiply-adds)",
                  cfg.batch_functions, cfg.batch_points, steps_per_epoch, 6 * macs * 1e-9, macs));
  std::clock_t cpu = std::clock();
  if (out.map.size() == 0) {
    TrainParams t;
    t.epochs = cfg.map_epochs;
    t.batch_size = cfg.batch_functions;
    t.optimizer.learning_rate = cfg.map_lr;
    t.schedule = exponential_decay(cfg.map_lr, cfg.map_final_lr, cfg.map_epochs);
    Rng rng(cfg.seed + 7, 0);
    const BurgersMinibatchObjective objective(likelihood, post.prior_ptr());
    const Index report_every = std::max<Index>(1, cfg.map_epochs / 10);
    const TrainResult fit = train(objective, post.initial_point(rng), t, rng, {}, [&](Index epoch, double loss, double) {
      if ((epoch + 1) % report_every == 0) say(fmt::format("burgers MAP epoch {}: loss {:.6g} ({:.0f} CPU s)", epoch + 1, loss, cpu_seconds_since(cpu)));
      return true;
    });
    out.map = fit.last_theta;
  }
  if (!out.from_cache) out.map_cpu_seconds = cpu_seconds_since(cpu);
  cpu = std::clock();
  ViParams vp;
  vp.epochs = cfg.vi_epochs;
  vp.learning_rate = cfg.vi_lr;
  vp.schedule = exponential_decay(cfg.vi_lr, cfg.vi_final_lr, cfg.vi_epochs);
  vp.batch_size = cfg.batch_functions;
  vp.initial_mean = out.map;
  vp.rho_init_lower = -7;
  vp.rho_init_upper = -6;
  Rng vi_rng(cfg.seed + 8, 0);
  const Index report_every = std::max<Index>(1, cfg.vi_epochs / 10);
  const ViResult vi = fit_bayes_by_backprop(post, post.prior(), vp, vi_rng, MinibatchLogLikelihood(std::cref(likelihood)), [&](Index epoch, double elbo) {
    if ((epoch + 1) % report_every == 0) say(fmt::format("burgers VI epoch {}: ELBO {:.6g} ({:.0f} CPU s)", epoch + 1, elbo, cpu_seconds_since(cpu)));
    return true;
  });
  out.vi_mean = vi.mu;
  out.vi_rho = vi.rho;
  out.vi_cpu_seconds = cpu_seconds_since(cpu);
  out.from_cache = false;
  if (!cfg.training_cache.empty()) write_burgers_training(cfg.training_cache, cfg, out);
  return out;
}

inline BurgersReport run_burgers_reproduction(const BurgersConfig& cfg, const std::filesystem::path& out,
                                              const std::function<void(const std::string&)>& log = {}) {
  const auto say = [&](const std::string& m) {
    if (log) log(m);
  };
  BurgersReport report;
  std::filesystem::create_directories(out);
  const std::clock_t data_cpu = std::clock();
  const BurgersData train = make_burgers_data(cfg.num_train, cfg.seed);
  const BurgersData test = make_burgers_data(cfg.num_test, cfg.seed + 1);
  report.data_cpu_seconds = cpu_seconds_since(data_cpu);
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

  // MAP pre-training, then VI from the MAP (small initial sigma), on minibatches of functions x points.
  const BurgersMinibatchLikelihood minibatch(pairs, train_grid, train.u, post->targets(), cfg.noise_sd, cfg.batch_points, cfg.seed + 6);
  const auto t0 = std::chrono::steady_clock::now();
  const BurgersTraining trained = train_burgers_deeponet(cfg, *post, minibatch, say);
  report.map_cpu_seconds = trained.map_cpu_seconds;
  report.vi_cpu_seconds = trained.vi_cpu_seconds;
  const Vec& map = trained.map;
  report.map_relative_l2 = relative_l2(test_y, test_net.forward(map, test.u));
  {
    // On (up to) 200 training functions: the gap to the test error is the generalisation gap.
    const Index n = std::min<Index>(200, cfg.num_train);
    report.map_train_relative_l2 = relative_l2(post->targets().leftCols(n), net->forward(map, train.u.leftCols(n)));
  }
  Vec vi_sd(trained.vi_rho.size());
  for (Index k = 0; k < vi_sd.size(); ++k) vi_sd[k] = softplus(trained.vi_rho[k]);
  report.vi_max_sd = vi_sd.maxCoeff();
  {
    std::vector<double> sorted(vi_sd.data(), vi_sd.data() + vi_sd.size());
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    report.vi_median_sd = sorted[sorted.size() / 2];
  }
  struct {
    Vec mu;
    std::shared_ptr<const DiagonalGaussianPosterior> approximation;
  } vi{trained.vi_mean, std::make_shared<DiagonalGaussianPosterior>(trained.vi_mean, vi_sd)};
  Rng vi_rng(cfg.seed + 8, 1);
  report.vi_seconds = seconds_since(t0);
  {
    Mat mean = Mat::Zero(test_y.rows(), test_y.cols());
    for (const Vec& th : vi.approximation->sample(vi_rng, cfg.predictive_draws)) mean += test_net.forward(th, test.u);
    report.vi_relative_l2 = relative_l2(test_y, mean / static_cast<double>(cfg.predictive_draws));
  }
  say(fmt::format("burgers: MAP rel L2 {:.4f} (training functions {:.4f}; {:.0f} CPU s), VI rel L2 {:.4f} ({:.0f} CPU s), VI sd max {:.3g} median {:.3g}",
                  report.map_relative_l2, report.map_train_relative_l2, report.map_cpu_seconds, report.vi_relative_l2, report.vi_cpu_seconds, report.vi_max_sd,
                  report.vi_median_sd));

  if (cfg.stop_after_training) return report;
  // Sensitivities (eq. 17) over random (u, (x, t)) pairs of the training data, pairs mode.
  Mat XY(106, cfg.sensitivity_pairs);
  Rng pick(cfg.seed + 9, 0);
  for (Index k = 0; k < cfg.sensitivity_pairs; ++k) {
    XY.col(k).head(101) = train.u.col(static_cast<Index>(pick.uniform_index(static_cast<std::uint64_t>(cfg.num_train))));
    XY.col(k).tail(5) = train_grid.col(static_cast<Index>(pick.uniform_index(static_cast<std::uint64_t>(train_grid.cols()))));
  }
  const SensitivityReport sens = compute_sensitivities(pairs, vi.mu, vi_sd, XY, 16);
  if (cfg.figures) write_sensitivity_report(out, sens, net->layout());

  RunConfig run;
  run.num_chains = 1;
  run.num_warmup = cfg.fixed_step_warmup;
  run.num_draws = cfg.fixed_step_draws;
  run.seed = cfg.seed + 10;
  // Acceptance, CPU time per sample / gradient and rel. L2 of a run at the fixed step size (Table
  // 2 / E.5 column 3), then the step size for 80% acceptance (column 4): dual averaging with L = 10
  // from the VI means on `density` (the subspace view, or the posterior itself for full space).
  const auto measure = [&](BurgersTauRow& row, const RunResult& result, double cpu_seconds, const std::vector<Vec>& draws,
                           const LogDensity& density, const Vec& start) {
    row.accept_fixed = mean_accept(result);
    row.fixed_step = cfg.fixed_step_size;
    const double iterations = static_cast<double>(run.num_warmup + run.num_draws);
    long gradients = 0;
    for (const auto& chain : result.warmup_stats)
      for (const auto& st : chain) gradients += st.n_leapfrog;
    for (const auto& chain : result.stats)
      for (const auto& st : chain) gradients += st.n_leapfrog;
    row.seconds_per_sample = cpu_seconds / iterations;  // includes setting up the run and one start gradient
    row.seconds_per_gradient = cpu_seconds / static_cast<double>(std::max<long>(1, gradients));
    Mat mean = Mat::Zero(test_y.rows(), test_y.cols());
    const Index used = std::min<Index>(cfg.predictive_draws, static_cast<Index>(draws.size()));
    for (Index k = 0; k < used; ++k) mean += test_net.forward(draws[draws.size() - 1 - static_cast<std::size_t>(k)], test.u);
    row.relative_l2 = relative_l2(test_y, mean / static_cast<double>(used));
    FindStepSizeOptions o;
    o.num_iterations = cfg.find_step_iterations;
    o.seed = cfg.seed + 11;
    const FindStepSizeResult found = find_step_size(density, start, 0.8, o);
    row.step_for_80 = found.step_size;
    row.accept_found = found.mean_accept_stat;
    say(fmt::format("burgers tau {}: {} sampled, L {}, accept {:.2f} at eps {}, {:.2f} CPU s/sample, eps(80%) {:.3g}, rel L2 {:.4f}", row.tau,
                    row.num_kept, row.num_leapfrog_steps, row.accept_fixed, cfg.fixed_step_size, row.seconds_per_sample, row.step_for_80,
                    row.relative_l2));
  };

  std::vector<Vec> vh_best_draws;
  for (double tau : cfg.taus) {
    BurgersTauRow row;
    row.tau = tau;
    ViHmcParams p;
    p.tau = tau;
    p.step_size = cfg.fixed_step_size;
    p.spread_statistic = SpreadStatistic::Max;            // Appendix C: max for Burgers
    p.spread_measure = SpreadMeasure::StandardDeviation;  // our default (see README); capped below
    p.max_leapfrog_steps = cfg.max_leapfrog_steps;
    const std::clock_t cpu_start = std::clock();
    const ViHmcResult r = run_vi_hmc(post, vi.mu, vi_sd, sens, p, run);
    const double cpu_seconds = cpu_seconds_since(cpu_start);
    row.num_kept = r.num_kept;
    row.num_leapfrog_steps = r.num_leapfrog_steps;
    const std::vector<Vec> draws = r.full_draws();
    measure(row, r.run, cpu_seconds, draws, *r.view, r.view->restrict(vi.mu));
    if (tau == cfg.taus.front()) vh_best_draws = draws;
    report.rows.push_back(row);
  }
  if (cfg.full_space_hmc) {
    // Table 2's HMC row: every parameter sampled, same step size and path-length rule, from the VI means.
    BurgersTauRow row;
    row.tau = 1.0;
    row.num_kept = report.num_params;
    const std::clock_t cpu_start = std::clock();
    const FullHmc r = full_hmc(post, vi.mu, report.vi_max_sd, cfg.fixed_step_size, run, 0.0, cfg.max_leapfrog_steps);
    const double cpu_seconds = cpu_seconds_since(cpu_start);
    row.num_leapfrog_steps = r.num_leapfrog_steps;
    measure(row, r.run, cpu_seconds, draws_of(r.run), *post, vi.mu);
    report.full_space = row;
  }

  report.table = fmt::format(
      "| tau | sampled (of {}) | L (pi max sd / 2 eps, capped) | acceptance at eps = {} | CPU s / sample | CPU ms / gradient | eps for 80% (dual averaging) | eps for 80% (from the acceptance) | rel. L2 of the mean |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
      report.num_params, cfg.fixed_step_size);
  std::vector<BurgersTauRow> rows = report.rows;
  if (report.full_space) rows.insert(rows.begin(), *report.full_space);
  for (const auto& r : rows)
    report.table += fmt::format("| {} | {} | {} | {:.0f}% | {:.2f} | {:.1f} | {:.2g} | {:.2g} | {:.2f}% |\n",
                                r.num_kept == report.num_params ? std::string("full-space HMC") : fmt::format("{}", r.tau), r.num_kept,
                                r.num_leapfrog_steps, 100 * r.accept_fixed, r.seconds_per_sample, 1e3 * r.seconds_per_gradient, r.step_for_80,
                                r.step_for_80_scaling(), 100 * r.relative_l2);
  report.table += fmt::format(
      "| VI | - | - | - | - | - | - | - | {:.2f}% |\n| MAP (pre-training) | - | - | - | - | - | - | - | {:.2f}% (training functions: {:.2f}%) |\n",
      100 * report.vi_relative_l2, 100 * report.map_relative_l2, 100 * report.map_train_relative_l2);

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
      p.line(x, test.solution[static_cast<std::size_t>(f)].col(100), "true solution", plot::Style{.colour = "", .dash = plot::Dash::Dashed});
      p.line(x, test.u.col(f), "initial condition");
    };
    panel(0, 0, "VI, best", vi_draws, best_vi, e_vi[best_vi]);
    panel(0, 1, fmt::format("VI-HMC tau {}, best", cfg.taus.front()), vh_draws, best_vh, e_vh[best_vh]);
    panel(1, 0, "VI, worst", vi_draws, worst_vi, e_vi[worst_vi]);
    panel(1, 1, fmt::format("VI-HMC tau {}, worst", cfg.taus.front()), vh_draws, worst_vh, e_vh[worst_vh]);
    fig.title("Burgers DeepONet at t = 1 (Thiagarajan et al. 2025, Fig. 10)");
    fig.save(out / "best_worst.png");
  }
  return report;
}

}  // namespace uqnn::examples
