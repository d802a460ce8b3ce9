#pragma once
// Known posteriors for the MCMC tests: a correlated Gaussian and conjugate Bayesian linear
// regression (closed form), and the check |estimate - truth| / MCSE < z (Bonferroni).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/posterior.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/run_chains.hpp"
#include "uqnn/services/fit.hpp"

namespace uqnn::testing {

/// Bayesian linear regression y = w1 x1 + w2 x2 + w3 x3 + w4 x4 + b + N(0, 0.3^2), prior N(0, 3^2),
/// with x2 = x1 + small noise and a weakly identified x4: w1 and w2 correlate below -0.9 a
/// posteriori and the sds are more than 20x apart. Its exact Gaussian posterior comes with it.
struct IllConditionedRegression {
  std::shared_ptr<Posterior> posterior;
  Vec mean;
  Mat covariance;
};

inline IllConditionedRegression ill_conditioned_regression() {
  const Index n = 40;
  const double sigma = 0.3, tau = 3.0;
  Rng rng(5);
  Mat X(4, n), Y(1, n);
  for (Index i = 0; i < n; ++i) {
    X(0, i) = rng.uniform(-1.0, 1.0);
    X(1, i) = X(0, i) + 0.15 * rng.normal();
    X(2, i) = rng.uniform(0.0, 3.0);
    X(3, i) = 0.01 * rng.normal();  // a weakly identified input: its weight's sd is set by the prior
    Y(0, i) = 0.8 * X(0, i) + 0.5 * X(1, i) - 0.3 * X(2, i) + 1.0 + sigma * rng.normal();
  }
  auto model = std::make_shared<Mlp>(Mlp::linear(4, 1));
  IllConditionedRegression r;
  r.posterior = std::make_shared<Posterior>(model, make_gaussian_likelihood(sigma),
                                            GaussianPrior::isotropic(model->num_params(), tau), X, Y);
  Mat phi(n, 5);
  phi.leftCols(4) = X.transpose();
  phi.col(4).setOnes();
  const Mat precision = phi.transpose() * phi / (sigma * sigma) + Mat::Identity(5, 5) / (tau * tau);
  r.covariance = precision.inverse();
  r.mean = r.covariance * (phi.transpose() * Y.row(0).transpose()) / (sigma * sigma);
  return r;
}

/// log N(x | mean, covariance) up to a constant.
class GaussianDensity : public LogDensity {
 public:
  GaussianDensity(Vec mean, Mat covariance)
      : mean_(std::move(mean)), covariance_(std::move(covariance)), precision_(covariance_.inverse()) {}
  Index dim() const override { return mean_.size(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override {
    const Vec d = theta - mean_;
    grad.noalias() = -precision_ * d;
    return 0.5 * d.dot(grad);
  }
  const Vec& mean() const { return mean_; }
  const Mat& covariance() const { return covariance_; }

 private:
  Vec mean_;
  Mat covariance_, precision_;
};

/// The correlated 3-D Gaussian used by every kernel test: sds (1, 2, 0.5), correlations 0.8, -0.3, 0.2.
inline std::shared_ptr<GaussianDensity> correlated_gaussian() {
  Vec mean(3);
  mean << 1.0, -2.0, 0.5;
  Vec sd(3);
  sd << 1.0, 2.0, 0.5;
  Mat corr(3, 3);
  corr << 1.0, 0.8, -0.3, 0.8, 1.0, 0.2, -0.3, 0.2, 1.0;
  return std::make_shared<GaussianDensity>(mean, sd.asDiagonal() * corr * sd.asDiagonal());
}

/// Conjugate Bayesian linear regression y = w^T x + b + N(0, sigma^2), theta = (w1, w2, b) ~ N(0, tau^2 I),
/// built from the library's Mlp::linear, GaussianPrior and Gaussian likelihood, with its closed-form posterior.
struct LinearRegression {
  std::shared_ptr<Posterior> posterior;
  Vec mean;
  Mat covariance;
};

/// `arithmetic` sets the network's precision (Model::precision); the closed form is the same.
inline LinearRegression linear_regression(std::uint64_t seed = 7, Precision arithmetic = Precision::Float64) {
  const Index n = 20;
  const double sigma = 0.5, tau = 2.0;
  Rng rng(seed);
  Mat X(2, n), Y(1, n);
  for (Index i = 0; i < n; ++i) {
    X(0, i) = rng.uniform(0.0, 2.0);  // not centred: the slope and the bias are correlated
    X(1, i) = rng.uniform(-1.0, 1.0);
    Y(0, i) = 0.7 * X(0, i) - 0.4 * X(1, i) + 0.3 + sigma * rng.normal();
  }
  auto model = std::make_shared<Mlp>(Mlp::linear(2, 1));
  model->set_precision(arithmetic);
  auto prior = GaussianPrior::isotropic(model->num_params(), tau);
  LinearRegression out;
  out.posterior = std::make_shared<Posterior>(model, make_gaussian_likelihood(sigma), prior, X, Y);
  // theta = (layer1.weight[0,0], layer1.weight[0,1], layer1.bias[0]); design rows (x1, x2, 1).
  Mat phi(n, 3);
  phi.leftCols(2) = X.transpose();
  phi.col(2).setOnes();
  const Mat precision = phi.transpose() * phi / (sigma * sigma) + Mat::Identity(3, 3) / (tau * tau);
  out.covariance = precision.inverse();
  out.mean = out.covariance * (phi.transpose() * Y.row(0).transpose()) / (sigma * sigma);
  return out;
}

/// Checks every mean, every variance and the (0, 1) covariance (the correlation, times the true
/// sds) against the truth: |estimate - truth| / MCSE < z with z the Bonferroni-corrected two-sided
/// normal quantile at family-wise level alpha. MCSE is diagnostics::mcse_mean of x, of (x - mu)^2
/// and of (x0 - mu0)(x1 - mu1). Also requires each MCSE below 10% of the target's sd so a test
/// cannot pass on a useless chain. Returns the largest |error| / MCSE.
/// The hard Gaussian of the defaults tests: sds 100, 1 and 5 (100x apart), corr(x0, x1) = 0.98,
/// corr(x0, x2) = -0.3, corr(x1, x2) = -0.2.
inline std::shared_ptr<GaussianDensity> hard_gaussian() {
  Vec mean(3), sd(3);
  mean << 50.0, -1.0, 3.0;
  sd << 100.0, 1.0, 5.0;
  Mat corr(3, 3);
  corr << 1.0, 0.98, -0.3, 0.98, 1.0, -0.2, -0.3, -0.2, 1.0;
  return std::make_shared<GaussianDensity>(mean, sd.asDiagonal() * corr * sd.asDiagonal());
}

/// What `uqnn fit` runs at its defaults: 4 chains x (1000 warmup + 1000 draws) of `config`, each
/// starting at `start` plus U(-spread, spread) in every coordinate.
/// The default of a chain option (warmup, draws, chains) as `uqnn fit --method <method>` gives it.
inline Index method_default(const std::string& method, const std::string& option) {
  for (const OptionGroup& g : fit_option_groups(method))
    if (const OptionSpec* o = g.find(option)) return o->default_value.get<Index>();
  throw std::invalid_argument(method + " has no option " + option);
}

/// `method`'s default run: its chains, warmup and draws, two threads.
inline RunResult run_at_defaults(std::shared_ptr<const LogDensity> target, const SamplerConfig& config, const Vec& start,
                                 double spread, std::uint64_t seed, const std::string& method) {
  RunConfig run;
  run.num_chains = method_default(method, "chains");
  run.num_threads = 2;
  run.num_warmup = method_default(method, "warmup");
  run.num_draws = method_default(method, "draws");
  run.seed = seed;
  InitialPointFn init = [start, spread](int, Rng& rng) {
    Vec x = start;
    for (Index i = 0; i < x.size(); ++i) x[i] += spread * rng.uniform(-1.0, 1.0);
    return x;
  };
  return run_chains(run, make_sampler_factory(std::move(target), config), init);
}

inline double expect_matches_gaussian(const RunResult& run, const Vec& mean, const Mat& covariance,
                                      double alpha = 0.01) {
  const Index d = mean.size();
  const int num_tests = static_cast<int>(2 * d + 1);
  const double z = diagnostics::inverse_normal_cdf(1.0 - alpha / (2.0 * num_tests));
  double worst = 0.0;
  auto check = [&](const Mat& draws, double truth, double scale, const std::string& what) {
    const double estimate = draws.mean();
    const double mcse = diagnostics::mcse_mean(draws);
    const double ratio = std::abs(estimate - truth) / mcse;
    worst = std::max(worst, ratio);
    EXPECT_LT(ratio, z) << what << ": estimate " << estimate << " truth " << truth << " mcse " << mcse;
    EXPECT_LT(mcse, 0.1 * scale) << what << ": chain too inefficient (mcse " << mcse << ")";
  };
  for (Index i = 0; i < d; ++i) {
    const Mat x = run.coordinate(i);
    const double sd = std::sqrt(covariance(i, i));
    check(x, mean[i], sd, "mean[" + std::to_string(i) + "]");
    const Mat sq = (x.array() - mean[i]).square().matrix();
    check(sq, covariance(i, i), std::sqrt(2.0) * covariance(i, i), "variance[" + std::to_string(i) + "]");
  }
  const Mat cross = ((run.coordinate(0).array() - mean[0]) * (run.coordinate(1).array() - mean[1])).matrix();
  const double sd_cross = std::sqrt(covariance(0, 0) * covariance(1, 1) + covariance(0, 1) * covariance(0, 1));
  check(cross, covariance(0, 1), sd_cross, "covariance[0,1]");
  return worst;
}

}  // namespace uqnn::testing
