// Reproduction of Sommer et al. 2024, Table 3 (DEI-MCMC vs LM, DNN, DE on UCI regression) and of the
// dying-sampler comparison of Tables 1/2 (cold-start NUTS vs DEI-MCMC), with the figures of
// Fig. 5 (LPPD / RMSE vs chains and draws), Fig. 6 (calibration), Fig. 8/9 (per-layer R-hat,
// cR-hat, ESS) and Fig. 13 (chain-wise expanding-window LPPD).
//
//   ./build/examples/dei_table3 [--data-dir data/uci] [--out dei-table3]
//       [--datasets airfoil,concrete,energy,yacht] [--reps 3] [--first-rep 0] [--members 12] [--warmup 100]
//       [--draws 1000] [--epochs 5000] [--dying airfoil,energy] [--dying-warmup 200]
//       [--dying-draws 200] [--dying-activations relu,tanh] [--threads 2] [--precision float32]
//
// Settings (seed 003 sec. 7.3, App. C.4, App. D): features and target standardised on the training
// part; 80/20 random splits with seeds 0, 1, 2; 2x16 ReLU MLP whose outputs are mean and log sigma
// (heteroscedastic Gaussian, as the paper's code); unit Gaussian prior; M = 12 members trained
// full batch for 5000 epochs with Adam (lr 1e-2, weight decay 1e-2) on the Gaussian NLL; one NUTS
// chain per member, 100 warmup steps, target acceptance 0.8; the first 10 / 100 / 1000 draws of
// every chain. All metrics in standardised units on the test part. The network's passes run in
// float32 (JAX's default dtype, hence NumPyro's; the paper does not say it enabled float64): about
// 1.8x faster than float64 here, while log densities are summed and the sampler integrates in double.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "list_argument.hpp"
#include "uqnn/data/dataset.hpp"
#include "uqnn/data/split.hpp"
#include "uqnn/data/standardizer.hpp"
#include "uqnn/diagnostics/layerwise.hpp"
#include "uqnn/diagnostics/lppd.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/plot/dei_figures.hpp"
#include "uqnn/hybrid/dei_mcmc.hpp"
#include "uqnn/hybrid/linear_baseline.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/plot/panel.hpp"
#include "uqnn/predictive/predictive.hpp"

namespace fs = std::filesystem;
using namespace uqnn;

namespace {

using uqnn::examples::split_list;

struct Options {
  fs::path data_dir = UQNN_UCI_DIR;
  fs::path out = "dei-table3";
  std::vector<std::string> datasets{"airfoil", "concrete", "energy", "yacht"};
  std::vector<std::string> dying{"airfoil", "energy"};
  std::vector<std::string> dying_activations{"relu", "tanh"};
  int reps = 3;
  int first_rep = 0;  ///< the splits run are first_rep, ..., first_rep + reps - 1
  Index members = 12;
  long warmup = 100, draws = 1000, epochs = 5000;
  long dying_warmup = 200, dying_draws = 200;
  int threads = 2;
  std::string precision = "float32";
};

/// The command line (CLI11); list options take comma-separated values, "none" for an empty list.
Options parse(int argc, char** argv) {
  Options o;
  std::string dying = "airfoil,energy";
  CLI::App app("dei_table3: Table 3 of Sommer et al. 2024 (DEI-MCMC vs LM, DNN, DE) and the dying-sampler comparison");
  app.add_option("--data-dir", o.data_dir, "UCI data sets (data/uci)")->capture_default_str();
  app.add_option("--out", o.out, "output directory")->capture_default_str();
  std::string datasets = "airfoil,concrete,energy,yacht";
  app.add_option("--datasets", datasets, "Table 3 data sets, or none")->capture_default_str();
  app.add_option("--reps", o.reps, "replications (80/20 splits with seeds 0, 1, ...)")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--first-rep", o.first_rep,
                 "seed of the first split: --first-rep 1 --reps 2 runs splits 1 and 2 only (a long data set's splits "
                 "in separate runs)")
      ->check(CLI::Range(0, 99))
      ->capture_default_str();
  app.add_option("--members", o.members, "ensemble members = chains")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--warmup", o.warmup, "NUTS warmup iterations")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--draws", o.draws, "draws per chain (Table 3 reports the first 10, 100, 1000)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--epochs", o.epochs, "Adam epochs per member")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--precision", o.precision,
                 "arithmetic of the network passes: float32 (JAX/NumPyro's default, as the paper's runs) | float64")
      ->check(CLI::IsMember({"float32", "float64"}))
      ->capture_default_str();
  app.add_option("--dying", dying, "data sets of the dying-sampler comparison (Tables 1/2), or none")->capture_default_str();
  app.add_option("--dying-activations", o.dying_activations, "activations of that comparison")->delimiter(',')->capture_default_str();
  app.add_option("--dying-warmup", o.dying_warmup, "its NUTS warmup")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--dying-draws", o.dying_draws, "its draws per chain")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--threads", o.threads, "chains run in this many threads (results do not depend on it)")->check(CLI::Range(1, 1024))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  o.datasets = datasets == "none" ? std::vector<std::string>{} : split_list(datasets);
  o.dying = dying == "none" ? std::vector<std::string>{} : split_list(dying);
  return o;
}

/// Seed 003 Table 3 (RMSE and LPPD, mean and sd over 3 splits): LM, DNN, DE, OURS(10/100/1000).
struct PaperRow {
  double rmse[6][2];
  double lppd[6][2];
};
const std::map<std::string, PaperRow> kPaper{
    {"airfoil", {{{0.72, .02}, {0.27, .01}, {0.24, .01}, {0.21, .01}, {0.21, .01}, {0.21, .01}},
                 {{-1.09, .03}, {-0.17, .08}, {0.19, .05}, {0.50, .01}, {0.53, .02}, {0.58, .03}}}},
    {"bike_sharing", {{{0.77, .01}, {0.31, .00}, {0.30, .00}, {0.26, .01}, {0.25, .01}, {0.25, .01}},
                      {{-1.16, .01}, {0.35, .00}, {0.42, .00}, {0.60, .02}, {0.61, .02}, {0.63, .02}}}},
    {"concrete", {{{0.63, .02}, {0.35, .04}, {0.32, .05}, {0.40, .19}, {0.70, .71}, {0.31, .05}},
                  {{-0.96, .03}, {-0.99, .38}, {-0.08, .20}, {0.05, .27}, {0.19, .11}, {0.23, .12}}}},
    {"energy", {{{0.27, .02}, {0.05, .00}, {0.04, .01}, {0.04, .00}, {0.04, .00}, {0.04, .00}},
                {{-0.13, .06}, {1.60, .13}, {1.93, .05}, {1.91, .28}, {1.94, .25}, {2.06, .20}}}},
    {"protein", {{{0.85, .01}, {0.77, .01}, {0.77, .01}, {0.71, .00}, {0.71, .00}, {0.70, .00}},
                 {{-1.25, .01}, {-1.06, .01}, {-1.05, .01}, {-0.78, .02}, {-0.77, .02}, {-0.75, .02}}}},
    {"yacht", {{{0.61, .07}, {0.05, .00}, {0.03, .01}, {0.03, .01}, {0.03, .01}, {0.03, .01}},
               {{-0.94, .13}, {1.74, .40}, {2.55, .05}, {2.97, .17}, {3.00, .20}, {3.08, .20}}}},
};

struct Problem {
  std::shared_ptr<Posterior> posterior;
  Mat test_x, test_y;
};

Problem make_problem(const Dataset& data, int rep, const std::string& activation, Precision precision) {
  SplitParams sp;
  sp.train_fraction = 0.8;
  sp.validation_fraction = 0.0;
  sp.test_fraction = 0.2;
  sp.seed = static_cast<std::uint64_t>(rep);
  const Split split = random_split(data.size(), sp);
  const Dataset train = data.subset(split.train);
  const Standardizer st = Standardizer::fit(train);  // training part only
  const Dataset train_std = st.transform(train), test_std = st.transform(data.subset(split.test));
  const auto lik = make_heteroscedastic_likelihood();
  MlpSpec spec{data.input_dim(), {16, 16}, lik->model_outputs(1), parse_activation(activation),
               activation == "relu" ? InitScheme::He : InitScheme::Glorot};
  auto model = std::make_shared<Mlp>(spec);
  model->set_precision(precision);
  auto prior = GaussianPrior::isotropic(model->num_params(), 1.0);  // unit Gaussian prior
  return {std::make_shared<Posterior>(model, lik, prior, train_std.inputs, train_std.targets), test_std.inputs,
          test_std.targets};
}

/// Running per-chain sums for multi-chain / prefix metrics without storing every prediction.
struct ChainAccumulator {
  std::map<long, Vec> log_sum;   ///< at each snapshot S: log sum_{s<=S} p(y_i | theta_s)
  std::map<long, Mat> mean_sum;  ///< at each snapshot S: sum_{s<=S} mean(x_i; theta_s)
};

struct Metrics {
  double rmse = 0, lppd = 0;
};

Metrics combine(const std::vector<ChainAccumulator>& acc, int chains, long draws, const Mat& y) {
  const Index n = y.cols();
  Vec lse = Vec::Constant(n, -std::numeric_limits<double>::infinity());
  Mat mean = Mat::Zero(y.rows(), n);
  for (int c = 0; c < chains; ++c) {
    const Vec& l = acc[static_cast<std::size_t>(c)].log_sum.at(draws);
    for (Index i = 0; i < n; ++i) {
      const double hi = std::max(lse(i), l(i));
      lse(i) = hi + std::log(std::exp(lse(i) - hi) + std::exp(l(i) - hi));
    }
    mean += acc[static_cast<std::size_t>(c)].mean_sum.at(draws);
  }
  const double total = static_cast<double>(chains) * static_cast<double>(draws);
  Metrics m;
  m.lppd = (lse.array() - std::log(total)).mean();  // seed 003 eq. 7
  mean /= total;
  m.rmse = std::sqrt((mean - y).squaredNorm() / static_cast<double>(y.size()));
  return m;
}

/// Member / draw metrics from a list of thetas treated as equally weighted draws.
Metrics metrics_of(const Posterior& post, const Draws& draws, const Mat& x, const Mat& y) {
  Mat log_lik(draws.size(), x.cols());
  Mat mean = Mat::Zero(y.rows(), y.cols());
  draws.for_each([&](Index s, const Vec& theta) {
    const Mat out = post.model().forward(theta.head(post.model().num_params()), x);
    log_lik.row(s) = post.likelihood().pointwise_log_likelihood(out, y, post.extra_params(theta)).transpose();
    mean += post.likelihood().mean(out) / static_cast<double>(draws.size());
  });
  return {std::sqrt((mean - y).squaredNorm() / static_cast<double>(y.size())), diagnostics::lppd(log_lik)};
}

std::string pm(const std::vector<double>& v, int digits = 2) {
  if (v.empty()) return "-";
  double mean = 0;
  for (double x : v) mean += x / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean) / static_cast<double>(std::max<std::size_t>(1, v.size() - 1));
  return fmt::format("{:.{}f}±{:.{}f}", mean, digits, v.size() > 1 ? std::sqrt(var) : 0.0, digits);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// Sampler effort of a run: leapfrog steps (= gradients) per iteration, tree depth, step sizes.
struct NutsSummary {
  double mean_leapfrog = 0, mean_leapfrog_warmup = 0, mean_depth = 0, median_step = 0, min_step = 0, max_step = 0;
  double mean_accept = 0, share_max_depth = 0;
};

NutsSummary summarize_nuts(const RunResult& run) {
  NutsSummary s;
  double n = 0, nw = 0;
  std::vector<double> steps;
  for (int c = 0; c < run.num_chains(); ++c) {
    for (const auto& d : run.stats[static_cast<std::size_t>(c)]) {
      s.mean_leapfrog += d.n_leapfrog;
      s.mean_depth += d.tree_depth;
      s.mean_accept += d.accept_prob;
      s.share_max_depth += d.tree_depth >= 10 ? 1.0 : 0.0;
      n += 1;
    }
    for (const auto& d : run.warmup_stats[static_cast<std::size_t>(c)]) {
      s.mean_leapfrog_warmup += d.n_leapfrog;
      nw += 1;
    }
    if (!run.stats[static_cast<std::size_t>(c)].empty()) steps.push_back(run.stats[static_cast<std::size_t>(c)].front().step_size);
  }
  s.mean_leapfrog /= std::max(1.0, n);
  s.mean_depth /= std::max(1.0, n);
  s.mean_accept /= std::max(1.0, n);
  s.share_max_depth /= std::max(1.0, n);
  s.mean_leapfrog_warmup /= std::max(1.0, nw);
  if (!steps.empty()) {
    std::sort(steps.begin(), steps.end());
    s.median_step = steps[steps.size() / 2];
    s.min_step = steps.front();
    s.max_step = steps.back();
  }
  return s;
}

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  fs::create_directories(o.out);
  const auto started = std::chrono::steady_clock::now();
  const double cpu_started = cpu_seconds();
  std::vector<long> snapshots;
  for (long s : {10L, 100L, 1000L})
    if (s <= o.draws) snapshots.push_back(s);
  if (snapshots.empty() || snapshots.back() != o.draws) snapshots.push_back(o.draws);
  const std::vector<double> levels{0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95};

  nlohmann::json results = nlohmann::json::object();
  std::ostringstream table;
  table << "| data | LM RMSE | DNN RMSE | DE RMSE";
  for (long s : snapshots) table << fmt::format(" | DEI({}) RMSE", s);
  table << " | LM LPPD | DNN LPPD | DE LPPD";
  for (long s : snapshots) table << fmt::format(" | DEI({}) LPPD", s);
  table << " | dying | wall s / rep |\n|---";
  for (std::size_t k = 0; k < 2 * (3 + snapshots.size()) + 2; ++k) table << "|---";
  table << "|\n";
  std::ostringstream paper_table;
  std::ostringstream dying_table;
  const auto write_markdown = [&]() {
    const double wall = seconds_since(started), cpu = cpu_seconds() - cpu_started;
    std::ostringstream md;
    md << fmt::format("Settings: {} split(s) from seed {}, M = {}, {} warmup, {} draws per chain, {} epochs; {} threads; "
                      "wall {:.0f} s, CPU {:.0f} s so far.\n\n",
                      o.reps, o.first_rep, o.members, o.warmup, o.draws, o.epochs, o.threads, wall, cpu);
    md << table.str()
       << "\nPaper (Sommer et al. 2024, Table 3; columns LM, DNN, DE, OURS(10), OURS(100), OURS(1000)):\n\n"
       << "| data | LM | DNN | DE | (10) | (100) | (1000) | LM | DNN | DE | (10) | (100) | (1000) | | |\n"
       << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
       << paper_table.str() << '\n'
       << dying_table.str();
    results["wall_seconds"] = wall;
    results["cpu_seconds"] = cpu;
    atomic_write_text(o.out / "results.json", results.dump(1));
    atomic_write_text(o.out / "results.md", md.str());
    return md.str();
  };

  for (const auto& name : o.datasets) {
    const Dataset data = load_dataset(dataset_file(o.data_dir, name));
    std::map<std::string, std::vector<double>> col;
    std::vector<double> walls;
    int dying = 0, chains_total = 0;
    for (int rep = o.first_rep; rep < o.first_rep + o.reps; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      const Problem p = make_problem(data, rep, "relu", parse_precision(o.precision));
      const LinearBaseline lm = LinearBaseline::fit(p.posterior->inputs(), p.posterior->targets());
      col["lm_rmse"].push_back(lm.rmse(p.test_x, p.test_y));
      col["lm_lppd"].push_back(lm.lppd(p.test_x, p.test_y));

      DeiMcmcParams params;
      params.ensemble.members = o.members;
      params.ensemble.training.epochs = o.epochs;
      params.ensemble.threads = o.threads;
      params.threads = o.threads;
      params.warmup = o.warmup;
      params.draws = o.draws;
      // Snapshots of every chain's running sums at 10 / 100 / 1000 draws, filled online.
      std::vector<ChainAccumulator> acc(static_cast<std::size_t>(o.members));
      struct Snapshotter : Observer {
        const Problem* p;
        std::vector<ChainAccumulator>* acc;
        std::vector<Vec> lse;
        std::vector<Mat> sum;
        std::vector<long> snaps;
        void on_begin(const RunConfig& c) override {
          lse.assign(static_cast<std::size_t>(c.num_chains),
                     Vec::Constant(p->test_x.cols(), -std::numeric_limits<double>::infinity()));
          sum.assign(static_cast<std::size_t>(c.num_chains), Mat::Zero(p->test_y.rows(), p->test_y.cols()));
        }
        ObserverAction on_iteration(const IterationEvent& e) override {
          if (!e.kept) return ObserverAction::Continue;
          const auto c = static_cast<std::size_t>(e.chain);
          const Posterior& post = *p->posterior;
          const Mat out = post.model().forward(e.position->head(post.model().num_params()), p->test_x);
          const Vec ll = post.likelihood().pointwise_log_likelihood(out, p->test_y, post.extra_params(*e.position));
          for (Index i = 0; i < ll.size(); ++i) {
            const double hi = std::max(lse[c](i), ll(i));
            lse[c](i) = hi + std::log(std::exp(lse[c](i) - hi) + std::exp(ll(i) - hi));
          }
          sum[c] += post.likelihood().mean(out);
          const long count = e.draw_index + 1;
          for (long s : snaps)
            if (s == count) {
              (*acc)[c].log_sum[s] = lse[c];
              (*acc)[c].mean_sum[s] = sum[c];
            }
          return ObserverAction::Continue;
        }
      } snap;
      snap.p = &p;
      snap.acc = &acc;
      snap.snaps = snapshots;
      const DeiMcmcResult r = run_dei_mcmc(p.posterior, params, 1000 + static_cast<std::uint64_t>(rep), p.test_x,
                                           p.test_y, {}, {&snap});
      // DNN: the expected performance of one member; DE: the members as an equally weighted mixture.
      std::vector<Vec> members;
      double dnn_rmse = 0, dnn_lppd = 0;
      for (const auto& m : r.members) {
        members.push_back(m.theta);
        const Metrics one = metrics_of(*p.posterior, Draws::independent({m.theta}), p.test_x, p.test_y);
        dnn_rmse += one.rmse / static_cast<double>(r.members.size());
        dnn_lppd += one.lppd / static_cast<double>(r.members.size());
      }
      const Metrics de = metrics_of(*p.posterior, Draws::independent(members), p.test_x, p.test_y);
      col["dnn_rmse"].push_back(dnn_rmse);
      col["dnn_lppd"].push_back(dnn_lppd);
      col["de_rmse"].push_back(de.rmse);
      col["de_lppd"].push_back(de.lppd);
      for (long s : snapshots) {
        const Metrics m = combine(acc, static_cast<int>(o.members), s, p.test_y);
        col[fmt::format("dei{}_rmse", s)].push_back(m.rmse);
        col[fmt::format("dei{}_lppd", s)].push_back(m.lppd);
      }
      dying += r.num_dying;
      chains_total += r.run.num_chains();
      walls.push_back(seconds_since(t0));
      const NutsSummary ns = summarize_nuts(r.run);
      std::cerr << fmt::format("{} rep {}: ensemble {:.1f} s, NUTS {:.1f} s, DE lppd {:.3f}, DEI({}) lppd {:.3f}, dying {}; "
                               "NUTS: mean leapfrog {:.1f} (warmup {:.1f}), mean depth {:.2f} ({:.0f}% at depth 10), accept {:.2f}, step size median {:.2g} "
                               "[{:.2g}, {:.2g}], divergent {} (warmup {})\n",
                               name, rep, r.ensemble_seconds, r.sampling_seconds, de.lppd, o.draws,
                               col[fmt::format("dei{}_lppd", o.draws)].back(), r.num_dying, ns.mean_leapfrog,
                               ns.mean_leapfrog_warmup, ns.mean_depth, 100 * ns.share_max_depth, ns.mean_accept, ns.median_step, ns.min_step, ns.max_step,
                               r.run.num_divergent(), r.run.num_divergent_warmup());
      col["mean_leapfrog"].push_back(ns.mean_leapfrog);
      col["mean_leapfrog_warmup"].push_back(ns.mean_leapfrog_warmup);
      col["median_step_size"].push_back(ns.median_step);
      col["divergent"].push_back(static_cast<double>(r.run.num_divergent()));
      col["divergent_warmup"].push_back(static_cast<double>(r.run.num_divergent_warmup()));
      col["ensemble_seconds"].push_back(r.ensemble_seconds);
      col["sampling_seconds"].push_back(r.sampling_seconds);

      if (rep == o.first_rep) {
        // Fig. 13: chain-wise expanding-window LPPD; Figs. 8/9: per-layer R-hat, cR-hat, ESS.
        plot_lppd_traces(o.out / fmt::format("lppd_traces_{}.png", name), r.lppd_traces, r.converged_at, r.dying,
                         fmt::format("{} (split {}): chain-wise expanding-window LPPD, DEI-MCMC", name, rep));
        if (o.draws >= 16)
          plot_layer_diagnostics(o.out / fmt::format("layers_{}.png", name),
                                 diagnostics::layerwise_diagnostics(r.run.draws, p.posterior->layout(), 4),
                                 fmt::format("{} (split {}): per-layer diagnostics of the DEI-MCMC chains", name, rep));
        // Fig. 10 / App. B.2: R-hat^(2) across chains per parameter (parameter space) and per test
        // point of the predictive mean (function space).
        if (o.draws >= 4) {
          const Posterior& post = *p.posterior;
          std::vector<Mat> predictions;
          for (const Mat& chain : r.run.draws) {
            Mat pred(chain.rows(), p.test_x.cols());
            for (Index s = 0; s < chain.rows(); ++s)
              pred.row(s) = post.likelihood()
                                .mean(post.model().forward(chain.row(s).head(post.model().num_params()).transpose(), p.test_x))
                                .row(0);
            predictions.push_back(pred);
          }
          const Vec ps = diagnostics::columnwise_rhat(r.run.draws), fs = diagnostics::columnwise_rhat(predictions);
          plot_rhat_histograms(o.out / fmt::format("rhat_{}.png", name),
                               {{"parameter space (per parameter)", ps}, {"function space (per test point)", fs}},
                               fmt::format("{} (split {}): R-hat^(2) across the {} DEI-MCMC chains", name, rep, r.run.num_chains()));
          results[name][fmt::format("rhat_split{}", rep)] = {{"parameter_space", std::vector<double>(ps.data(), ps.data() + ps.size())},
                                          {"function_space", std::vector<double>(fs.data(), fs.data() + fs.size())}};
        }
        // Fig. 5: LPPD and RMSE against the number of chains, one line per number of draws.
        plot::Figure grid(1, 2);
        grid.title(fmt::format("{} (split {}): DEI-MCMC vs chains and draws per chain", name, rep));
        grid.panel(0, 0).x_label("chains").y_label("test LPPD");
        grid.panel(0, 1).x_label("chains").y_label("test RMSE");
        nlohmann::json grid_json;
        for (long s : snapshots) {
          Vec k(o.members), lppd(o.members), rmse(o.members);
          for (Index c = 1; c <= o.members; ++c) {
            const Metrics m = combine(acc, static_cast<int>(c), s, p.test_y);
            k(c - 1) = static_cast<double>(c);
            lppd(c - 1) = m.lppd;
            rmse(c - 1) = m.rmse;
            grid_json[std::to_string(s)].push_back({{"chains", c}, {"lppd", m.lppd}, {"rmse", m.rmse}});
          }
          grid.panel(0, 0).line(k, lppd, fmt::format("{} draws", s));
          grid.panel(0, 1).line(k, rmse, fmt::format("{} draws", s));
        }
        grid.save(o.out / fmt::format("grid_{}.png", name));
        results[name][fmt::format("grid_split{}", rep)] = grid_json;
        // Fig. 6: calibration of central intervals, every 10th draw of all chains and of fewer chains.
        std::vector<std::pair<std::string, std::map<double, double>>> calibration;
        Rng rng(99, 0);
        for (int chains : {1, 3, static_cast<int>(o.members)}) {
          if (chains > o.members) continue;
          std::vector<Vec> draws;
          for (int c = 0; c < chains; ++c)
            for (Index s = 0; s < r.run.draws[static_cast<std::size_t>(c)].rows(); s += std::max<long>(1, o.draws / 100))
              draws.push_back(r.run.draws[static_cast<std::size_t>(c)].row(s).transpose());
          const PredictiveDraws pd = predict_draws(p.posterior->model(), p.posterior->likelihood(), Draws::independent(draws), p.test_x);
          const PredictiveSummary sum = summarize_predictive(pd, levels, rng);
          const RegressionMetrics rm = regression_metrics(pd, sum, p.test_y, p.test_y, 0.0);
          calibration.emplace_back(fmt::format("DEI-MCMC, {} chain{}", chains, chains == 1 ? "" : "s"), rm.coverage);
          for (const auto& [level, c] : rm.coverage) results[name][fmt::format("coverage_split{}", rep)][std::to_string(chains)][fmt::format("{:.2f}", level)] = c;
        }
        {
          const PredictiveDraws pd = predict_draws(p.posterior->model(), p.posterior->likelihood(), Draws::independent(members), p.test_x);
          const PredictiveSummary sum = summarize_predictive(pd, levels, rng);
          calibration.emplace_back("deep ensemble", regression_metrics(pd, sum, p.test_y, p.test_y, 0.0).coverage);
        }
        plot_calibration(o.out / fmt::format("calibration_{}.png", name), calibration,
                         fmt::format("{} (split {}): coverage of central predictive intervals", name, rep));
      }
    }
    nlohmann::json row;
    for (const auto& [k, v] : col) row[k] = v;
    row["dying_chains"] = dying;
    row["chains"] = chains_total;
    row["wall_seconds_per_rep"] = walls;
    results[name]["table3"] = row;
    table << "| " << name << " | " << pm(col["lm_rmse"]) << " | " << pm(col["dnn_rmse"]) << " | " << pm(col["de_rmse"]);
    for (long s : snapshots) table << " | " << pm(col[fmt::format("dei{}_rmse", s)]);
    table << " | " << pm(col["lm_lppd"]) << " | " << pm(col["dnn_lppd"]) << " | " << pm(col["de_lppd"]);
    for (long s : snapshots) table << " | " << pm(col[fmt::format("dei{}_lppd", s)]);
    double wall = 0;
    for (double w : walls) wall += w / static_cast<double>(walls.size());
    table << fmt::format(" | {}/{} | {:.0f} |\n", dying, chains_total, wall);
    if (kPaper.count(name)) {
      const PaperRow& pr = kPaper.at(name);
      paper_table << "| " << name << " (paper)";
      for (int k = 0; k < 6; ++k) paper_table << fmt::format(" | {:.2f}±{:.2f}", pr.rmse[k][0], pr.rmse[k][1]);
      for (int k = 0; k < 6; ++k) paper_table << fmt::format(" | {:.2f}±{:.2f}", pr.lppd[k][0], pr.lppd[k][1]);
      paper_table << " | 0 | |\n";
    }
    write_markdown();
  }

  // Tables 1/2 setting: cold-start NUTS (prior draws) vs DEI, ReLU and tanh, share of chains whose
  // test RMSE beats the linear model (split 0).
  if (!o.dying.empty()) {
    dying_table << fmt::format("| data | activation | start | chains better than LM | LM RMSE | median chain RMSE | "
                               "merged RMSE (all chains) | merged LPPD (all chains) | wall s |\n|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& name : o.dying) {
      const Dataset data = load_dataset(dataset_file(o.data_dir, name));
      for (const std::string& activation : o.dying_activations)
        for (const std::string start : {"prior", "ensemble"}) {
          const auto t0 = std::chrono::steady_clock::now();
          const Problem p = make_problem(data, 0, activation, parse_precision(o.precision));
          DeiMcmcParams params;
          params.start = start;
          params.ensemble.members = o.members;
          params.ensemble.training.epochs = o.epochs;
          params.ensemble.threads = o.threads;
          params.threads = o.threads;
          params.warmup = start == "prior" ? o.dying_warmup : o.warmup;
          params.draws = o.dying_draws;
          const DeiMcmcResult r = run_dei_mcmc(p.posterior, params, 7, p.test_x, p.test_y);
          const Metrics all = metrics_of(*p.posterior, r.merged(), p.test_x, p.test_y);
          std::vector<double> rmse(r.chain_rmse.data(), r.chain_rmse.data() + r.chain_rmse.size());
          std::sort(rmse.begin(), rmse.end());
          const int better = r.run.num_chains() - r.num_dying;
          dying_table << fmt::format("| {} | {} | {} (warmup {}) | {}/{} = {:.2f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.0f} |\n",
                                     name, activation, start == "prior" ? "cold (prior draw)" : "DEI", params.warmup,
                                     better, r.run.num_chains(), static_cast<double>(better) / r.run.num_chains(),
                                     r.linear_model_rmse, rmse[rmse.size() / 2], all.rmse, all.lppd, seconds_since(t0));
          std::cerr << fmt::format("dying check {} {} {}: {}/{} chains better than the LM\n", name, activation, start, better,
                                   r.run.num_chains());
          results["dying"][name][activation][start] = {{"better_than_lm", better},
                                                       {"chains", r.run.num_chains()},
                                                       {"lm_rmse", r.linear_model_rmse},
                                                       {"chain_rmse", rmse},
                                                       {"merged_rmse", all.rmse},
                                                       {"merged_lppd", all.lppd}};
          if (activation == "relu" && start == "prior")
            plot_lppd_traces(o.out / fmt::format("lppd_traces_cold_relu_{}.png", name), r.lppd_traces, r.converged_at,
                             r.dying, fmt::format("{} (split 0): cold-start NUTS, ReLU: expanding-window LPPD", name));
          write_markdown();
        }
    }
  }

  const std::string md = write_markdown();
  std::cout << md;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "dei_table3: " << e.what() << '\n';
  return 1;
}
