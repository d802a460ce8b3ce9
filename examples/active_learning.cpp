// Active learning with posterior uncertainty (issue 20, item 8; seed 004's applications): a
// regression model is refitted as labels arrive, and each round labels the pool points the
// posterior is least sure about.
//
// Acquisition, for a pool point x with draws theta_s (predictive/acquisition.hpp):
//   - random:       a uniformly random pool point (the baseline);
//   - max-variance: the largest epistemic variance Var_s[mu(x; theta_s)];
//   - bald:         the largest mutual information between y and theta (Houlsby et al. 2011),
//                   I = H[p(y | x)] - E_s H[p(y | x, theta_s)], with the predictive mixture's entropy
//                   taken as that of a Gaussian of the same variance:
//                   I ~ 0.5 log(Var_s[mu_s] + E_s[sigma_s^2]) - E_s[0.5 log sigma_s^2].
//                   (With a homoscedastic noise sd that varies little across draws this ranks points
//                   as max-variance does; the two differ where the draws disagree about the noise.)
// A round labels the `--batch` highest-scoring points (greedy top-B). Each fit is `uqnn fit --method
// M` on the labelled rows at the method's defaults, except nuts's chains (2 x (500 + 500) here to
// keep the example's ~120 fits in minutes; `--nuts-draws` changes it).
//
// Usage: active_learning [--data sine|PATH.csv] [--methods ens,nuts] [--strategies random,max-variance,bald]
//                        [--initial N] [--batch B] [--rounds T] [--repeats R] [--out DIR]
//   writes DIR/active_learning.csv (method, strategy, repeat, labels, test RMSE, NLL, seconds) and
//   DIR/active_learning.png (mean test RMSE and NLL against the number of labels).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "list_argument.hpp"
#include "uqnn/core/reporter.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/data/synthetic.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/predictive/acquisition.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace {

using namespace uqnn;

struct Settings {
  std::string data = "sine";
  std::vector<std::string> methods{"ens", "nuts"};
  std::vector<std::string> strategies{"random", "max-variance", "bald"};
  Index initial = 10, batch = 2, rounds = 15;
  int repeats = 3;
  Index nuts_draws = 500;
  std::filesystem::path out = "active_learning";
};

/// 1-D regression with a gap to fill: y = sin(3x) + 0.3 x + N(0, 0.1^2) on 200 points of [-3, 3].
Dataset sine_data() {
  Rng rng(8);
  Dataset d;
  const Index n = 200;
  d.inputs.resize(1, n);
  d.targets.resize(1, n);
  for (Index i = 0; i < n; ++i) {
    const double x = rng.uniform(-3.0, 3.0);
    d.inputs(0, i) = x;
    d.targets(0, i) = std::sin(3.0 * x) + 0.3 * x + 0.1 * rng.normal();
  }
  d.input_names = {"x"};
  d.target_names = {"y"};
  d.source = "sine";
  return d;
}

struct Scores {
  double rmse = 0, nll = 0;
};

/// Fits `method` on `labelled` rows of `data`; returns the test metrics and, for every pool row, its
/// acquisition score under `strategy` (random draws uniform scores from `rng`).
Scores fit_and_score(const Settings& s, const std::string& method, const std::string& strategy, const Dataset& data,
                     const IndexVec& labelled, const IndexVec& pool, const IndexVec& test, std::uint64_t seed, Rng& rng,
                     std::vector<double>& pool_scores) {
  nlohmann::json options = {{"method", method}, {"seed", seed}, {"quiet", true}, {"figure", "none"}};
  if (method == "nuts") options.update({{"chains", 2}, {"warmup", s.nuts_draws}, {"draws", s.nuts_draws}});
  FitConfig config = fit_config_from_options(options);
  config.data.dataset = data.subset(labelled);
  const FitProblem problem = make_fit_problem(config);
  const FitContext context{config, problem.posterior, problem.posterior->inputs(), problem.posterior->targets(), false,
                           make_silent_reporter()};
  const MethodResult result = run_method(context);
  const Posterior& post = *problem.posterior;
  const Model& model = result.posterior ? result.posterior->model() : post.model();
  const Likelihood& likelihood = result.posterior ? result.posterior->likelihood() : post.likelihood();

  // Test metrics in the target's units.
  const Dataset test_data = data.subset(test);
  const Mat test_std = problem.standardizer.transform_inputs(test_data.inputs);
  const PredictiveDraws test_draws = predict_draws(model, likelihood, result.draws, test_std);
  PredictiveSummary summary = summarize_predictive(test_draws, {0.95}, rng);
  rescale_summary(summary, problem.standardizer.target_mean(), problem.standardizer.target_scale());
  const double log_scale = problem.standardizer.target_scale().array().log().sum();
  const RegressionMetrics m = regression_metrics(test_draws, summary, problem.standardizer.transform_targets(test_data.targets),
                                                 test_data.targets, log_scale);

  pool_scores.assign(pool.size(), 0.0);
  if (strategy == "random") {
    for (double& v : pool_scores) v = rng.uniform();
  } else {
    const PredictiveDraws d = predict_draws(model, likelihood, result.draws, problem.standardizer.transform_inputs(data.subset(pool).inputs));
    const Vec score = strategy == "max-variance" ? epistemic_variance(d) : bald_score(d);
    pool_scores.assign(score.data(), score.data() + score.size());
  }
  return {m.rmse, m.nll};
}

int run(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("Usage: active_learning [--data sine|PATH.csv] [--methods ens,nuts] [--strategies random,max-variance,bald]\n"
                  "                       [--initial N (10)] [--batch B (2)] [--rounds T (15)] [--repeats R (3)]\n"
                  "                       [--nuts-draws D (500)] [--out DIR (active_learning)]\n"
                  "Refits each method as labels arrive, choosing the next pool points at random, by the largest\n"
                  "epistemic variance, or by BALD; writes DIR/active_learning.csv and DIR/active_learning.png.\n");
      return 0;
    }
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--data") s.data = v;
    else if (a == "--methods") s.methods = examples::split_list(v);
    else if (a == "--strategies") s.strategies = examples::split_list(v);
    else if (a == "--initial") s.initial = std::stol(v);
    else if (a == "--batch") s.batch = std::stol(v);
    else if (a == "--rounds") s.rounds = std::stol(v);
    else if (a == "--repeats") s.repeats = std::stoi(v);
    else if (a == "--nuts-draws") s.nuts_draws = std::stol(v);
    else if (a == "--out") s.out = v;
    else throw std::invalid_argument("unknown option " + a + " (see --help)");
  }
  for (const auto& st : s.strategies)
    if (st != "random" && st != "max-variance" && st != "bald")
      throw std::invalid_argument("--strategies: '" + st + "' is not known: valid are random, max-variance, bald");
  if (s.initial < 2 || s.batch < 1 || s.rounds < 0 || s.repeats < 1)
    throw std::invalid_argument("--initial must be >= 2, --batch >= 1, --rounds >= 0 and --repeats >= 1");
  const Dataset data = s.data == "sine" ? sine_data() : load_dataset(s.data);
  const Index n = data.size();
  const Index num_test = n / 4;
  if (s.initial + s.rounds * s.batch > n - num_test)
    throw std::invalid_argument(fmt::format("--initial + --rounds x --batch = {} labels, more than the {} pool rows",
                                            s.initial + s.rounds * s.batch, n - num_test));
  std::filesystem::create_directories(s.out);

  std::string csv = "method,strategy,repeat,labels,test_rmse,test_nll,seconds\n";
  // (method, strategy) -> per round: sums of RMSE and NLL over repeats.
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<double, double>>> curves;
  for (int r = 0; r < s.repeats; ++r) {
    // A test quarter and the initial labels, the same for every method and strategy of a repeat.
    Rng split_rng(1000 + static_cast<std::uint64_t>(r));
    const IndexVec order = split_rng.permutation(n);
    const IndexVec test(order.begin(), order.begin() + num_test);
    const IndexVec initial(order.begin() + num_test, order.begin() + num_test + s.initial);
    const IndexVec initial_pool(order.begin() + num_test + s.initial, order.end());
    for (const auto& method : s.methods)
      for (const auto& strategy : s.strategies) {
        IndexVec labelled = initial, pool = initial_pool;
        Rng rng(2000 + static_cast<std::uint64_t>(r), std::hash<std::string>{}(strategy) % 1000);
        auto& curve = curves[{method, strategy}];
        curve.resize(static_cast<std::size_t>(s.rounds + 1), {0.0, 0.0});
        for (Index round = 0; round <= s.rounds; ++round) {
          const auto start = std::chrono::steady_clock::now();
          std::vector<double> scores;
          const Scores m = fit_and_score(s, method, strategy, data, labelled, pool, test, static_cast<std::uint64_t>(r), rng, scores);
          const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          curve[static_cast<std::size_t>(round)].first += m.rmse / s.repeats;
          curve[static_cast<std::size_t>(round)].second += m.nll / s.repeats;
          csv += fmt::format("{},{},{},{},{:.6g},{:.6g},{:.3f}\n", method, strategy, r, labelled.size(), m.rmse, m.nll, seconds);
          std::fprintf(stderr, "%s %s repeat %d: %zu labels, test RMSE %.4f, NLL %.4f (%.1f s)\n", method.c_str(), strategy.c_str(), r,
                       labelled.size(), m.rmse, m.nll, seconds);
          if (round == s.rounds) break;
          // Label the batch of highest scores (stable order: ties go to the earlier pool row).
          IndexVec by_score(pool.size());
          std::iota(by_score.begin(), by_score.end(), 0);
          std::stable_sort(by_score.begin(), by_score.end(),
                           [&](Index a, Index b) { return scores[static_cast<std::size_t>(a)] > scores[static_cast<std::size_t>(b)]; });
          IndexVec chosen(by_score.begin(), by_score.begin() + s.batch);
          std::sort(chosen.rbegin(), chosen.rend());  // erase from the back
          for (Index j : chosen) {
            labelled.push_back(pool[static_cast<std::size_t>(j)]);
            pool.erase(pool.begin() + j);
          }
        }
      }
  }
  atomic_write_text(s.out / "active_learning.csv", csv);

  plot::Figure figure(1, 2);
  const std::string name = s.data == "sine" ? "sine" : std::filesystem::path(s.data).stem().string();
  figure.title(fmt::format("Active learning on {}: test error against labels (mean of {} repeats)", name, s.repeats));
  auto& rmse_panel = figure.panel(0, 0).x_label("labelled points").y_label("test RMSE").title("RMSE");
  auto& nll_panel = figure.panel(0, 1).x_label("labelled points").y_label("test NLL").title("NLL");
  const plot::Dash dashes[] = {plot::Dash::Solid, plot::Dash::Dashed, plot::Dash::Dotted, plot::Dash::DashDot};
  const char* colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7"};
  for (std::size_t mi = 0; mi < s.methods.size(); ++mi)
    for (std::size_t si = 0; si < s.strategies.size(); ++si) {
      const auto& curve = curves[{s.methods[mi], s.strategies[si]}];
      Vec labels(static_cast<Index>(curve.size())), rmse(labels.size()), nll(labels.size());
      for (std::size_t t = 0; t < curve.size(); ++t) {
        labels[static_cast<Index>(t)] = static_cast<double>(s.initial + static_cast<Index>(t) * s.batch);
        rmse[static_cast<Index>(t)] = curve[t].first;
        nll[static_cast<Index>(t)] = curve[t].second;
      }
      plot::Style style;
      style.colour = colours[si % 4];
      style.dash = dashes[mi % 4];
      const std::string label = s.methods[mi] + " " + s.strategies[si];
      rmse_panel.line(labels, rmse, label, style);
      nll_panel.line(labels, nll, label, style);
    }
  // A model fitted to the first few labels can have an NLL orders of magnitude above the rest (a
  // deep ensemble's noise sd from 10 points): the NLL axis shows up to the 90th percentile of the curves.
  std::vector<double> all_nll;
  for (const auto& [key, curve] : curves)
    for (const auto& point : curve) all_nll.push_back(point.second);
  std::sort(all_nll.begin(), all_nll.end());
  const double lowest = all_nll.front(), high = all_nll[all_nll.size() * 9 / 10];
  nll_panel.y_range(lowest - 0.1 * (high - lowest) - 0.05, high + 0.1 * (high - lowest) + 0.05);
  figure.save(s.out / "active_learning.png");
  std::printf("wrote %s and %s\n", (s.out / "active_learning.csv").c_str(), (s.out / "active_learning.png").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return uqnn::examples::run_example("active_learning", run, argc, argv); }
