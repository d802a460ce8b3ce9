// Coverage of the 50/90/95% posterior intervals of every method, at its defaults, on an
// ill-conditioned Bayesian linear regression (issue 18, item 8).
//
// The model: y = w1 x1 + w2 x2 + w3 x3 + w4 x4 + b + N(0, 0.3^2) on n = 40 points, prior N(0, 3^2)
// on the 5 parameters, with x2 = x1 + N(0, 0.15^2) (w1 and w2 correlate at about -0.96 a
// posteriori) and x4 ~ N(0, 0.01^2) (w4's posterior sd is set by the prior, about 30x the others).
// Each replication draws w* from the prior and y from the model, fits through the fit service
// exactly as `uqnn fit --method M --arch '' --noise 0.3 --prior-sigma 3 --no-standardize` does,
// and counts how often the central interval of each parameter's draws holds w*. Averaged over
// the prior, an exact posterior's intervals cover at their nominal level (the "exact" row uses
// the closed-form posterior); a method that is too narrow covers less.
//
// Usage: coverage_blr [--replications R] [--methods m1,m2,...] [--out DIR]
//   writes DIR/coverage_blr.csv (method, level, coverage, standard error) and prints the table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "list_argument.hpp"
#include "uqnn/core/reporter.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"
#include "uqnn/diagnostics/statistics.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace {

using namespace uqnn;

constexpr double kNoiseSd = 0.3;
constexpr double kPriorSd = 3.0;
const std::vector<double> kLevels{0.5, 0.9, 0.95};

/// Inputs [4, n] of the ill-conditioned design (fixed across replications).
Mat design(Index n) {
  Rng rng(5);
  Mat X(4, n);
  for (Index i = 0; i < n; ++i) {
    X(0, i) = rng.uniform(-1.0, 1.0);
    X(1, i) = X(0, i) + 0.15 * rng.normal();
    X(2, i) = rng.uniform(0.0, 3.0);
    X(3, i) = 0.01 * rng.normal();
  }
  return X;
}

/// theta = [w1..w4, b] (the Linear model's nn.Linear order).
Mat features(const Mat& X) {
  Mat phi(X.cols(), 5);
  phi.leftCols(4) = X.transpose();
  phi.col(4).setOnes();
  return phi;
}

struct Tally {
  std::vector<long> hits = std::vector<long>(kLevels.size(), 0);
  long trials = 0;
  std::vector<std::string> warnings;
  long fits_warned = 0;
  std::map<std::string, long> fits_by_code;  // fits that gave each warning code
  // Against the exact posterior, per parameter, summed over replications: |mean error| in exact
  // posterior sds, and log(sd / exact sd).
  Vec abs_mean_error = Vec::Zero(5), log_sd_ratio = Vec::Zero(5);
  long replications = 0;
};

struct ExactPosterior {
  Vec mean;
  Mat covariance;
};

ExactPosterior exact_posterior(const Mat& phi, const Vec& y) {
  const Mat precision = phi.transpose() * phi / (kNoiseSd * kNoiseSd) + Mat::Identity(5, 5) / (kPriorSd * kPriorSd);
  ExactPosterior e;
  e.covariance = precision.inverse();
  e.mean = e.covariance * phi.transpose() * y / (kNoiseSd * kNoiseSd);
  return e;
}

/// Column k: the draws of parameter k ([draws, 5]; diagnostics' pooled statistics take columns).
/// Every draw as a row, [draws, 5].
Mat draw_matrix(const Draws& draws) {
  Mat m(draws.size(), 5);
  draws.for_each([&](Index s, const Vec& theta) { m.row(s) = theta.transpose(); });
  return m;
}

void compare_moments(const Mat& draws, const ExactPosterior& exact, Tally& t) {
  for (Index k = 0; k < draws.cols(); ++k) {
    const double exact_sd = std::sqrt(exact.covariance(k, k));
    t.abs_mean_error[k] += std::abs(diagnostics::mean(draws.col(k)) - exact.mean[k]) / exact_sd;
    t.log_sd_ratio[k] += std::log(std::max(diagnostics::sd(draws.col(k)) / exact_sd, 1e-300));
  }
  ++t.replications;
}

/// Central intervals of each parameter's draws (R's type-7 quantiles); adds whether each holds `truth`.
void count_draws(const Mat& draws, const Vec& truth, Tally& t) {
  for (Index k = 0; k < truth.size(); ++k) {
    for (std::size_t l = 0; l < kLevels.size(); ++l) {
      const double a = (1.0 - kLevels[l]) / 2.0;
      t.hits[l] += diagnostics::quantile(draws.col(k), a) <= truth[k] && truth[k] <= diagnostics::quantile(draws.col(k), 1.0 - a);
    }
    ++t.trials;
  }
}

/// The exact posterior's central intervals.
void count_exact(const ExactPosterior& exact, const Vec& truth, Tally& t) {
  for (Index k = 0; k < truth.size(); ++k) {
    for (std::size_t l = 0; l < kLevels.size(); ++l) {
      const double z = diagnostics::inverse_normal_cdf(0.5 + kLevels[l] / 2.0);
      t.hits[l] += std::abs(truth[k] - exact.mean[k]) <= z * std::sqrt(exact.covariance(k, k));
    }
    ++t.trials;
  }
}

/// "name" or "name:option=value;option=value" (e.g. rms:rms_variant=anchored): the fit's options.
nlohmann::json method_options(const std::string& spec) {
  const auto colon = spec.find(':');
  nlohmann::json options = {{"method", spec.substr(0, colon)}};
  if (colon == std::string::npos) return options;
  std::stringstream items(spec.substr(colon + 1));
  for (std::string item; std::getline(items, item, ';');) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("method option '" + item + "' is not name=value");
    const std::string value = item.substr(eq + 1);
    // Values as JSON (true, 3, 0.5); anything else is a string.
    options[item.substr(0, eq)] = nlohmann::json::accept(value) ? nlohmann::json::parse(value) : nlohmann::json(value);
  }
  return options;
}

int run(int argc, char** argv) {
  long replications = 200;
  std::vector<std::string> methods{"exact", "nuts", "laplace", "vi", "swag", "ens", "rms", "rms:rms_variant=anchored"};
  std::filesystem::path out = "coverage_blr";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("Usage: coverage_blr [--replications R (200)] [--methods exact,nuts,laplace,vi,swag,ens,rms,...] [--out DIR]\n"
                  "Coverage of each method's 50/90/95%% intervals, at its defaults, on an ill-conditioned Bayesian\n"
                  "linear regression with parameters drawn from the prior; writes DIR/coverage_blr.csv.\n"
                  "A method may carry options: rms:rms_variant=anchored, swag:batch_size=8;swag_steps=200.\n");
      return 0;
    }
    if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
    const std::string value = argv[++i];
    if (a == "--replications") replications = std::stol(value);
    else if (a == "--methods") methods = examples::split_list(value);
    else if (a == "--out") out = value;
    else throw std::invalid_argument("unknown option " + a + " (see --help)");
  }
  if (replications < 1) throw std::invalid_argument("--replications must be at least 1");
  std::filesystem::create_directories(out);
  const Index n = 40;
  const Mat X = design(n);
  const Mat phi = features(X);
  std::vector<Tally> tallies(methods.size());
  Rng truth_rng(20261126);
  for (long r = 0; r < replications; ++r) {
    const Vec truth = kPriorSd * truth_rng.normal_vector(5);
    Vec y = phi * truth;
    for (Index i = 0; i < n; ++i) y[i] += kNoiseSd * truth_rng.normal();
    Dataset data;
    data.inputs = X;
    data.targets = y.transpose();
    data.input_names = {"x1", "x2", "x3", "x4"};
    data.target_names = {"y"};
    data.source = "ill-conditioned regression";
    const ExactPosterior exact = exact_posterior(phi, y);
    for (std::size_t m = 0; m < methods.size(); ++m) {
      if (methods[m] == "exact") {
        count_exact(exact, truth, tallies[m]);
        continue;
      }
      nlohmann::json options = method_options(methods[m]);
      options.update({{"arch", std::vector<Index>{}},
                      {"noise", kNoiseSd},
                      {"prior_sigma", kPriorSd},
                      {"standardize", false},
                      {"seed", r},
                      {"quiet", true}});
      FitConfig config = fit_config_from_options(options);
      config.data.dataset = data;
      const FitProblem problem = make_fit_problem(config);
      const FitContext context{config, problem.posterior, problem.posterior->inputs(), problem.posterior->targets(), false,
                               make_silent_reporter()};
      const MethodResult result = run_method(context);
      const Mat draws = draw_matrix(result.draws);
      count_draws(draws, truth, tallies[m]);
      compare_moments(draws, exact, tallies[m]);
      for (const auto& w : result.warnings) tallies[m].warnings.push_back(w.message);
      tallies[m].fits_warned += result.warnings.empty() ? 0 : 1;
      std::set<std::string> codes;
      for (const auto& w : result.warnings) codes.insert(w.code);
      for (const auto& code : codes) ++tallies[m].fits_by_code[code];
    }
    if ((r + 1) % 20 == 0) std::fprintf(stderr, "replication %ld of %ld\n", r + 1, replications);
  }
  std::string csv = "method,level,coverage,standard_error,intervals,warned_fits\n";
  std::printf("%ld replications x 5 parameters; 2 standard errors of a coverage: %.3f at 95%%\n"
              "mean error: |mean - exact mean| / exact sd; sd ratio: sd / exact sd (geometric mean over replications),\n"
              "per parameter w1 w2 w3 w4 b (w1, w2 correlated at -0.96; w4 set by the prior)\n\n", replications,
              2.0 * std::sqrt(0.95 * 0.05 / (5.0 * static_cast<double>(replications))));
  std::printf("%-30s %6s %6s %6s   %-29s %-29s\n", "method", "50%", "90%", "95%", "mean error", "sd ratio");
  for (std::size_t m = 0; m < methods.size(); ++m) {
    const Tally& t = tallies[m];
    std::string row = fmt::format("{:<30}", methods[m]);
    for (std::size_t l = 0; l < kLevels.size(); ++l) {
      const double c = static_cast<double>(t.hits[l]) / static_cast<double>(t.trials);
      // Binomial standard error; the 5 parameters of a replication are not independent, so it is a
      // lower bound on the real one.
      const double se = std::sqrt(c * (1.0 - c) / static_cast<double>(t.trials));
      row += fmt::format(" {:6.3f}", c);
      csv += fmt::format("{},{},{:.4f},{:.4f},{},{}\n", methods[m], kLevels[l], c, se, t.trials, t.warnings.size());
    }
    if (t.replications > 0) {
      const double reps = static_cast<double>(t.replications);
      row += "  ";
      for (Index k = 0; k < 5; ++k) row += fmt::format(" {:5.2f}", t.abs_mean_error[k] / reps);
      row += "  ";
      for (Index k = 0; k < 5; ++k) row += fmt::format(" {:5.2f}", std::exp(t.log_sd_ratio[k] / reps));
    }
    std::printf("%s\n", row.c_str());
  }
  for (std::size_t m = 0; m < methods.size(); ++m)
    if (!tallies[m].warnings.empty()) {
      std::string codes;
      for (const auto& [code, n] : tallies[m].fits_by_code) codes += fmt::format("{}{} {}", codes.empty() ? "" : ", ", code, n);
      std::printf("\n%s warned in %ld fits (%s); the first: %s\n", methods[m].c_str(), tallies[m].fits_warned, codes.c_str(),
                  tallies[m].warnings.front().c_str());
    }
  atomic_write_text(out / "coverage_blr.csv", csv);
  std::printf("wrote %s\n", (out / "coverage_blr.csv").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return uqnn::examples::run_example("coverage_blr", run, argc, argv); }
