// The benchmark problems B1-B3 (data/bench/README.md): our Posterior's log density and gradient at
// theta_ref against PyTorch float64 golden values, so the timed code computes the right thing.
#include <gtest/gtest.h>

#include "../../../bench/bench_problems.hpp"

namespace uqnn::bench {
// gtest prints the parameter by its id instead of its bytes.
inline void PrintTo(const ProblemSpec& spec, std::ostream* os) { *os << spec.id << " (" << spec.name << ")"; }
}  // namespace uqnn::bench

namespace uqnn {
namespace {

class BenchGolden : public ::testing::TestWithParam<bench::ProblemSpec> {};

TEST_P(BenchGolden, LogPosteriorAndGradientMatchPyTorch) {
  const bench::Problem p = bench::load_problem(std::filesystem::path(UQNN_DATA_DIR) / "bench", GetParam());
  const auto posterior = bench::make_posterior(p);
  ASSERT_EQ(posterior->dim(), p.P());

  Vec grad;
  const double lp = posterior->log_density_and_grad(p.theta_ref, grad);
  ASSERT_EQ(grad.size(), p.P());
  // Gradients compare directly (constants have none); relative to the gradient's norm.
  const double grad_err = (grad - p.grad_ref).norm() / p.grad_ref.norm();
  EXPECT_LT(grad_err, 1e-12) << p.spec.id;
  const double worst = (grad - p.grad_ref).cwiseAbs().maxCoeff() / p.grad_ref.cwiseAbs().maxCoeff();
  EXPECT_LT(worst, 1e-12) << p.spec.id;
  // Our value includes the normalising constants; BENCHMARKS.md's drops them.
  const double lp_dropped = lp - bench::log_normalising_constants(p);
  EXPECT_NEAR(lp_dropped, p.lp_ref, 1e-12 * std::abs(p.lp_ref)) << p.spec.id;

  // The float evaluation used by the float benchmark agrees to float accuracy.
  const auto model = bench::make_model(p.spec);
  const VecT<float> theta_f = p.theta_ref.cast<float>();
  const MatT<float> X_f = p.X.cast<float>();
  const Mat Y = model->forward(p.theta_ref, p.X);
  const MatT<float> Y_f = model->evaluate<float>(theta_f.data(), X_f, nullptr, nullptr, nullptr);
  EXPECT_LT((Y_f.cast<double>() - Y).norm() / Y.norm(), 1e-4) << p.spec.id;
}

INSTANTIATE_TEST_SUITE_P(Problems, BenchGolden, ::testing::ValuesIn(bench::problem_specs()),
                         [](const auto& info) { return std::string(info.param.id); });

}  // namespace
}  // namespace uqnn
