// Priors on a learned noise sd (--noise-prior): the density of s = log sigma with the Jacobian of
// the log transform, its derivatives, units, parsing; the flat prior on the weights.
#include <gtest/gtest.h>

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/prob/likelihood.hpp"
#include "uqnn/prob/prior.hpp"

namespace uqnn {
namespace {

std::vector<NoiseSdPrior> proper_priors() {
  return {NoiseSdPrior::parse("lognormal:-0.5,0.7", "--noise-prior"), NoiseSdPrior::parse("halfnormal:2.5", "--noise-prior"),
          NoiseSdPrior::parse("halfcauchy:0.3", "--noise-prior")};
}

TEST(NoiseSdPrior, DensityOfLogSigmaIntegratesToOne) {
  // Integrating exp(log p_s) over s checks the Jacobian term and the normalising constant at once:
  // without the "+ s" the integrand is a density of sigma, not of log sigma, and the integral is not 1.
  for (const NoiseSdPrior& p : proper_priors()) {
    double total = 0.0;
    const double h = 1e-3;
    for (double s = -40.0; s < 40.0; s += h) total += std::exp(p.log_density(s, nullptr)) * h;
    EXPECT_NEAR(total, 1.0, 2e-3) << p.to_string();  // the half-Cauchy's tail beyond e^40 is ~1e-18
  }
}

TEST(NoiseSdPrior, DerivativesMatchFiniteDifferences) {
  std::vector<NoiseSdPrior> priors = proper_priors();
  priors.push_back(NoiseSdPrior::parse("flat", "--noise-prior"));
  for (const NoiseSdPrior& p : priors)
    for (double s : {-3.0, -0.4, 0.0, 0.9, 2.5}) {
      double grad = 0.0;
      p.log_density(s, &grad);
      const double h = 1e-5;
      const double fd = (p.log_density(s + h, nullptr) - p.log_density(s - h, nullptr)) / (2 * h);
      EXPECT_NEAR(grad, fd, 1e-6 * std::max(1.0, std::abs(fd))) << p.to_string() << " at " << s;
      double gp = 0.0, gm = 0.0;
      p.log_density(s + h, &gp);
      p.log_density(s - h, &gm);
      EXPECT_NEAR(p.second_derivative(s), (gp - gm) / (2 * h), 1e-5 * std::max(1.0, std::abs(gp))) << p.to_string();
    }
}

TEST(NoiseSdPrior, HalfNormalIsStansTruncatedNormalOnSigma) {
  // p_sigma(sigma) = 2 N(sigma; 0, S^2) on sigma > 0, so log p_s(s) = log p_sigma(e^s) + s.
  const NoiseSdPrior p = NoiseSdPrior::parse("halfnormal:10", "--noise-prior");
  for (double sigma : {0.05, 1.0, 7.0, 30.0}) {
    const double expected = std::log(2.0) - 0.5 * std::log(2 * M_PI * 100.0) - 0.5 * sigma * sigma / 100.0 + std::log(sigma);
    EXPECT_NEAR(p.log_density(std::log(sigma), nullptr), expected, 1e-12);
  }
}

TEST(NoiseSdPrior, UnitsShiftTheDensityOfLogSigma) {
  // sigma' = sigma / u (standardised targets): log sigma' = log sigma - log u, and a change of
  // variables by a shift has no Jacobian, so p'(s - log u) = p(s).
  const double unit = 37.5;
  for (const NoiseSdPrior& p : proper_priors()) {
    const NoiseSdPrior q = p.in_units_of(unit);
    for (double s : {-2.0, 0.3, 4.0})
      EXPECT_NEAR(q.log_density(s - std::log(unit), nullptr), p.log_density(s, nullptr), 1e-12) << p.to_string();
  }
}

TEST(NoiseSdPrior, ParsesAndRejectsWithTheFlagAndTheValidForms) {
  EXPECT_EQ(NoiseSdPrior::parse("halfcauchy:2", "f").to_string(), "halfcauchy:2");
  EXPECT_EQ(NoiseSdPrior::parse("lognormal:-1,0.5", "f").to_string(), "lognormal:-1,0.5");
  for (const char* bad : {"halfnormal:-1", "halfnormal:0", "halfnormal", "halfnormal:1,2", "lognormal:1", "lognormal:a,1",
                          "flat:1", "gamma:2,1", "halfcauchy:inf", ""}) {
    try {
      NoiseSdPrior::parse(bad, "--noise-prior");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--noise-prior"), std::string::npos) << what;
      EXPECT_NE(what.find("halfnormal:S"), std::string::npos) << what;
    }
  }
}

TEST(NoiseSdPrior, LikelihoodUsesItAndRoundTripsThroughItsDescription) {
  const NoiseSdPrior p = NoiseSdPrior::parse("halfcauchy:0.3", "--noise-prior");
  const auto likelihood = make_learned_sigma_likelihood(0.1, p);
  const Vec extra = Vec::Constant(1, -0.7);
  Vec grad = Vec::Zero(1);
  EXPECT_DOUBLE_EQ(likelihood->extra_log_prior(extra, &grad), p.log_density(-0.7, nullptr));
  const auto again = make_likelihood(likelihood->to_json());
  EXPECT_DOUBLE_EQ(again->extra_log_prior(extra, nullptr), likelihood->extra_log_prior(extra, nullptr));
  EXPECT_DOUBLE_EQ(again->extra_prior_hessian_diagonal(extra)[0], p.second_derivative(-0.7));
  // The default prior keeps its old description (model.json files written before stay readable).
  EXPECT_TRUE(make_learned_sigma_likelihood(0.1)->to_json().contains("log_sigma_prior_sd"));
}

TEST(FlatPrior, IsOneEverywhereAndHasNoDraws) {
  FlatPrior prior(3);
  Vec grad = Vec::Zero(3);
  EXPECT_EQ(prior.log_density(Vec::Constant(3, 1e6), &grad), 0.0);
  EXPECT_EQ(grad.norm(), 0.0);
  EXPECT_EQ(prior.hessian_diagonal(Vec::Zero(3)).norm(), 0.0);
  Rng rng(1);
  EXPECT_THROW(prior.sample(rng), InputError);
  EXPECT_EQ(make_prior(prior.to_json())->to_json(), prior.to_json());
}

}  // namespace
}  // namespace uqnn
