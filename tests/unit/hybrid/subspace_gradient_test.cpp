// The fast subspace gradient (seed 000 section 3.3, done as the paper could not): for every layer
// pattern its active entries equal those of the full gradient, on Mlp and DeepOnet (grid and pairs),
// and SubspaceView over a Posterior equals the sliced full gradient (extras included).
#include <gtest/gtest.h>

#include <functional>

#include "uqnn/nn/deeponet.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/views.hpp"

namespace uqnn {
namespace {

/// A loss with curvature in the outputs, so every cotangent differs.
OutputLoss<double> test_loss(const Mat& weights) {
  return [weights](const Mat& Y, Mat& dY) {
    dY = weights + 0.5 * Y;
    return (weights.array() * Y.array()).sum() + 0.25 * Y.squaredNorm();
  };
}

IndexVec range(Index from, Index to) {
  IndexVec v;
  for (Index i = from; i < to; ++i) v.push_back(i);
  return v;
}

IndexVec concat(std::initializer_list<IndexVec> parts) {
  IndexVec v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

void expect_subspace_matches(const Model& model, const Vec& theta, const Mat& X, const IndexVec& active, const std::string& label) {
  SCOPED_TRACE(label);
  Rng rng(7, 1);
  const Mat weights = Mat::NullaryExpr(model.output_dim(), X.cols(), [&] { return rng.normal(); });
  const auto loss = test_loss(weights);
  Vec full = Vec::Zero(model.num_params());
  const double value = model.value_and_gradient(theta, X, loss, full);
  // Build at a different base point on the active coordinates: only fixed ones may be cached.
  Vec base = theta;
  for (Index i : active) base[i] += 0.3;
  const auto sub = model.make_subspace_gradient(base, active, X);
  Vec grad = Vec::Zero(model.num_params());
  const double sub_value = sub->value_and_gradient(theta, loss, grad);
  EXPECT_NEAR(sub_value, value, 1e-12 * (1 + std::abs(value)));
  for (Index i : active) EXPECT_NEAR(grad[i], full[i], 1e-12 * (1 + std::abs(full[i]))) << "parameter " << model.layout().name_of(i);
}

TEST(SubspaceGradient, MlpEveryLayerPattern) {
  const Mlp mlp(MlpSpec{2, {4, 3}, 2, Activation::Tanh, InitScheme::Glorot});
  // Blocks: layer1 [0, 12), layer2 [12, 27) (weights 12..23, bias 24..26), layer3 [27, 35).
  ASSERT_EQ(mlp.num_params(), 35);
  Rng rng(3, 0);
  const Vec theta = mlp.initial_params(rng) + 0.1 * rng.normal_vector(35);
  const Mat X = Mat::NullaryExpr(2, 7, [&] { return rng.normal(); });
  Rng pick(5, 0);
  IndexVec random30;
  for (Index i = 0; i < 35; ++i)
    if (pick.uniform() < 0.3) random30.push_back(i);
  const std::vector<std::pair<std::string, IndexVec>> patterns{
      {"all", range(0, 35)},
      {"random 30%", random30},
      {"layer 1 fixed", range(12, 35)},
      {"layers 1-2 fixed", range(27, 35)},
      {"layer 2 bias and one layer-3 weight", {24, 25, 26, 28}},
      {"one weight per layer (dot-product path)", {3, 17, 30}},
      {"layer 1 fixed, sparse layer 2 weights", {13, 20, 23, 27, 34}},
      {"dense layer 2 weights only", range(12, 24)},
      {"nothing", {}},
  };
  for (const auto& [label, active] : patterns) expect_subspace_matches(mlp, theta, X, active, label);
}

DeepOnetSpec small_deeponet() {
  DeepOnetSpec s;
  s.branch_input = 3;
  s.trunk_input = 1;
  s.branch_hidden = {4};
  s.trunk_hidden = {4};
  s.latent = 3;
  return s;
}

TEST(SubspaceGradient, DeepOnetGridAndPairs) {
  const DeepOnet pairs(small_deeponet());
  Mat grid(1, 5);
  grid << 0.0, 0.25, 0.5, 0.75, 1.0;
  const DeepOnet on_grid = pairs.with_query_grid(grid);
  const Index P = pairs.num_params();
  const Index trunk = pairs.trunk_offset(), bias = pairs.bias_offset();
  Rng rng(11, 0);
  const Vec theta = pairs.initial_params(rng) + 0.1 * rng.normal_vector(P);
  Rng pick(13, 0);
  IndexVec random40;
  for (Index i = 0; i < P; ++i)
    if (pick.uniform() < 0.4) random40.push_back(i);
  const Index branch_layer2 = 4 * 3 + 4;  // branch layer 1 has 4 x 3 weights + 4 biases
  const Index trunk_layer2 = trunk + 4 * 1 + 4;
  const std::vector<std::pair<std::string, IndexVec>> patterns{
      {"all", range(0, P)},
      {"random 40%", random40},
      {"trunk fixed", concat({range(0, trunk), {bias}})},
      {"branch fixed", range(trunk, P)},
      {"first layer of each net fixed", concat({range(branch_layer2, trunk), range(trunk_layer2, P)})},
      {"bias only", {bias}},
      {"one weight in each net", {2, trunk_layer2 + 1}},
      {"nothing", {}},
  };
  const Mat U = Mat::NullaryExpr(3, 4, [&] { return rng.normal(); });
  Mat XY(4, 6);
  XY.topRows(3) = Mat::NullaryExpr(3, 6, [&] { return rng.normal(); });
  XY.row(3) = Mat::NullaryExpr(1, 6, [&] { return rng.uniform(); });
  for (const auto& [label, active] : patterns) {
    expect_subspace_matches(on_grid, theta, U, active, "grid: " + label);
    expect_subspace_matches(pairs, theta, XY, active, "pairs: " + label);
  }
}

/// A LogDensity that is not a Posterior: SubspaceView then slices the full gradient.
class Opaque : public LogDensity {
 public:
  explicit Opaque(std::shared_ptr<const LogDensity> base) : base_(std::move(base)) {}
  Index dim() const override { return base_->dim(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override { return base_->log_density_and_grad(theta, grad); }

 private:
  std::shared_ptr<const LogDensity> base_;
};

TEST(SubspaceGradient, SubspaceViewOverPosteriorEqualsSlicedFullGradient) {
  auto mlp = std::make_shared<Mlp>(MlpSpec{1, {6, 5}, 1, Activation::Tanh, InitScheme::Glorot});
  Rng rng(17, 0);
  const Mat X = Mat::NullaryExpr(1, 12, [&] { return rng.uniform(-1, 1); });
  const Mat Y = X.array().sin().matrix();
  auto post = std::make_shared<Posterior>(mlp, make_learned_sigma_likelihood(0.2), GaussianPrior::isotropic(mlp->num_params(), 1.0), X, Y);
  const Index K = post->dim();
  Vec base = post->initial_point(rng);
  // Layer 1 fixed (cached), part of layer 2, all of layer 3 and the log sigma extra.
  IndexVec active{13, 20, 33, 35, 40, K - 1};
  for (Index i = 42; i < mlp->num_params(); ++i) active.push_back(i);
  std::sort(active.begin(), active.end());
  active.erase(std::unique(active.begin(), active.end()), active.end());
  const SubspaceView fast(post, active, base);
  const SubspaceView slow(std::make_shared<Opaque>(post), active, base);
  ASSERT_TRUE(fast.uses_subspace_gradient());
  ASSERT_FALSE(slow.uses_subspace_gradient());
  for (int trial = 0; trial < 3; ++trial) {
    const Vec z = fast.restrict(base) + 0.2 * rng.normal_vector(fast.dim());
    Vec g_fast, g_slow;
    const double v_fast = fast.log_density_and_grad(z, g_fast), v_slow = slow.log_density_and_grad(z, g_slow);
    EXPECT_NEAR(v_fast, v_slow, 1e-10 * std::abs(v_slow));
    ASSERT_EQ(g_fast.size(), static_cast<Index>(active.size()));
    for (Index j = 0; j < g_fast.size(); ++j) EXPECT_NEAR(g_fast[j], g_slow[j], 1e-10 * (1 + std::abs(g_slow[j]))) << "coordinate " << j;
  }
}

}  // namespace
}  // namespace uqnn
