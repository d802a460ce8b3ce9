// `uqnn fit --method mile` at its defaults (Sommer et al. 2025's configuration: 12 members, 50,000
// tuning + 10,000 MCLMC steps thinned by 10, no preconditioner) on the ill-conditioned linear
// regression of test_models.hpp (w1, w2 correlated below -0.9, sds more than 20x apart), whose
// posterior is known exactly: every mean within MCSE z-bounds, every sd within 10%.
#include <gtest/gtest.h>

#include <map>

#include "unit/approx/linear_fit_fixture.hpp"
#include "unit/io/temp_dir.hpp"
#include "uqnn/diagnostics/ess.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"

namespace uqnn {
namespace {

TEST(MileDefaults, RecoversAnIllConditionedLinearRegression) {
  const testing::IllConditionedRegression target = testing::ill_conditioned_regression();
  const testing::TempDir out;  // MILE writes its chains' LPPD record and figure there
  const MethodResult result = testing::fit_ill_conditioned_linear("mile", {{"out", out.path().string()}});
  // One chain per member; draws [draw, chain] per parameter.
  ASSERT_EQ(result.draws.num_chains(), 12);
  for (const DrawChain& chain : result.draws.chains()) EXPECT_EQ(chain.size(), 1000) << "chain " << chain.id;
  const Index K = target.mean.size();
  const double z = diagnostics::inverse_normal_cdf(1.0 - 0.01 / (2.0 * static_cast<double>(K)));
  for (Index k = 0; k < K; ++k) {
    const Mat draws = result.draws.parameter_by_chain(k);
    const double mean = draws.mean(), mcse = diagnostics::mcse_mean(draws);
    const double sd = std::sqrt((draws.array() - mean).square().sum() / static_cast<double>(draws.size() - 1));
    const double exact_sd = std::sqrt(target.covariance(k, k));
    EXPECT_LT(std::abs(mean - target.mean[k]) / mcse, z) << "parameter " << k << ": mean " << mean << " exact " << target.mean[k]
                                                          << " mcse " << mcse;
    EXPECT_LT(mcse, 0.1 * exact_sd) << "parameter " << k << ": too few effective draws";
    EXPECT_NEAR(sd / exact_sd, 1.0, 0.1) << "parameter " << k << ": sd " << sd << " exact " << exact_sd;
  }
}

}  // namespace
}  // namespace uqnn
