// Every derivative every model provides (gradient, per-example Jacobian, Hessian-vector product),
// for every activation and architecture, against central finite differences.
#include <gtest/gtest.h>

#include <memory>

#include "uqnn/core/error.hpp"
#include "uqnn/nn/deeponet.hpp"
#include "uqnn/nn/external_model.hpp"
#include "uqnn/nn/linear.hpp"
#include "uqnn/nn/linearized_model.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/nn/rnet.hpp"

namespace uqnn {
namespace {

struct Case {
  std::string name;
  std::shared_ptr<Model> model;
};

// Readable test names in ctest / gtest output instead of the struct bytes.
void PrintTo(const Case& value, std::ostream* os) { *os << value.name; }

/// An ExternalModel (a network evaluated elsewhere, e.g. by PyTorch) whose four functions are
/// `inner`'s: its own Hessian-vector product (the Gauss-Newton part through jvp and the pullback,
/// the second-order part through the weighted product) must hold like every model's.
std::shared_ptr<Model> external_wrapping(std::shared_ptr<Model> inner, const std::string& name) {
  auto n = std::make_shared<ExternalNetwork>();
  n->id = "test:" + name;  // one id per network: make_model finds each by its own
  n->description = "an external " + inner->kind();
  n->input_dim = inner->input_dim();
  n->output_dim = inner->output_dim();
  n->layout = inner->layout();
  Rng rng(5);
  n->initial = inner->initial_params(rng);
  n->forward = [inner](const Vec& theta, const Mat& X) { return inner->forward(theta, X); };
  n->pullback = [inner](const Vec& theta, const Mat& X, const std::function<Mat(const Mat&)>& cotangent) {
    Vec grad = Vec::Zero(theta.size());
    const OutputLoss<double> loss = [&](const Mat& Y, Mat& dY) {
      dY = cotangent(Y);
      return 0.0;
    };
    inner->value_and_gradient(theta, X, loss, grad);
    return grad;
  };
  n->jvp = [inner](const Vec& theta, const Vec& v, const Mat& X) { return inner->jacobian_vector_product(theta, v, X); };
  n->weighted_hvp = [inner](const Vec& theta, const Vec& v, const Mat& X, const Mat& G) {
    const OutputLoss<Dual> weighted = [G](const MatT<Dual>& Y, MatT<Dual>& dY) {
      dY = G.cast<Dual>();
      Dual sum = make_dual(0.0, 0.0);
      for (Index i = 0; i < Y.size(); ++i) sum += Y.data()[i] * G.data()[i];
      return sum;
    };
    return inner->hessian_vector_product(theta, v, X, weighted);
  };
  register_external_network(n);  // make_model finds it by its id (the description round trip)
  return std::make_shared<ExternalModel>(n);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Activation a : {Activation::Tanh, Activation::Relu, Activation::Silu, Activation::Sigmoid, Activation::Sine,
                       Activation::Identity}) {
    cases.push_back({"mlp_" + to_string(a), std::make_shared<Mlp>(MlpSpec{3, {5, 4}, 2, a, default_init_scheme(a)})});
  }
  // Layers wide enough for NarrowKernel (dense_stack's products): 16 and 20 outputs are whole SIMD
  // packets, or packets plus leftover rows, in float and in double.
  cases.push_back({"mlp_relu_wide", std::make_shared<Mlp>(MlpSpec{3, {16, 20}, 2, Activation::Relu, InitScheme::He})});
  cases.push_back({"linear", std::make_shared<Mlp>(Mlp::linear(3, 2))});
  cases.push_back({"linear_no_bias", std::make_shared<LinearNoBias>(3, 2)});
  for (int order : {0, 2, -1})
    for (bool residual : {true, false})
      for (Activation a : {Activation::Tanh, Activation::Silu}) {
        RNetSpec s;
        s.input_dim = 2;
        s.output_dim = 1;
        s.width = 3;
        s.num_layers = 3;
        s.weight_order = order;
        s.residual = residual;
        s.activation = a;
        cases.push_back({"rnet_order" + (order < 0 ? std::string("nonpar") : std::to_string(order)) + (residual ? "_res_" : "_plain_") + to_string(a),
                         std::make_shared<RNet>(s)});
      }
  {
    RNetSpec s;  // same width in and out: no pre / post layers unless forced
    s.input_dim = 3;
    s.output_dim = 3;
    s.width = 3;
    cases.push_back({"rnet_no_pre_post", std::make_shared<RNet>(s)});
    s.pre_layer = s.post_layer = true;
    cases.push_back({"rnet_forced_pre_post", std::make_shared<RNet>(s)});
  }
  for (Activation a : {Activation::Tanh, Activation::Relu, Activation::Sine}) {
    DeepOnetSpec s{4, 2, {6}, {5}, 3, a, true, default_init_scheme(a)};
    DeepOnet pairs(s);
    cases.push_back({"deeponet_pairs_" + to_string(a), std::make_shared<DeepOnet>(pairs)});
    Rng rng(3);
    Mat grid(2, 7);
    for (Index i = 0; i < grid.size(); ++i) grid.data()[i] = rng.uniform(-1, 1);
    cases.push_back({"deeponet_grid_" + to_string(a), std::make_shared<DeepOnet>(pairs.with_query_grid(grid))});
  }
  for (const char* name : {"mlp_tanh", "mlp_sine", "mlp_relu"})
    for (const Case& c : std::vector<Case>(cases))
      if (c.name == name) cases.push_back({std::string("external_") + name, external_wrapping(c.model, name)});
  // Networks linearised at a random point (Laplace's GLM predictive): every derivative must hold for
  // them too, and their Hessian is the base's generalized Gauss-Newton.
  const std::size_t bases = cases.size();
  for (std::size_t i = 0; i < bases; ++i) {
    if (cases[i].name != "mlp_tanh" && cases[i].name != "deeponet_grid_sine" && cases[i].name != "rnet_order2_res_tanh") continue;
    Rng rng(17);
    const Vec center = cases[i].model->initial_params(rng) + 0.3 * rng.normal_vector(cases[i].model->num_params());
    cases.push_back({"linearized_" + cases[i].name, std::make_shared<LinearizedModel>(cases[i].model, center)});
  }
  return cases;
}

// A loss with curvature in the outputs, so the Hessian has both the Gauss-Newton and the
// second-derivative-of-the-network parts: L(Y) = sum C .* Y + 0.5 sum Y.^2.
template <typename T>
OutputLoss<T> make_loss(const Mat& C) {
  return [C](const MatT<T>& Y, MatT<T>& dY) -> T {
    const MatT<T> Ct = C.cast<T>();
    dY = Ct + Y;
    return (Ct.cwiseProduct(Y)).sum() + T(0.5) * Y.cwiseProduct(Y).sum();
  };
}

class ModelDerivatives : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    model_ = GetParam().model;
    Rng rng(11);
    theta_ = model_->initial_params(rng);
    // Perturb so biases are non-zero and relu kinks are unlikely to sit near a finite-difference step.
    theta_ += 0.3 * rng.normal_vector(theta_.size());
    X_ = Mat(model_->input_dim(), 5);
    for (Index i = 0; i < X_.size(); ++i) X_.data()[i] = rng.uniform(-1.5, 1.5);
    C_ = Mat(model_->output_dim(), X_.cols());
    for (Index i = 0; i < C_.size(); ++i) C_.data()[i] = rng.normal();
  }
  double loss_value(const Vec& theta) const {
    Vec g = Vec::Zero(theta.size());
    return model_->value_and_gradient(theta, X_, make_loss<double>(C_), g);
  }
  Vec gradient(const Vec& theta) const {
    Vec g = Vec::Zero(theta.size());
    model_->value_and_gradient(theta, X_, make_loss<double>(C_), g);
    return g;
  }
  std::shared_ptr<Model> model_;
  Vec theta_;
  Mat X_, C_;
};

constexpr double kStep = 1e-5;

TEST_P(ModelDerivatives, GradientMatchesFiniteDifferences) {
  const Vec g = gradient(theta_);
  for (Index k = 0; k < theta_.size(); ++k) {
    Vec plus = theta_, minus = theta_;
    plus[k] += kStep;
    minus[k] -= kStep;
    const double fd = (loss_value(plus) - loss_value(minus)) / (2 * kStep);
    EXPECT_NEAR(g[k], fd, 1e-6 * (1 + std::abs(fd))) << GetParam().name << " parameter " << model_->layout().name_of(k);
  }
}

TEST_P(ModelDerivatives, ValueEqualsLossOfForward) {
  const Mat Y = model_->forward(theta_, X_);
  ASSERT_EQ(Y.rows(), model_->output_dim());
  ASSERT_EQ(Y.cols(), X_.cols());
  const double direct = C_.cwiseProduct(Y).sum() + 0.5 * Y.squaredNorm();
  EXPECT_NEAR(loss_value(theta_), direct, 1e-12 * (1 + std::abs(direct)));
}

TEST_P(ModelDerivatives, JacobianMatchesFiniteDifferences) {
  const Mat J = model_->jacobian(theta_, X_);
  const Index out = model_->output_dim();
  ASSERT_EQ(J.rows(), X_.cols() * out);
  ASSERT_EQ(J.cols(), theta_.size());
  for (Index k = 0; k < theta_.size(); ++k) {
    Vec plus = theta_, minus = theta_;
    plus[k] += kStep;
    minus[k] -= kStep;
    const Mat fd = (model_->forward(plus, X_) - model_->forward(minus, X_)) / (2 * kStep);
    for (Index i = 0; i < X_.cols(); ++i)
      for (Index o = 0; o < out; ++o)
        ASSERT_NEAR(J(i * out + o, k), fd(o, i), 1e-6 * (1 + std::abs(fd(o, i))))
            << GetParam().name << " example " << i << " output " << o << " parameter " << model_->layout().name_of(k);
  }
}

TEST_P(ModelDerivatives, JacobianVectorProductEqualsJacobianTimesVector) {
  Rng rng(9);
  const Vec v = rng.normal_vector(theta_.size());
  const Mat jv = model_->jacobian_vector_product(theta_, v, X_);
  const Vec expected = model_->jacobian(theta_, X_) * v;  // row i * out + o = column-major [out, n]
  ASSERT_EQ(jv.rows(), model_->output_dim());
  ASSERT_EQ(jv.cols(), X_.cols());
  const Eigen::Map<const Vec> flat(jv.data(), jv.size());
  EXPECT_LT((flat - expected).cwiseAbs().maxCoeff(), 1e-12 * (1 + expected.cwiseAbs().maxCoeff())) << GetParam().name;
}

TEST_P(ModelDerivatives, HessianVectorProductMatchesFiniteDifferencesOfGradient) {
  Rng rng(5);
  for (int repeat = 0; repeat < 2; ++repeat) {
    const Vec v = rng.normal_vector(theta_.size());
    const Vec hv = model_->hessian_vector_product(theta_, v, X_, make_loss<Dual>(C_));
    const Vec fd = (gradient(theta_ + kStep * v) - gradient(theta_ - kStep * v)) / (2 * kStep);
    for (Index k = 0; k < theta_.size(); ++k)
      EXPECT_NEAR(hv[k], fd[k], 2e-6 * (1 + std::abs(fd[k]))) << GetParam().name << " component " << model_->layout().name_of(k);
  }
}

TEST_P(ModelDerivatives, HessianIsSymmetric) {
  // e_i^T H e_j == e_j^T H e_i: exact for an exact Hessian-vector product, not for a finite-difference one.
  const Index n = std::min<Index>(theta_.size(), 12);
  Mat H(n, n);
  for (Index j = 0; j < n; ++j) {
    Vec e = Vec::Zero(theta_.size());
    e[j] = 1.0;
    H.col(j) = model_->hessian_vector_product(theta_, e, X_, make_loss<Dual>(C_)).head(n);
  }
  EXPECT_LT((H - H.transpose()).cwiseAbs().maxCoeff(), 1e-10 * (1 + H.cwiseAbs().maxCoeff())) << GetParam().name;
}

TEST_P(ModelDerivatives, DescriptionRoundTrips) {
  const auto rebuilt = make_model(model_->to_json());
  EXPECT_EQ(rebuilt->layout(), model_->layout());
  EXPECT_LT((rebuilt->forward(theta_, X_) - model_->forward(theta_, X_)).cwiseAbs().maxCoeff(), 1e-15);
}

// Float32 passes (Model::precision): outputs and gradient within float rounding of the float64
// ones but not bitwise equal (the float path really runs), the value is the double loss of the
// float outputs, and the setting survives the description round trip. Models without a float path
// (linearized; external, whose arithmetic is its own) refuse it with a clear error.
TEST_P(ModelDerivatives, Float32PassesAgreeWithFloat64) {
  if (model_->kind() == "linearized" || model_->kind() == "external") {
    EXPECT_THROW(model_->set_precision(Precision::Float32), InputError);
    EXPECT_EQ(model_->precision(), Precision::Float64);
    return;
  }
  const Mat outputs = model_->forward(theta_, X_);
  const Vec g = gradient(theta_);
  model_->set_precision(Precision::Float32);
  const Mat outputs32 = model_->forward(theta_, X_);
  const Vec g32 = gradient(theta_);
  const double value32 = loss_value(theta_);
  const auto rebuilt = make_model(model_->to_json());
  model_->set_precision(Precision::Float64);  // the cases are shared by the other tests

  const double scale = 1.0 + outputs.cwiseAbs().maxCoeff();
  EXPECT_LT((outputs32 - outputs).cwiseAbs().maxCoeff(), 1e-5 * scale) << GetParam().name;
  EXPECT_GT((outputs32 - outputs).cwiseAbs().maxCoeff(), 0.0) << "float32 outputs bitwise equal to float64: not a float path";
  EXPECT_LT((g32 - g).norm(), 1e-4 * (1.0 + g.norm())) << GetParam().name;
  Mat d_outputs;
  EXPECT_EQ(value32, make_loss<double>(C_)(outputs32, d_outputs)) << "the value must be the double loss of the float outputs";
  EXPECT_EQ(rebuilt->precision(), Precision::Float32);
  EXPECT_EQ(rebuilt->to_json().value("precision", std::string()), "float32");
  EXPECT_EQ((rebuilt->forward(theta_, X_) - outputs32).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_FALSE(model_->to_json().contains("precision")) << "float64 descriptions stay as before";
}

TEST(Precision, NamesAndBadValues) {
  EXPECT_EQ(parse_precision("float32"), Precision::Float32);
  EXPECT_EQ(parse_precision("float64"), Precision::Float64);
  EXPECT_EQ(to_string(Precision::Float32), "float32");
  try {
    parse_precision("float16");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("valid are float64, float32"), std::string::npos) << e.what();
  }
  nlohmann::json d = Mlp(Mlp::linear(2, 1)).to_json();
  d["precision"] = 32;
  EXPECT_THROW(make_model(d), InputError);
}

// Where float's range (3.4e38) is exceeded but double's is not, a float32 model computes that
// evaluation in double: the same finite numbers as the float64 model, never inf or NaN.
TEST(Precision, Float32FallsBackToFloat64BeyondFloatRange) {
  Mlp wide(Mlp::linear(1, 1)), narrow(Mlp::linear(1, 1));
  narrow.set_precision(Precision::Float32);
  Mat X(1, 3);
  X << 0.5, 1.0, 1.5;
  // Outputs ~1e40: beyond float, ordinary for double.
  const Vec huge = (Vec(2) << 1e40, 0.0).finished();
  EXPECT_TRUE(narrow.forward(huge, X).allFinite());
  EXPECT_EQ(narrow.forward(huge, X), wide.forward(huge, X));
  // Outputs ~1 but a loss whose output gradient 100 e^{100 y} ~ 1e45 overflows float.
  const OutputLoss<double> steep = [](const Mat& Y, Mat& dY) {
    dY = 100.0 * (100.0 * Y.array()).exp().matrix();
    return (100.0 * Y.array()).exp().sum();
  };
  const Vec theta = (Vec(2) << 1.0, 0.0).finished();
  Vec g_narrow = Vec::Zero(2), g_wide = Vec::Zero(2);
  const double v_narrow = narrow.value_and_gradient(theta, X, steep, g_narrow);
  const double v_wide = wide.value_and_gradient(theta, X, steep, g_wide);
  EXPECT_TRUE(std::isfinite(v_narrow) && g_narrow.allFinite()) << v_narrow << " " << g_narrow.transpose();
  EXPECT_EQ(v_narrow, v_wide);
  EXPECT_EQ(g_narrow, g_wide);
  // In range the float path is taken (not bitwise the double result).
  const Vec small = (Vec(2) << 0.1, 0.2).finished();
  EXPECT_NE(narrow.forward(small * 1.1, X), wide.forward(small * 1.1, X));
}

INSTANTIATE_TEST_SUITE_P(AllModels, ModelDerivatives, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(DeepOnet, GridModeEqualsPairsMode) {
  DeepOnetSpec s{4, 2, {6}, {5}, 3, Activation::Tanh, true, InitScheme::Glorot};
  DeepOnet pairs(s);
  Rng rng(2);
  const Vec theta = pairs.initial_params(rng) + 0.1 * rng.normal_vector(pairs.num_params());
  Mat grid(2, 6), U(4, 3);
  for (Index i = 0; i < grid.size(); ++i) grid.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < U.size(); ++i) U.data()[i] = rng.uniform(-1, 1);
  const Mat on_grid = pairs.with_query_grid(grid).forward(theta, U);  // [points, functions]
  Mat X(6, grid.cols() * U.cols());
  for (Index f = 0; f < U.cols(); ++f)
    for (Index p = 0; p < grid.cols(); ++p) {
      X.col(f * grid.cols() + p) << U.col(f), grid.col(p);
    }
  const Mat per_pair = pairs.forward(theta, X);
  for (Index f = 0; f < U.cols(); ++f)
    for (Index p = 0; p < grid.cols(); ++p) EXPECT_NEAR(on_grid(p, f), per_pair(0, f * grid.cols() + p), 1e-13);
}

TEST(Mlp, LayoutFollowsPyTorchOrder) {
  Mlp mlp(MlpSpec{1, {10, 10}, 1, Activation::Tanh, InitScheme::Glorot});
  EXPECT_EQ(mlp.num_params(), 141);
  EXPECT_EQ(mlp.layout().name_of(0), "layer1.weight[0,0]");
  EXPECT_EQ(mlp.layout().name_of(10), "layer1.bias[0]");
  EXPECT_EQ(mlp.layout().name_of(20), "layer2.weight[0,0]");
  EXPECT_EQ(mlp.layout().name_of(140), "layer3.bias[0]");
}

TEST(Mlp, FloatAndDoubleAgree) {
  Mlp mlp(MlpSpec{5, {16, 16}, 1, Activation::Tanh, InitScheme::Glorot});
  Rng rng(4);
  const Vec theta = mlp.initial_params(rng);
  Mat X(5, 50);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
  const Mat yd = mlp.forward(theta, X);
  const MatT<float> yf = mlp.evaluate<float>(VecT<float>(theta.cast<float>()).data(), X.cast<float>(), nullptr, nullptr, nullptr);
  EXPECT_LT((yf.cast<double>() - yd).cwiseAbs().maxCoeff(), 1e-4);
}

TEST(Activation, FastTanhIsAccurate) {
  Mat z(1, 2001);
  for (Index i = 0; i < z.cols(); ++i) z(0, i) = -20.0 + 0.02 * static_cast<double>(i);
  z(0, 1000) = 1e-300;
  MatT<double> a;
  activate(Activation::Tanh, z, a);
  for (Index i = 0; i < z.cols(); ++i)
    EXPECT_NEAR(a(0, i), std::tanh(z(0, i)), 2e-15 * std::abs(std::tanh(z(0, i))) + 1e-300) << z(0, i);
}

}  // namespace
}  // namespace uqnn

namespace uqnn {
namespace {

TEST(LinearizedModel, IsTheFirstOrderTaylorExpansionOfItsBase) {
  const auto base = std::make_shared<Mlp>(MlpSpec{2, {6}, 1, Activation::Tanh, InitScheme::Glorot});
  Rng rng(4);
  const Vec center = base->initial_params(rng);
  const LinearizedModel linear(base, center);
  Mat X(2, 4);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.uniform(-1, 1);
  // At the centre it is the network; a step h v away it differs from the network by O(h^2).
  EXPECT_LT((linear.forward(center, X) - base->forward(center, X)).cwiseAbs().maxCoeff(), 1e-15);
  const Vec v = rng.normal_vector(center.size());
  double previous_gap = 0;
  for (double h : {1e-1, 1e-2}) {
    const double gap = (linear.forward(center + h * v, X) - base->forward(center + h * v, X)).cwiseAbs().maxCoeff();
    EXPECT_GT(gap, 0.0);
    if (previous_gap > 0) {
      EXPECT_NEAR(previous_gap / gap, 100.0, 20.0) << "second-order remainder";
    }
    previous_gap = gap;
  }
  // Linear in theta: f(c + a u + b w) = a f(c + u) + b f(c + w) - (a + b - 1) f(c).
  const Vec u = rng.normal_vector(center.size()), w = rng.normal_vector(center.size());
  const Mat combined = linear.forward(center + 2.0 * u - 0.5 * w, X);
  const Mat expected = 2.0 * linear.forward(center + u, X) - 0.5 * linear.forward(center + w, X) - 0.5 * linear.forward(center, X);
  EXPECT_LT((combined - expected).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(LinearizedModel, OfALinearModelIsThatModel) {
  const auto base = std::make_shared<Mlp>(Mlp::linear(3, 2));
  Rng rng(8);
  const LinearizedModel linear(base, rng.normal_vector(base->num_params()));
  const Vec theta = rng.normal_vector(base->num_params());
  Mat X(3, 5);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
  EXPECT_LT((linear.forward(theta, X) - base->forward(theta, X)).cwiseAbs().maxCoeff(), 1e-13);
}

TEST(LinearizedModel, BadCenterOrDescriptionIsAClearError) {
  const auto base = std::make_shared<Mlp>(Mlp::linear(3, 2));
  EXPECT_THROW(LinearizedModel(base, Vec::Zero(3)), std::invalid_argument);
  nlohmann::json d = LinearizedModel(base, Vec::Zero(base->num_params())).to_json();
  d["center"] = std::vector<double>{1.0, 2.0};
  try {
    make_model(d);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'center' has 2 entries"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace uqnn
