// DEI-MCMC (seed 003 sec. 7.2) and its function-space monitoring (App. B.2): LPPD and the
// expanding-window LPPD against a direct computation, the stopping rule (eq. 9) on synthetic
// traces, per-chain early stop in the driver, chains starting exactly at given / trained networks,
// merged posteriors keeping chain identity (in memory and in the fit's draws.csv), the Gaussian-NLL
// objective's gradient and the linear baseline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "../mcmc/test_models.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/draws_table.hpp"
#include "uqnn/diagnostics/layerwise.hpp"
#include "uqnn/diagnostics/lppd.hpp"
#include "uqnn/diagnostics/rhat.hpp"
#include "uqnn/plot/dei_figures.hpp"
#include "uqnn/hybrid/dei_mcmc.hpp"
#include "uqnn/hybrid/linear_baseline.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/optim/objective.hpp"
#include "uqnn/services/fit.hpp"

namespace uqnn {
namespace {

namespace fs = std::filesystem;

struct Tiny {
  std::shared_ptr<Posterior> posterior;
  Mat test_x, test_y;
};

/// y = sin(2x) + noise, 1-4-1 tanh MLP with a fixed-sigma (or heteroscedastic) Gaussian likelihood.
Tiny tiny_problem(bool heteroscedastic = false, Index n = 24) {
  Rng rng(7, 0);
  const auto make = [&](Index m, Mat& x, Mat& y) {
    x.resize(1, m);
    y.resize(1, m);
    for (Index i = 0; i < m; ++i) {
      x(0, i) = -2.0 + 4.0 * static_cast<double>(i) / static_cast<double>(m - 1) + 0.01 * rng.normal();
      y(0, i) = std::sin(2 * x(0, i)) + 0.1 * rng.normal();
    }
  };
  Mat x, y, tx, ty;
  make(n, x, y);
  make(7, tx, ty);
  const auto lik = heteroscedastic ? make_heteroscedastic_likelihood() : make_gaussian_likelihood(0.3);
  auto model = std::make_shared<Mlp>(MlpSpec{1, {4}, lik->model_outputs(1), Activation::Tanh, InitScheme::Glorot});
  auto prior = GaussianPrior::isotropic(model->num_params(), 1.0);
  return {std::make_shared<Posterior>(model, lik, prior, x, y), tx, ty};
}

/// Direct eq. 8: (1/n) sum_i log((1/l) sum_{l' <= l} exp(log_lik(l', i))) without log-sum-exp.
double direct_lppd(const Mat& log_lik, Index l) {
  double sum = 0;
  for (Index i = 0; i < log_lik.cols(); ++i) {
    double p = 0;
    for (Index s = 0; s < l; ++s) p += std::exp(log_lik(s, i));
    sum += std::log(p / static_cast<double>(l));
  }
  return sum / static_cast<double>(log_lik.cols());
}

TEST(DeiLppd, BatchAndExpandingWindowMatchDirectComputation) {
  Mat log_lik(4, 3);
  log_lik << -0.5, -1.0, -2.0,  //
      -0.7, -0.2, -3.5,         //
      -1.5, -0.9, -0.1,         //
      -0.3, -2.2, -1.1;
  EXPECT_NEAR(diagnostics::lppd(log_lik), direct_lppd(log_lik, 4), 1e-14);
  const Vec window = diagnostics::expanding_window_lppd(log_lik);
  ASSERT_EQ(window.size(), 4);
  for (Index l = 1; l <= 4; ++l) EXPECT_NEAR(window(l - 1), direct_lppd(log_lik, l), 1e-14) << "l = " << l;
  // Hand value of the first point with l = 2: log((e^-0.5 + e^-0.7) / 2).
  EXPECT_NEAR(diagnostics::pointwise_lppd(log_lik.topRows(2))(0), std::log((std::exp(-0.5) + std::exp(-0.7)) / 2), 1e-14);
}

TEST(DeiLppd, OnlineMonitorMatchesDirectComputationOnDraws) {
  const Tiny t = tiny_problem();
  LppdMonitor monitor(t.posterior, t.test_x, t.test_y);
  RunConfig config;
  config.num_chains = 2;
  monitor.on_begin(config);
  Rng rng(3, 0);
  std::vector<Vec> draws;
  for (int s = 0; s < 5; ++s) draws.push_back(t.posterior->sample_prior(rng) * 0.5);
  Mat log_lik(5, t.test_x.cols());
  DrawStats stats;
  for (int s = 0; s < 5; ++s) {
    log_lik.row(s) = t.posterior->pointwise_log_likelihood(draws[s], t.test_x, t.test_y).transpose();
    IterationEvent e;
    e.chain = 1;
    e.kept = true;
    e.draw_index = s;
    e.position = &draws[static_cast<std::size_t>(s)];
    e.stats = &stats;
    EXPECT_EQ(monitor.on_iteration(e), ObserverAction::Continue);
  }
  ASSERT_EQ(monitor.lppd_trace(1).size(), 5u);
  EXPECT_TRUE(monitor.lppd_trace(0).empty());
  for (Index l = 1; l <= 5; ++l) EXPECT_NEAR(monitor.lppd_trace(1)[l - 1], direct_lppd(log_lik, l), 1e-12);
  // LPL^(k,s) = log mean_i p(y_i | theta_s); the chain's predictive mean averages the draws.
  for (int s = 0; s < 5; ++s)
    EXPECT_NEAR(monitor.log_pointwise_likelihood(1)[s], std::log(log_lik.row(s).array().exp().mean()), 1e-12);
  Mat mean = Mat::Zero(1, t.test_x.cols());
  for (const auto& d : draws) mean += t.posterior->model().forward(d.head(t.posterior->model().num_params()), t.test_x) / 5.0;
  EXPECT_NEAR(monitor.chain_rmse(1), std::sqrt((mean - t.test_y).squaredNorm() / 7.0), 1e-12);
}

/// Oscillates +-1 for l <= 20, then is flat at 0.5: with window 5 and epsilon 0.01, eq. 9 first
/// holds at l = 26 (the window 21..25 is all 0.5; at l = 25 it still holds LPPD_20 = 1).
Vec synthetic_trace() {
  Vec trace(40);
  for (Index l = 1; l <= 40; ++l) trace(l - 1) = l <= 20 ? (l % 2 == 0 ? 1.0 : -1.0) : 0.5;
  return trace;
}

TEST(DeiStoppingRule, SyntheticTraces) {
  const Vec trace = synthetic_trace();
  EXPECT_EQ(diagnostics::lppd_converged_at(trace, 5, 0.01), Index{26});
  EXPECT_FALSE(diagnostics::lppd_settled(trace, 25, 5, 0.01));
  EXPECT_TRUE(diagnostics::lppd_settled(trace, 26, 5, 0.01));
  // A wide epsilon accepts the first testable point (l = window + 1) once the window mean is close:
  // window 1..5 of the oscillation has mean -0.2, LPPD_6 = 1 -> |-1.2| < 1.3.
  EXPECT_EQ(diagnostics::lppd_converged_at(trace, 5, 1.3), Index{6});
  // Never settles: a drift of 0.1 per step against epsilon 0.01.
  Vec drift(50);
  for (Index l = 0; l < 50; ++l) drift(l) = 0.1 * static_cast<double>(l);
  EXPECT_FALSE(diagnostics::lppd_converged_at(drift, 4, 0.01).has_value());
  // Converges like 1 - 1/l: compare with a brute-force evaluation of eq. 9.
  Vec slow(400);
  for (Index l = 1; l <= 400; ++l) slow(l - 1) = 1.0 - 1.0 / static_cast<double>(l);
  Index expected = -1;
  for (Index l = 11; l <= 400 && expected < 0; ++l) {
    double mean = 0;
    for (Index j = l - 10; j < l; ++j) mean += (1.0 - 1.0 / static_cast<double>(j)) / 10.0;
    if (std::abs(mean - (1.0 - 1.0 / static_cast<double>(l))) < 1e-3) expected = l;
  }
  ASSERT_GT(expected, 0);
  EXPECT_EQ(diagnostics::lppd_converged_at(slow, 10, 1e-3), expected);
}

/// Stops chain 1 alone after 10 kept draws.
class StopChainOne : public Observer {
 public:
  ObserverAction on_iteration(const IterationEvent& e) override {
    return e.chain == 1 && e.kept && e.draw_index == 9 ? ObserverAction::StopChain : ObserverAction::Continue;
  }
};

TEST(DeiStoppingRule, StopChainEndsOnlyThatChain) {
  const auto target = testing::correlated_gaussian();
  RunConfig c;
  c.num_chains = 3;
  c.num_threads = 2;
  c.num_warmup = 20;
  c.num_draws = 50;
  c.seed = 5;
  StopChainOne stop;
  const RunResult r = run_chains(c, make_sampler_factory(target, NutsConfig{}), Vec(target->mean()), {&stop});
  EXPECT_EQ(r.draws[0].rows(), 50);
  EXPECT_EQ(r.draws[1].rows(), 10);
  EXPECT_EQ(r.draws[2].rows(), 50);
  EXPECT_EQ(r.chain_stopped, (std::vector<bool>{false, true, false}));
  EXPECT_FALSE(r.interrupted);
}

DeiMcmcParams small_params(const std::string& start, Index chains) {
  DeiMcmcParams p;
  p.start = start;
  p.ensemble.members = chains;
  p.ensemble.training.epochs = 200;
  p.warmup = 30;
  p.draws = 40;
  p.threads = 2;
  p.ensemble.threads = 2;
  return p;
}

TEST(DeiMcmc, ChainsStartExactlyAtGivenNetworks) {
  const Tiny t = tiny_problem();
  Rng rng(11, 0);
  std::vector<Vec> starts;
  for (int c = 0; c < 3; ++c) starts.push_back(t.posterior->initial_point(rng));
  const DeiMcmcResult r = run_dei_mcmc(t.posterior, small_params("given", 3), 4, t.test_x, t.test_y, starts);
  ASSERT_EQ(r.run.num_chains(), 3);
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(r.run.initial_points[c] == starts[c]) << "chain " << c;  // bitwise
  EXPECT_THROW(run_dei_mcmc(t.posterior, small_params("given", 3), 4, t.test_x, t.test_y, {starts[0]}),
               std::invalid_argument);
}

TEST(DeiMcmc, ChainsStartAtTheTrainedMembersAndMergeKeepsChainIdentity) {
  const Tiny t = tiny_problem(/*heteroscedastic=*/true);
  DeiMcmcParams p = small_params("ensemble", 3);
  const DeiMcmcResult r = run_dei_mcmc(t.posterior, p, 9, t.test_x, t.test_y);
  ASSERT_EQ(r.members.size(), 3u);
  for (int c = 0; c < 3; ++c) EXPECT_TRUE(r.run.initial_points[c] == r.members[c].theta) << "chain " << c;
  // Members minimised the Gaussian NLL: better than their initialisation on the training data.
  for (const auto& m : r.members) EXPECT_LT(m.history.train_loss.back(), m.history.train_loss.front());
  ASSERT_EQ(r.lppd_traces.size(), 3u);
  for (const auto& trace : r.lppd_traces) EXPECT_EQ(trace.size(), 40u);
  // Merge: every draw labelled with its own chain; dropping chain 1 does not renumber chain 2.
  DeiMcmcResult copy = r;
  copy.kept = {true, false, true};
  const Draws draws = copy.merged();
  ASSERT_EQ(draws.size(), 80);
  ASSERT_EQ(draws.num_chains(), 2);
  for (Index k = 0; k < 2; ++k) {
    const DrawChain& chain = draws.chain(k);
    const auto c = static_cast<std::size_t>(chain.id);
    EXPECT_EQ(chain.id, 2 * k);
    EXPECT_TRUE(chain.values == r.run.draws[c]) << "chain " << c;
    ASSERT_EQ(chain.stats.size(), 40u);
    for (std::size_t d = 0; d < 40; ++d) EXPECT_EQ(chain.stats[d].lp, r.run.stats[c][d].lp) << "chain " << c << " draw " << d;
  }
  EXPECT_EQ(copy.merged(5).size(), 10);
}

TEST(DeiMcmc, MonitorStopsConvergedChainsAtTheRuleTime) {
  const Tiny t = tiny_problem();
  DeiMcmcParams p = small_params("ensemble", 2);
  p.draws = 300;
  p.monitor.window = 5;
  p.monitor.epsilon = 0.05;
  p.monitor.stop_converged = true;
  const DeiMcmcResult r = run_dei_mcmc(t.posterior, p, 2, t.test_x, t.test_y);
  for (int c = 0; c < 2; ++c) {
    ASSERT_TRUE(r.converged_at[c].has_value()) << "chain " << c;
    EXPECT_TRUE(r.stopped_early[c]);
    EXPECT_EQ(r.run.draws[c].rows(), *r.converged_at[c]);
    // The online decision equals the post-hoc rule on the recorded trace.
    const Vec trace = Eigen::Map<const Vec>(r.lppd_traces[c].data(), static_cast<Index>(r.lppd_traces[c].size()));
    EXPECT_EQ(diagnostics::lppd_converged_at(trace, 5, 0.05), r.converged_at[c]);
  }
  EXPECT_FALSE(r.run.interrupted);
}

TEST(DeiMcmc, ColdStartDrawsFromThePriorAndCountsDyingChains) {
  const Tiny t = tiny_problem();
  const DeiMcmcResult r = run_dei_mcmc(t.posterior, small_params("prior", 2), 3, t.test_x, t.test_y);
  EXPECT_TRUE(r.members.empty());
  Rng rng(3 + 1, 0);  // chain 0's stream: the prior draw is its first use
  EXPECT_TRUE(r.run.initial_points[0] == t.posterior->sample_prior(rng));
  int dying = 0;
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(r.dying[c], !(r.chain_rmse(c) < r.linear_model_rmse));
    dying += r.dying[c] ? 1 : 0;
  }
  EXPECT_EQ(r.num_dying, dying);
}

TEST(DeiMcmc, NegativeLogLikelihoodObjectiveGradientMatchesFiniteDifferences) {
  const Tiny t = tiny_problem(/*heteroscedastic=*/true);
  NegativeLogLikelihoodObjective objective(t.posterior, t.posterior->inputs(), t.posterior->targets());
  Rng rng(1, 0);
  const Vec theta = t.posterior->initial_point(rng);
  const IndexVec batch{0, 3, 5, 11};
  Vec grad;
  const double value = objective.loss_and_grad(theta, batch, grad);
  const Mat X = gather_columns(t.posterior->inputs(), batch), Y = gather_columns(t.posterior->targets(), batch);
  EXPECT_NEAR(value, -t.posterior->log_likelihood(theta, X, Y) / 4.0, 1e-12);
  for (Index k = 0; k < theta.size(); ++k) {
    Vec plus = theta, minus = theta, g;
    plus(k) += 1e-6;
    minus(k) -= 1e-6;
    const double fd = (objective.loss_and_grad(plus, batch, g) - objective.loss_and_grad(minus, batch, g)) / 2e-6;
    EXPECT_NEAR(grad(k), fd, 1e-6 * (1 + std::abs(fd))) << k;
  }
}

TEST(DeiMcmc, LinearBaselineRecoversAnExactLinearModel) {
  Mat x(2, 10), y(1, 10);
  for (Index i = 0; i < 10; ++i) {
    x(0, i) = static_cast<double>(i);
    x(1, i) = std::sin(static_cast<double>(i));
    y(0, i) = 1.5 - 2.0 * x(0, i) + 0.5 * x(1, i) + (i % 2 == 0 ? 0.1 : -0.1);
  }
  const LinearBaseline lm = LinearBaseline::fit(x, y);
  EXPECT_LT(lm.rmse(x, y), 0.1 + 1e-9);
  // LPPD of a Gaussian with the ML sigma: -log(sigma) - 0.5 log(2 pi) - 0.5.
  const double s = lm.sigma()(0);
  EXPECT_NEAR(lm.lppd(x, y), -std::log(s) - 0.5 * std::log(2 * M_PI) - 0.5, 1e-10);
}

TEST(DeiMcmc, LayerwiseDiagnosticsNameEveryBlock) {
  const Tiny t = tiny_problem();
  const DeiMcmcResult r = run_dei_mcmc(t.posterior, small_params("ensemble", 2), 5, t.test_x, t.test_y);
  const auto layers = diagnostics::layerwise_diagnostics(r.run.draws, t.posterior->layout(), 4);
  ASSERT_EQ(layers.size(), t.posterior->layout().blocks().size());
  for (std::size_t b = 0; b < layers.size(); ++b) {
    EXPECT_EQ(layers[b].block, t.posterior->layout().blocks()[b].name);
    EXPECT_GE(layers[b].rhat_max, layers[b].rhat_mean);
    EXPECT_GT(layers[b].ess_bulk_mean, 0.0);
  }
}

TEST(DeiMcmc, ColumnwiseRhatIsTheRankNormalizedRhatOfEachColumnAcrossChains) {
  // 3 chains of unequal length (cut to the shortest, 60), 3 columns: mixed, separated, mixed again.
  Rng rng(11, 0);
  std::vector<Mat> chains;
  for (int c = 0; c < 3; ++c) {
    Mat m(60 + 10 * c, 3);
    for (Index s = 0; s < m.rows(); ++s) {
      m(s, 0) = rng.normal();
      m(s, 1) = rng.normal() + 5.0 * c;  // every chain in its own mode
      m(s, 2) = 2.0 * rng.normal() + 1.0;
    }
    chains.push_back(m);
  }
  const Vec r = diagnostics::columnwise_rhat(chains);
  ASSERT_EQ(r.size(), 3);
  for (Index k = 0; k < 3; ++k) {
    Mat x(60, 3);
    for (int c = 0; c < 3; ++c) x.col(c) = chains[static_cast<std::size_t>(c)].col(k).head(60);
    EXPECT_DOUBLE_EQ(r(k), diagnostics::rank_normalized_rhat(x, 2).max) << "column " << k;
  }
  EXPECT_LT(r(0), 1.1);
  EXPECT_GT(r(1), 2.0);
  EXPECT_LT(r(2), 1.1);
  EXPECT_THROW(diagnostics::columnwise_rhat({chains[0]}), std::invalid_argument);
}

/// DIR/data.csv: 30 points of y = sin(x / 2) on [0, 2.9] (the fit-service tests' data).
void write_sine_csv(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream csv(dir / "data.csv");
  csv << "x,y\n";
  for (int i = 0; i < 30; ++i) csv << (i / 10.0) << ',' << std::sin(i / 5.0) << '\n';
}

TEST(DeiMcmc, FitServiceWritesMergedDrawsWithChainIdentity) {
  const fs::path dir = fs::temp_directory_path() / ("uqnn_dei_" + std::to_string(::getpid()));
  write_sine_csv(dir);
  run_fit(fit_config_from_options({{"data", (dir / "data.csv").string()},
                           {"arch", {3}},
                           {"method", "dei-nuts"},
                           {"epochs", 50},
                           {"warmup", 10},
                           {"draws", 16},
                           {"threads", 2},
                           {"out", (dir / "out").string()},
                           {"figure", "none"},
                           {"members", 3}}));
  const nlohmann::json chains = nlohmann::json::parse(std::ifstream(dir / "out" / "dei_chains.json"));
  ASSERT_EQ(chains.at("chains").size(), 3u);
  // draws.csv: columns chain, draw, parameters; every kept chain's 16 draws under its own index.
  std::ifstream in(dir / "out" / "draws.csv");
  std::string line;
  std::getline(in, line);
  std::map<int, int> count;
  while (std::getline(in, line)) ++count[std::stoi(line.substr(0, line.find(',')))];
  EXPECT_EQ(count, (std::map<int, int>{{0, 16}, {1, 16}, {2, 16}}));
  // `uqnn diagnose DIR`: the chain table and one row per ParamLayout block.
  const std::string report = diagnose_dei_run(dir / "out", "none");
  EXPECT_NE(report.find("converged_at"), std::string::npos) << report;
  EXPECT_NE(report.find("function-space R-hat^(2) of the held-out LPL over 3 kept chains x 16 draws"), std::string::npos) << report;
  // Per-point function-space R-hat (App. B.2): one value per held-out point (here the 30 training rows).
  ASSERT_TRUE(chains.contains("rhat"));
  EXPECT_EQ(chains.at("rhat").at("function_space").size(), 30u);
  EXPECT_EQ(chains.at("rhat").at("parameter_space").size(), 11u);  // 1-3-1 MLP + log sigma
  EXPECT_NE(report.find("function space (per held-out point): R-hat^(2) median"), std::string::npos) << report;
  for (const char* block : {"layer1.weight", "layer1.bias", "layer2.weight", "layer2.bias", "likelihood.log_sigma"})
    EXPECT_NE(report.find(block), std::string::npos) << block << "\n" << report;
  fs::remove_all(dir);
}

TEST(DeiMcmc, FitServiceStartsChainsAtTheNetworksOfAnEarlierFit) {
  const fs::path dir = fs::temp_directory_path() / ("uqnn_dei_given_" + std::to_string(::getpid()));
  write_sine_csv(dir);
  nlohmann::json options = {{"data", (dir / "data.csv").string()}, {"arch", {3}}, {"epochs", 50}, {"figure", "none"}};
  nlohmann::json ens = options;
  ens.update({{"method", "ens"}, {"ens_members", 2}, {"out", (dir / "ens").string()}});
  run_fit(fit_config_from_options(ens));
  // The ensemble's networks as written in draws.csv (chain, draw, parameters).
  const CsvTable written = read_csv(dir / "ens" / "draws.csv");
  ASSERT_EQ(written.num_rows(), 2);
  options.update({{"method", "dei-nuts"}, {"dei_start", "given"}, {"members", 3} /* 3 chains cycle through the 2 networks */,
                  {"warmup", 5}, {"draws", 5}, {"threads", 1}, {"out", (dir / "dei").string()}});
  nlohmann::json dei = options;
  dei["dei_init"] = (dir / "ens").string();
  run_fit(fit_config_from_options(dei));
  const nlohmann::json chains = nlohmann::json::parse(std::ifstream(dir / "dei" / "dei_chains.json")).at("chains");
  ASSERT_EQ(chains.size(), 3u);
  for (std::size_t c = 0; c < 3; ++c) {
    const auto start = chains[c].at("start").get<std::vector<double>>();
    const Index row = static_cast<Index>(c % 2);
    ASSERT_EQ(static_cast<Index>(start.size()), written.num_columns() - 2);
    for (std::size_t k = 0; k < start.size(); ++k)
      EXPECT_DOUBLE_EQ(start[k], written.values(row, static_cast<Index>(k) + 2)) << "chain " << c << " parameter " << k;
  }
  // Without --dei-init, or with a file of another model, a clear error.
  EXPECT_THROW(run_fit(fit_config_from_options(options)), InputError);
  dei["arch"] = {4};
  EXPECT_THROW(run_fit(fit_config_from_options(dei)), InputError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace uqnn
