#include <gtest/gtest.h>

#include "uqnn/diagnostics/summary.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"
#include "uqnn/services/run_summary.hpp"

namespace uqnn {
namespace {

TEST(RunSummary, FunctionSpaceRowsWorstWeightsAndFooter) {
  auto model = std::make_shared<Mlp>(Mlp::linear(1, 1));
  Mat X(1, 4), Y(1, 4);
  X << -1, 0, 1, 2;
  Y << -2, 0, 2, 4;
  Posterior post(model, make_gaussian_likelihood(1.0), GaussianPrior::isotropic(2, 1.0), X, Y);
  Rng rng(1);
  Draws draws, first;  // first: one draw per chain
  for (Index c = 0; c < 2; ++c) {
    Mat values(200, 2);
    std::vector<DrawStats> stats;
    for (int d = 0; d < 200; ++d) {
      Vec theta(2);
      theta << 1.5 + 0.1 * rng.normal(), (c == 1 ? 3.0 : 0.0) + 0.1 * rng.normal();  // bias disagrees across chains
      values.row(d) = theta.transpose();
      DrawStats s;
      s.lp = post.log_density(theta);
      s.energy = -s.lp + rng.normal();
      s.is_divergent = d % 50 == 0;
      s.tree_depth = d % 4 == 0 ? 10 : 6;  // a quarter of the draws at the maximum depth 10
      stats.push_back(s);
    }
    first.add_chain(c, values.topRows(1), {stats.front()});
    draws.add_chain(c, values, stats);
  }
  Standardizer identity = Standardizer::identity({"x"}, {"y"});
  Mat probe(1, 2);
  probe << 0.0, 1.0;
  const RunSummary r = summarize_run(post, draws, probe, identity, 1, 10);
  ASSERT_EQ(r.rows.size(), 5u);  // lp__, log_lik, two probes, one weight
  EXPECT_EQ(r.rows[0].name, "lp__");
  EXPECT_EQ(r.rows[1].name, "log_lik");
  EXPECT_EQ(r.rows[2].name, "f(0)");
  EXPECT_EQ(r.rows[4].name, "layer1.bias[0]");  // the coordinate whose chains disagree
  EXPECT_GT(r.max_weight_rhat, 1.5);  // rank-normalised R-hat saturates for separated chains
  EXPECT_NEAR(r.rows[3].mean, 1.5 + 1.5, 0.05);  // f(1) = w + b, averaged over both chains
  EXPECT_EQ(r.divergences, 8);
  EXPECT_EQ(r.num_chains, 2);
  EXPECT_EQ(r.num_draws, 200);
  EXPECT_EQ(r.e_bfmi.size(), 2u);
  EXPECT_EQ(r.draws_at_max_depth, 100);
  // Warnings, judged on lp__, log_lik and f(.), never on the weights, and chain by chain: each chain
  // is iid within its mode, so the chains' disagreement on f(0) (= the bias) is a note, not a warning.
  std::vector<std::string> codes;
  for (const auto& w : r.warnings) codes.push_back(w.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"divergences", "max_tree_depth"}));
  EXPECT_NE(r.warnings[0].message.find("8 of 400 draws"), std::string::npos) << r.warnings[0].message;
  EXPECT_NE(r.warnings[0].message.find("(--target-accept)"), std::string::npos) << r.warnings[0].message;  // the default advice
  EXPECT_NE(r.warnings[1].message.find("100 of 400 draws (25.0%"), std::string::npos) << r.warnings[1].message;
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].code, "chains_in_different_modes");
  EXPECT_NE(r.notes[0].message.find("f(0)"), std::string::npos) << r.notes[0].message;
  EXPECT_EQ(r.notes[0].message.find("layer1"), std::string::npos) << r.notes[0].message;
  const nlohmann::json j = r.to_json();
  ASSERT_EQ(j["warnings"].size(), 2u);
  ASSERT_EQ(j["notes"].size(), 1u);
  EXPECT_EQ(j["warnings"][0]["code"], "divergences");
  EXPECT_EQ(j["draws_at_max_depth"], 100);
  EXPECT_NE(r.format().find("at max tree depth 10: 100 draws"), std::string::npos) << r.format();
  // Without a maximum depth (samplers without trees) nothing is counted or said.
  const RunSummary no_tree = summarize_run(post, draws, probe, identity, 1, 0, "Lower the step size (--step-size).");
  EXPECT_EQ(no_tree.draws_at_max_depth, 0);
  ASSERT_EQ(no_tree.warnings.size(), 1u);
  EXPECT_NE(no_tree.warnings[0].message.find("may be biased. Lower the step size (--step-size)."), std::string::npos)
      << no_tree.warnings[0].message;
  EXPECT_EQ(no_tree.warnings[0].message.find("--target-accept"), std::string::npos) << no_tree.warnings[0].message;
  // One draw per chain: NaN diagnostics, no E-BFMI, no exception.
  const RunSummary tiny = summarize_run(post, first, probe, identity, 1, 10);
  EXPECT_TRUE(std::isnan(tiny.rows[0].r_hat));
  EXPECT_TRUE(tiny.e_bfmi.empty());
  ASSERT_FALSE(tiny.warnings.empty());
  EXPECT_EQ(tiny.warnings[0].code, "few_draws");
}

// The divergence warning's advice names a flag the method has: SG-MCMC has no target acceptance to
// raise (its step is fixed), MCLMC tunes its step from an energy-error target.
TEST(RunSummary, DivergenceAdviceNamesAFlagOfTheMethod) {
  const auto advice = [](nlohmann::json options) {
    const FitConfig config = fit_config_from_options(options);
    return find_method(config.method).sampler_traits(config.method_settings).divergence_advice;
  };
  const auto expect_flag = [&](const nlohmann::json& options, const std::string& flag) {
    const std::string text = advice(options);
    EXPECT_NE(text.find(flag), std::string::npos) << options.dump() << ": " << text;
  };
  for (const std::string method : {"nuts", "hmc", "dei-nuts", "vi-hmc"}) EXPECT_EQ(advice({{"method", method}}), "") << method;  // Stan's
  EXPECT_NE(diagnostics::SamplerStatsSummary{}.divergence_remedy.find("(--target-accept)"), std::string::npos);
  for (const std::string method : {"mclmc", "mile"}) expect_flag({{"method", method}}, "(--mclmc-energy-variance;");
  for (const std::string method : {"sgld", "sghmc", "psgld", "fsgld", "fsghmc"}) expect_flag({{"method", method}}, "(--step-size)");
  expect_flag({{"method", "mala"}}, "(--no-adapt --step-size)");
  // Without adaptation raising the target acceptance changes nothing: the step itself must shrink.
  for (const std::string method : {"nuts", "hmc", "mala"})
    expect_flag({{"method", method}, {"adapt", false}, {"step_size", 0.1}}, "Lower the step size (--step-size)");
  for (const std::string method : {"amcmc", "slice"})
    EXPECT_EQ(advice({{"method", method}}).find("--"), std::string::npos) << method << ": " << advice({{"method", method}});
}

// vi-hmc fixes most coordinates at the VI means: they are constant in every draw, have no R-hat,
// and must not crowd the worst-R-hat list (they used to: NaN sorted first).
TEST(RunSummary, FixedCoordinatesAreCountedNotRanked) {
  auto model = std::make_shared<Mlp>(Mlp::linear(3, 1));  // 3 weights + 1 bias
  Mat X(3, 4), Y(1, 4);
  X << -1, 0, 1, 2, 1, 1, 0, 0, 0, 1, 0, 1;
  Y << -2, 0, 2, 4;
  Posterior post(model, make_gaussian_likelihood(1.0), GaussianPrior::isotropic(4, 1.0), X, Y);
  Rng rng(2);
  Draws draws;
  for (Index c = 0; c < 2; ++c) {
    Mat values(100, 4);
    for (int d = 0; d < 100; ++d)  // coordinates 0 and 2 fixed; 1 sampled; 3 (the bias) sampled, its chains disagree
      values.row(d) << 0.25, 1.0 + 0.1 * rng.normal(), -0.5, (c == 1 ? 3.0 : 0.0) + 0.1 * rng.normal();
    draws.add_chain(c, values);
  }
  Standardizer identity = Standardizer::identity({"x1", "x2", "x3"}, {"y"});
  const RunSummary r = summarize_run(post, draws, Mat(3, 0), identity, 3);
  EXPECT_EQ(r.num_constant_weights, 2);
  ASSERT_EQ(r.rows.size(), 4u);  // lp__, log_lik, the two moving coordinates
  EXPECT_EQ(r.rows[2].name, "layer1.bias[0]");
  EXPECT_EQ(r.rows[3].name, post.layout().name_of(1));
  EXPECT_TRUE(std::isfinite(r.max_weight_rhat));
  EXPECT_GT(r.max_weight_rhat, 1.5);
  EXPECT_NE(r.format().find("2 weights constant"), std::string::npos);
}

}  // namespace
}  // namespace uqnn
