// Chains in SIMD lanes (nn/chain_lanes.hpp): every chain's value and gradient against the
// single-chain kernel (itself checked against finite differences in model_derivatives_test), and a
// chain's result independent of the batch it is evaluated in, bitwise.
#include <gtest/gtest.h>

#include "uqnn/nn/chain_lanes.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {
namespace {

struct LaneCase {
  std::string name;
  MlpSpec spec;
  Precision precision;
  Index rows;
};
void PrintTo(const LaneCase& c, std::ostream* os) { *os << c.name; }

std::vector<LaneCase> lane_cases() {
  return {
      {"b1_tanh_double", MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot}, Precision::Float64, 20},
      {"b1_tanh_float", MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot}, Precision::Float32, 20},
      {"relu_two_outputs_double", MlpSpec{5, {16, 16}, 2, Activation::Relu, InitScheme::He}, Precision::Float64, 37},
      {"relu_two_outputs_float", MlpSpec{5, {16, 16}, 2, Activation::Relu, InitScheme::He}, Precision::Float32, 37},
      {"silu_double", MlpSpec{3, {7}, 1, Activation::Silu, InitScheme::He}, Precision::Float64, 9},
      {"sine_double", MlpSpec{2, {5, 3}, 1, Activation::Sine, InitScheme::Glorot}, Precision::Float64, 13},
      {"sigmoid_float", MlpSpec{2, {9}, 3, Activation::Sigmoid, InitScheme::Glorot}, Precision::Float32, 8},
      {"linear_double", MlpSpec{4, {}, 1, Activation::Identity, InitScheme::Glorot}, Precision::Float64, 6},
  };
}

/// A loss that differs per chain: sum of -(Y - target_c)^2 / 2 with target_c = c / 3.
OutputLoss<double> chain_loss(double target) {
  return [target](const Mat& Y, Mat& dY) {
    dY = -(Y.array() - target).matrix();
    return -0.5 * (Y.array() - target).square().sum();
  };
}

struct Batch {
  std::vector<Vec> thetas, grads;
  std::vector<OutputLoss<double>> losses;
  std::vector<double> values;
};

/// Evaluates chains `which` of `thetas` (with their chain's loss) as one lane batch.
Batch evaluate_lanes(const Model& model, const std::vector<Vec>& thetas, const Mat& X, const std::vector<int>& which) {
  Batch b;
  std::vector<const double*> theta_ptrs;
  std::vector<double*> grad_ptrs;
  std::vector<const OutputLoss<double>*> loss_ptrs;
  for (int c : which) {
    b.thetas.push_back(thetas[static_cast<std::size_t>(c)]);
    b.grads.push_back(Vec::Zero(model.num_params()));
    b.losses.push_back(chain_loss(c / 3.0));
  }
  for (std::size_t k = 0; k < which.size(); ++k) {
    theta_ptrs.push_back(b.thetas[k].data());
    grad_ptrs.push_back(b.grads[k].data());
    loss_ptrs.push_back(&b.losses[k]);
  }
  b.values.assign(which.size(), 0.0);
  model.value_and_gradient_lanes(theta_ptrs, X, nullptr, loss_ptrs, b.values, grad_ptrs);
  return b;
}

/// The same with chain k on its own inputs inputs[which[k]].
Batch evaluate_lanes_on_own_inputs(const Model& model, const std::vector<Vec>& thetas, const std::vector<Mat>& inputs,
                                   const std::vector<int>& which) {
  Batch b;
  std::vector<const double*> theta_ptrs;
  std::vector<double*> grad_ptrs;
  std::vector<const OutputLoss<double>*> loss_ptrs;
  std::vector<const Mat*> input_ptrs;
  for (int c : which) {
    b.thetas.push_back(thetas[static_cast<std::size_t>(c)]);
    b.grads.push_back(Vec::Zero(model.num_params()));
    b.losses.push_back(chain_loss(c / 3.0));
    input_ptrs.push_back(&inputs[static_cast<std::size_t>(c)]);
  }
  for (std::size_t k = 0; k < which.size(); ++k) {
    theta_ptrs.push_back(b.thetas[k].data());
    grad_ptrs.push_back(b.grads[k].data());
    loss_ptrs.push_back(&b.losses[k]);
  }
  b.values.assign(which.size(), 0.0);
  model.value_and_gradient_lanes_on_own_inputs(theta_ptrs, input_ptrs, loss_ptrs, b.values, grad_ptrs);
  return b;
}

std::vector<Vec> random_thetas(const Model& model, int chains, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<Vec> thetas;
  for (int c = 0; c < chains; ++c) thetas.push_back(model.initial_params(rng) + 0.3 * rng.normal_vector(model.num_params()));
  return thetas;
}

Mat random_inputs(Index dim, Index rows, std::uint64_t seed) {
  Rng rng(seed);
  Mat X(dim, rows);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.uniform(-2, 2);
  return X;
}

std::vector<int> range(int n) {
  std::vector<int> r;
  for (int c = 0; c < n; ++c) r.push_back(c);
  return r;
}

class ChainLanes : public ::testing::TestWithParam<LaneCase> {};

TEST_P(ChainLanes, EveryChainMatchesTheSingleChainKernel) {
  const LaneCase& lc = GetParam();
  Mlp model(lc.spec);
  model.set_precision(lc.precision);
  const Mat X = random_inputs(lc.spec.input_dim, lc.rows, 5);
  const double tolerance = lc.precision == Precision::Float32 ? 2e-5 : 1e-12;
  // 1 chain, part of one packet, and several packets with a partial last one (8 doubles / 16 floats).
  for (const int chains : {1, 3, 17, 35}) {
    const auto thetas = random_thetas(model, chains, 11 + static_cast<std::uint64_t>(chains));
    const Batch b = evaluate_lanes(model, thetas, X, range(chains));
    for (int c = 0; c < chains; ++c) {
      Vec grad = Vec::Zero(model.num_params());
      const double value = model.value_and_gradient(thetas[static_cast<std::size_t>(c)], X, chain_loss(c / 3.0), grad);
      const double scale = 1 + grad.cwiseAbs().maxCoeff();
      EXPECT_NEAR(b.values[static_cast<std::size_t>(c)], value, tolerance * (1 + std::abs(value))) << chains << " chains, chain " << c;
      EXPECT_LT((b.grads[static_cast<std::size_t>(c)] - grad).cwiseAbs().maxCoeff(), tolerance * scale) << chains << " chains, chain " << c;
    }
  }
}

TEST_P(ChainLanes, AChainsResultDoesNotDependOnItsBatch) {
  const LaneCase& lc = GetParam();
  Mlp model(lc.spec);
  model.set_precision(lc.precision);
  const Mat X = random_inputs(lc.spec.input_dim, lc.rows, 6);
  const auto thetas = random_thetas(model, 19, 12);
  const Batch all = evaluate_lanes(model, thetas, X, range(19));
  std::vector<int> reversed = range(19);
  std::reverse(reversed.begin(), reversed.end());
  const Batch backwards = evaluate_lanes(model, thetas, X, reversed);
  for (int c = 0; c < 19; ++c) {
    const Batch alone = evaluate_lanes(model, thetas, X, {c});
    const Batch pair = evaluate_lanes(model, thetas, X, {(c + 7) % 19, c});
    const auto k = static_cast<std::size_t>(c), r = static_cast<std::size_t>(18 - c);
    EXPECT_EQ(all.values[k], alone.values[0]) << "chain " << c;
    EXPECT_TRUE(all.grads[k] == alone.grads[0]) << "chain " << c;  // bitwise
    EXPECT_TRUE(pair.grads[1] == alone.grads[0]) << "chain " << c;
    EXPECT_EQ(backwards.values[r], alone.values[0]) << "chain " << c;
    EXPECT_TRUE(backwards.grads[r] == alone.grads[0]) << "chain " << c;
  }
}

// SG-MCMC in lockstep: each chain on its own minibatch, interleaved into the lanes.
TEST_P(ChainLanes, EveryChainOnItsOwnInputsMatchesTheSingleChainKernelAndNotItsBatch) {
  const LaneCase& lc = GetParam();
  Mlp model(lc.spec);
  model.set_precision(lc.precision);
  const double tolerance = lc.precision == Precision::Float32 ? 2e-5 : 1e-12;
  const int chains = 35;
  std::vector<Mat> inputs;
  for (int c = 0; c < chains; ++c) inputs.push_back(random_inputs(lc.spec.input_dim, lc.rows, 100 + static_cast<std::uint64_t>(c)));
  const auto thetas = random_thetas(model, chains, 14);
  const Batch all = evaluate_lanes_on_own_inputs(model, thetas, inputs, range(chains));
  for (int c = 0; c < chains; ++c) {
    const auto k = static_cast<std::size_t>(c);
    Vec grad = Vec::Zero(model.num_params());
    const double value = model.value_and_gradient(thetas[k], inputs[k], chain_loss(c / 3.0), grad);
    EXPECT_NEAR(all.values[k], value, tolerance * (1 + std::abs(value))) << "chain " << c;
    EXPECT_LT((all.grads[k] - grad).cwiseAbs().maxCoeff(), tolerance * (1 + grad.cwiseAbs().maxCoeff())) << "chain " << c;
    const Batch alone = evaluate_lanes_on_own_inputs(model, thetas, inputs, {c});
    const Batch pair = evaluate_lanes_on_own_inputs(model, thetas, inputs, {(c + 7) % chains, c});
    EXPECT_EQ(all.values[k], alone.values[0]) << "chain " << c;
    EXPECT_TRUE(all.grads[k] == alone.grads[0]) << "chain " << c;  // bitwise
    EXPECT_TRUE(pair.grads[1] == alone.grads[0]) << "chain " << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Networks, ChainLanes, ::testing::ValuesIn(lane_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(ChainLanesFloat, AChainBeyondFloatsRangeIsEvaluatedInDoubleAlone) {
  const MlpSpec spec{2, {6}, 1, Activation::Tanh, InitScheme::Glorot};
  Mlp single(spec), in_float(spec);
  in_float.set_precision(Precision::Float32);
  const Mat X = random_inputs(2, 10, 7);
  auto thetas = random_thetas(single, 5, 13);
  thetas[2].tail(1)[0] = 1e39;  // chain 2's output bias: beyond float's 3.4e38, finite in double
  const Batch mixed = evaluate_lanes(in_float, thetas, X, range(5));
  const Batch in_double = evaluate_lanes(single, thetas, X, {2});
  EXPECT_TRUE(std::isfinite(mixed.values[2]));
  EXPECT_EQ(mixed.values[2], in_double.values[0]);
  EXPECT_TRUE(mixed.grads[2] == in_double.grads[0]);
  for (int c : {0, 1, 3, 4}) {  // the others stay in float, as alone
    const Batch alone = evaluate_lanes(in_float, thetas, X, {c});
    EXPECT_EQ(mixed.values[static_cast<std::size_t>(c)], alone.values[0]);
    EXPECT_TRUE(mixed.grads[static_cast<std::size_t>(c)] == alone.grads[0]);
  }
}

TEST(ChainLanesOwnInputs, InputsOfDifferentSizesGoOneByOneThroughTheSingleChainKernel) {
  Mlp model(MlpSpec{2, {6}, 1, Activation::Tanh, InitScheme::Glorot});
  const std::vector<Mat> inputs = {random_inputs(2, 10, 1), random_inputs(2, 11, 2), random_inputs(2, 10, 3)};
  const auto thetas = random_thetas(model, 3, 15);
  const Batch b = evaluate_lanes_on_own_inputs(model, thetas, inputs, range(3));
  for (int c = 0; c < 3; ++c) {
    const auto k = static_cast<std::size_t>(c);
    Vec grad = Vec::Zero(model.num_params());
    EXPECT_EQ(b.values[k], model.value_and_gradient(thetas[k], inputs[k], chain_loss(c / 3.0), grad)) << "chain " << c;
    EXPECT_TRUE(b.grads[k] == grad) << "chain " << c;
  }
}

TEST(ChainLanesPosterior, BatchedMinibatchesMatchOneByOneInEitherPrecision) {
  for (const Precision precision : {Precision::Float64, Precision::Float32}) {
    const auto likelihood = make_heteroscedastic_likelihood();
    auto model = std::make_shared<Mlp>(MlpSpec{3, {8, 5}, likelihood->model_outputs(1), Activation::Relu, InitScheme::He});
    model->set_precision(precision);
    const Mat X = random_inputs(3, 41, 8);
    Mat Y(1, 41);
    for (Index j = 0; j < 41; ++j) Y(0, j) = std::sin(X(0, j)) + 0.1 * X(1, j);
    Posterior post(model, likelihood, GaussianPrior::isotropic(model->num_params(), 0.7), X, Y);
    Rng rng(10);
    const int chains = 11;
    std::vector<Vec> thetas, grads(chains);
    std::vector<IndexVec> batches;
    for (int c = 0; c < chains; ++c) {
      thetas.push_back(post.initial_point(rng) + 0.2 * rng.normal_vector(post.dim()));
      const IndexVec order = rng.permutation(41);
      batches.emplace_back(order.begin(), order.begin() + 9);
    }
    std::vector<const Vec*> theta_ptrs;
    std::vector<const IndexVec*> batch_ptrs;
    std::vector<Vec*> grad_ptrs;
    for (int c = 0; c < chains; ++c) {
      const auto k = static_cast<std::size_t>(c);
      theta_ptrs.push_back(&thetas[k]), batch_ptrs.push_back(&batches[k]), grad_ptrs.push_back(&grads[k]);
    }
    std::vector<double> values(chains);
    post.minibatch_log_density_and_grad_batch(theta_ptrs, batch_ptrs, grad_ptrs, values);
    const double tolerance = precision == Precision::Float32 ? 2e-5 : 1e-12;
    for (int c = 0; c < chains; ++c) {
      const auto k = static_cast<std::size_t>(c);
      Vec grad;
      const double value = post.minibatch_log_density_and_grad(thetas[k], batches[k], grad);
      EXPECT_NEAR(values[k], value, tolerance * (1 + std::abs(value))) << "chain " << c;
      ASSERT_EQ(grads[k].size(), post.dim());
      EXPECT_LT((grads[k] - grad).cwiseAbs().maxCoeff(), tolerance * (1 + grad.cwiseAbs().maxCoeff())) << "chain " << c;
    }
    const std::vector<const IndexVec*> fewer(batch_ptrs.begin(), batch_ptrs.end() - 1);
    EXPECT_THROW(post.minibatch_log_density_and_grad_batch(theta_ptrs, fewer, grad_ptrs, values), std::invalid_argument);
  }
}

TEST(ChainLanesPosterior, BatchedLogDensityMatchesOneByOneWithExtrasAndPriors) {
  for (const auto& likelihood : {make_learned_sigma_likelihood(0.5), make_heteroscedastic_likelihood(), make_gaussian_likelihood(0.2)}) {
    const Index outputs = likelihood->model_outputs(1);
    auto model = std::make_shared<Mlp>(MlpSpec{3, {8, 5}, outputs, Activation::Tanh, InitScheme::Glorot});
    const Mat X = random_inputs(3, 23, 8);
    Mat Y(1, 23);
    for (Index j = 0; j < 23; ++j) Y(0, j) = std::sin(X(0, j)) + 0.1 * X(1, j);
    Posterior post(model, likelihood, GaussianPrior::isotropic(model->num_params(), 0.7), X, Y);
    Rng rng(9);
    std::vector<Vec> thetas, grads(6);
    for (int c = 0; c < 6; ++c) thetas.push_back(post.initial_point(rng) + 0.2 * rng.normal_vector(post.dim()));
    std::vector<const Vec*> theta_ptrs;
    std::vector<Vec*> grad_ptrs;
    for (int c = 0; c < 6; ++c) theta_ptrs.push_back(&thetas[static_cast<std::size_t>(c)]), grad_ptrs.push_back(&grads[static_cast<std::size_t>(c)]);
    std::vector<double> values(6);
    post.log_density_and_grad_batch(theta_ptrs, grad_ptrs, values);
    for (int c = 0; c < 6; ++c) {
      Vec grad;
      const double value = post.log_density_and_grad(thetas[static_cast<std::size_t>(c)], grad);
      EXPECT_NEAR(values[static_cast<std::size_t>(c)], value, 1e-12 * (1 + std::abs(value))) << likelihood->kind();
      ASSERT_EQ(grads[static_cast<std::size_t>(c)].size(), post.dim());
      EXPECT_LT((grads[static_cast<std::size_t>(c)] - grad).cwiseAbs().maxCoeff(), 1e-11 * (1 + grad.cwiseAbs().maxCoeff()))
          << likelihood->kind() << " chain " << c;
    }
  }
}

}  // namespace
}  // namespace uqnn
