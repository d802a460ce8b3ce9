// Convolutional and residual networks (nn/cnn.hpp): every layer's gradient, Hessian-vector product
// and per-example Jacobian against central finite differences in float64, float32 against float64,
// the layers against direct reference loops, the layout's PyTorch order, and the layer-list language.
#include <gtest/gtest.h>

#include <memory>

#include "uqnn/core/error.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/cnn_layer_list.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {
namespace {

struct CnnCase {
  std::string name;
  std::shared_ptr<Cnn> model;
};
void PrintTo(const CnnCase& value, std::ostream* os) { *os << value.name; }

CnnLayer conv_layer(Index out, Index kh, Index kw, Index sh = 1, Index sw = 1, Index ph = 0, Index pw = 0, Index groups = 1,
                    bool bias = true) {
  CnnLayer c;
  c.type = CnnLayerType::Conv;
  c.out = out;
  c.kernel_h = kh;
  c.kernel_w = kw;
  c.stride_h = sh;
  c.stride_w = sw;
  c.pad_h = ph;
  c.pad_w = pw;
  c.groups = groups;
  c.bias = bias;
  return c;
}
CnnLayer pool_layer(CnnLayerType type, Index k, Index s, Index p) {
  CnnLayer l;
  l.type = type;
  l.kernel_h = l.kernel_w = k;
  l.stride_h = l.stride_w = s;
  l.pad_h = l.pad_w = p;
  return l;
}
CnnLayer simple(CnnLayerType type) {
  CnnLayer l;
  l.type = type;
  return l;
}
CnnLayer act(Activation a) {
  CnnLayer l;
  l.type = CnnLayerType::Activation;
  l.activation = a;
  return l;
}
CnnLayer fc(Index out) {
  CnnLayer l;
  l.type = CnnLayerType::Linear;
  l.out = out;
  return l;
}
CnnLayer group_norm(Index groups) {
  CnnLayer l;
  l.type = CnnLayerType::GroupNorm;
  l.groups = groups;
  return l;
}

std::shared_ptr<Cnn> parsed(const std::string& text, ImageShape shape, Index outputs, Activation a) {
  return std::make_shared<Cnn>(shape, parse_cnn_layers(text, shape, outputs, a), default_init_scheme(a), text);
}

std::vector<CnnCase> cnn_cases() {
  std::vector<CnnCase> cases;
  const auto add = [&](std::string name, ImageShape shape, std::vector<CnnLayer> layers) {
    cases.push_back({std::move(name), std::make_shared<Cnn>(shape, std::move(layers), InitScheme::Glorot)});
  };
  add("conv_stride2_pad1", {2, 6, 5}, {conv_layer(3, 3, 3, 2, 2, 1, 1), act(Activation::Tanh), fc(2)});
  add("conv_rectangular", {2, 5, 7}, {conv_layer(3, 2, 3, 1, 2, 1, 0), act(Activation::Sigmoid), fc(2)});
  add("conv_groups_no_bias", {4, 5, 5},
      {conv_layer(6, 3, 3, 1, 1, 1, 1, 2), act(Activation::Tanh), conv_layer(4, 1, 1, 1, 1, 0, 0, 2, false), act(Activation::Silu), fc(2)});
  add("maxpool", {2, 6, 6}, {conv_layer(3, 3, 3, 1, 1, 1, 1), act(Activation::Tanh), pool_layer(CnnLayerType::MaxPool, 2, 2, 0), fc(2)});
  add("maxpool_overlapping_padded", {2, 7, 6},
      {conv_layer(3, 3, 3), act(Activation::Tanh), pool_layer(CnnLayerType::MaxPool, 3, 2, 1), fc(2)});
  add("avgpool", {2, 6, 6}, {conv_layer(3, 3, 3, 1, 1, 1, 1), act(Activation::Tanh), pool_layer(CnnLayerType::AvgPool, 2, 2, 0), fc(2)});
  add("avgpool_padded", {2, 7, 7}, {conv_layer(3, 3, 3), act(Activation::Sine), pool_layer(CnnLayerType::AvgPool, 3, 2, 1), fc(2)});
  add("global_avgpool", {2, 5, 5}, {conv_layer(4, 3, 3), act(Activation::Tanh), simple(CnnLayerType::GlobalAvgPool), fc(3)});
  add("flatten", {2, 4, 4}, {conv_layer(3, 3, 3), act(Activation::Tanh), simple(CnnLayerType::Flatten), fc(4), act(Activation::Tanh), fc(2)});
  add("groupnorm", {2, 5, 5}, {conv_layer(4, 3, 3), group_norm(2), act(Activation::Tanh), fc(2)});
  add("groupnorm_one_group", {2, 5, 5}, {conv_layer(4, 3, 3), group_norm(1), act(Activation::Tanh), fc(2)});
  {
    CnnLayer frn = simple(CnnLayerType::FilterResponseNorm);
    frn.eps = 1e-6;
    add("frn", {2, 5, 5}, {conv_layer(4, 3, 3), frn, fc(2)});
  }
  {
    CnnLayer bn = simple(CnnLayerType::BatchNorm);
    bn.running_mean = {0.3, -0.2, 0.1};
    bn.running_var = {0.5, 2.0, 1.3};
    add("batchnorm_eval", {2, 5, 5}, {conv_layer(3, 3, 3), bn, act(Activation::Tanh), fc(2)});
  }
  // The layer-list language: BasicBlocks with the identity and with a projection shortcut, every norm.
  cases.push_back({"res_identity_tanh", parsed("conv4k3p1,res4", {2, 5, 5}, 2, Activation::Tanh)});
  cases.push_back({"res_projection_gn_silu", parsed("conv4k3,res6s2gn2", {2, 6, 6}, 2, Activation::Silu)});
  cases.push_back({"res_frn_tanh", parsed("conv4k3,res4frn,res6s2frn,gap", {1, 6, 6}, 2, Activation::Tanh)});
  cases.push_back({"res_bn_no_norm_tanh", parsed("conv3k3,res3bn,res4nn", {1, 5, 5}, 2, Activation::Tanh)});
  cases.push_back({"resnet8_gn_tanh", parsed("resnet8w2gn1", {1, 6, 6}, 3, Activation::Tanh)});
  cases.push_back({"lenet_relu", parsed("conv3k3,pool2,conv4k2,pool2,fc6", {1, 10, 10}, 3, Activation::Relu)});
  return cases;
}

// L(Y) = sum C .* Y + 0.5 sum Y.^2 (curvature in the outputs, as in model_derivatives_test).
template <typename T>
OutputLoss<T> cnn_loss(const Mat& C) {
  return [C](const MatT<T>& Y, MatT<T>& dY) -> T {
    const MatT<T> Ct = C.cast<T>();
    dY = Ct + Y;
    return (Ct.cwiseProduct(Y)).sum() + T(0.5) * Y.cwiseProduct(Y).sum();
  };
}

class CnnDerivatives : public ::testing::TestWithParam<CnnCase> {
 protected:
  void SetUp() override {
    model_ = GetParam().model;
    Rng rng(11);
    theta_ = model_->initial_params(rng);
    theta_ += 0.3 * rng.normal_vector(theta_.size());  // non-zero biases, norms away from the identity
    X_ = Mat(model_->input_dim(), 3);
    for (Index i = 0; i < X_.size(); ++i) X_.data()[i] = rng.uniform(-1.5, 1.5);
    C_ = Mat(model_->output_dim(), X_.cols());
    for (Index i = 0; i < C_.size(); ++i) C_.data()[i] = rng.normal();
  }
  double loss_value(const Vec& theta) const {
    Vec g = Vec::Zero(theta.size());
    return model_->value_and_gradient(theta, X_, cnn_loss<double>(C_), g);
  }
  Vec gradient(const Vec& theta) const {
    Vec g = Vec::Zero(theta.size());
    model_->value_and_gradient(theta, X_, cnn_loss<double>(C_), g);
    return g;
  }
  std::shared_ptr<Cnn> model_;
  Vec theta_;
  Mat X_, C_;
};

constexpr double kCnnStep = 1e-5;

TEST_P(CnnDerivatives, GradientMatchesFiniteDifferences) {
  const Vec g = gradient(theta_);
  for (Index k = 0; k < theta_.size(); ++k) {
    Vec plus = theta_, minus = theta_;
    plus[k] += kCnnStep;
    minus[k] -= kCnnStep;
    const double fd = (loss_value(plus) - loss_value(minus)) / (2 * kCnnStep);
    ASSERT_NEAR(g[k], fd, 1e-6 * (1 + std::abs(fd))) << GetParam().name << " parameter " << model_->layout().name_of(k);
  }
}

TEST_P(CnnDerivatives, JacobianMatchesFiniteDifferences) {
  const Mat J = model_->jacobian(theta_, X_);
  const Index out = model_->output_dim();
  ASSERT_EQ(J.rows(), X_.cols() * out);
  ASSERT_EQ(J.cols(), theta_.size());
  // Along random unit directions (every parameter at once; a unit step keeps the finite
  // difference's truncation error small on the larger networks).
  Rng rng(3);
  for (int repeat = 0; repeat < 4; ++repeat) {
    const Vec v = rng.normal_vector(theta_.size()).normalized();
    const Mat fd = (model_->forward(theta_ + kCnnStep * v, X_) - model_->forward(theta_ - kCnnStep * v, X_)) / (2 * kCnnStep);
    const Vec jv = J * v;
    const double scale = 1 + fd.cwiseAbs().maxCoeff();
    for (Index i = 0; i < X_.cols(); ++i)
      for (Index o = 0; o < out; ++o)
        ASSERT_NEAR(jv[i * out + o], fd(o, i), 1e-7 * scale) << GetParam().name << " example " << i << " output " << o;
  }
}

TEST_P(CnnDerivatives, JacobianVectorProductEqualsJacobianTimesVector) {
  Rng rng(9);
  const Vec v = rng.normal_vector(theta_.size());
  const Mat jv = model_->jacobian_vector_product(theta_, v, X_);
  const Vec expected = model_->jacobian(theta_, X_) * v;
  const Eigen::Map<const Vec> flat(jv.data(), jv.size());
  EXPECT_LT((flat - expected).cwiseAbs().maxCoeff(), 1e-11 * (1 + expected.cwiseAbs().maxCoeff())) << GetParam().name;
}

TEST_P(CnnDerivatives, HessianVectorProductMatchesFiniteDifferencesOfGradient) {
  Rng rng(5);
  for (int repeat = 0; repeat < 2; ++repeat) {
    const Vec v = rng.normal_vector(theta_.size()).normalized();
    const Vec hv = model_->hessian_vector_product(theta_, v, X_, cnn_loss<Dual>(C_));
    const Vec fd = (gradient(theta_ + kCnnStep * v) - gradient(theta_ - kCnnStep * v)) / (2 * kCnnStep);
    const double scale = 1 + fd.cwiseAbs().maxCoeff();
    for (Index k = 0; k < theta_.size(); ++k)
      ASSERT_NEAR(hv[k], fd[k], 1e-6 * scale) << GetParam().name << " component " << model_->layout().name_of(k);
  }
}

TEST_P(CnnDerivatives, HessianIsSymmetric) {
  const Index P = theta_.size();
  Rng rng(8);
  // u^T H v == v^T H u for random u, v (exact for an exact Hessian-vector product).
  const Vec u = rng.normal_vector(P), v = rng.normal_vector(P);
  const double uhv = u.dot(model_->hessian_vector_product(theta_, v, X_, cnn_loss<Dual>(C_)));
  const double vhu = v.dot(model_->hessian_vector_product(theta_, u, X_, cnn_loss<Dual>(C_)));
  EXPECT_NEAR(uhv, vhu, 1e-9 * (1 + std::abs(uhv))) << GetParam().name;
}

TEST_P(CnnDerivatives, DescriptionRoundTrips) {
  const auto rebuilt = make_model(model_->to_json());
  EXPECT_EQ(rebuilt->kind(), "cnn");
  EXPECT_EQ(rebuilt->layout(), model_->layout());
  EXPECT_EQ(rebuilt->to_json(), model_->to_json());
  EXPECT_EQ((rebuilt->forward(theta_, X_) - model_->forward(theta_, X_)).cwiseAbs().maxCoeff(), 0.0);
}

TEST_P(CnnDerivatives, Float32PassesAgreeWithFloat64) {
  const Mat outputs = model_->forward(theta_, X_);
  const Vec g = gradient(theta_);
  model_->set_precision(Precision::Float32);
  const Mat outputs32 = model_->forward(theta_, X_);
  const Vec g32 = gradient(theta_);
  const auto rebuilt = make_model(model_->to_json());
  model_->set_precision(Precision::Float64);
  const double scale = 1.0 + outputs.cwiseAbs().maxCoeff();
  EXPECT_LT((outputs32 - outputs).cwiseAbs().maxCoeff(), 1e-5 * scale) << GetParam().name;
  EXPECT_GT((outputs32 - outputs).cwiseAbs().maxCoeff(), 0.0) << "float32 outputs bitwise equal to float64: not a float path";
  EXPECT_LT((g32 - g).norm(), 1e-4 * (1.0 + g.norm())) << GetParam().name;
  EXPECT_EQ(rebuilt->precision(), Precision::Float32);
}

INSTANTIATE_TEST_SUITE_P(Layers, CnnDerivatives, ::testing::ValuesIn(cnn_cases()),
                         [](const ::testing::TestParamInfo<CnnCase>& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// The layers against direct loops written from PyTorch's definitions.

/// Conv2d by its definition: y[o, i, j] = b[o] + sum_{c in o's group, ki, kj} w[o, c', ki, kj] x[c, i s - p + ki, j s - p + kj].
Mat reference_conv(const CnnLayer& l, const Vec& theta, const Mat& X) {
  const ImageShape in = l.in_shape, os = l.out_shape;
  const Index cin_g = in.channels / l.groups, cout_g = l.out / l.groups;
  Mat Y(os.size(), X.cols());
  for (Index n = 0; n < X.cols(); ++n)
    for (Index o = 0; o < l.out; ++o)
      for (Index i = 0; i < os.height; ++i)
        for (Index j = 0; j < os.width; ++j) {
          double sum = l.bias ? theta[l.offset + l.out * cin_g * l.kernel_h * l.kernel_w + o] : 0.0;
          for (Index cg = 0; cg < cin_g; ++cg)
            for (Index ki = 0; ki < l.kernel_h; ++ki)
              for (Index kj = 0; kj < l.kernel_w; ++kj) {
                const Index h = i * l.stride_h - l.pad_h + ki, w = j * l.stride_w - l.pad_w + kj;
                if (h < 0 || h >= in.height || w < 0 || w >= in.width) continue;
                const Index c = o / cout_g * cin_g + cg;
                sum += theta[l.offset + ((o * cin_g + cg) * l.kernel_h + ki) * l.kernel_w + kj] * X(c * in.plane() + h * in.width + w, n);
              }
          Y(o * os.plane() + i * os.width + j, n) = sum;
        }
  return Y;
}

Mat reference_pool(const CnnLayer& l, const Mat& X) {
  const ImageShape in = l.in_shape, os = l.out_shape;
  Mat Y(os.size(), X.cols());
  for (Index n = 0; n < X.cols(); ++n)
    for (Index c = 0; c < os.channels; ++c)
      for (Index i = 0; i < os.height; ++i)
        for (Index j = 0; j < os.width; ++j) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0.0;
          for (Index ki = 0; ki < l.kernel_h; ++ki)
            for (Index kj = 0; kj < l.kernel_w; ++kj) {
              const Index h = i * l.stride_h - l.pad_h + ki, w = j * l.stride_w - l.pad_w + kj;
              if (h < 0 || h >= in.height || w < 0 || w >= in.width) continue;  // -inf (max) or 0 (avg)
              const double x = X(c * in.plane() + h * in.width + w, n);
              best = std::max(best, x);
              sum += x;
            }
          Y(c * os.plane() + i * os.width + j, n) = l.type == CnnLayerType::MaxPool ? best : sum / double(l.kernel_h * l.kernel_w);
        }
  return Y;
}

TEST(CnnLayers, ConvolutionEqualsItsDefinition) {
  for (const CnnLayer& layer : {conv_layer(4, 3, 3), conv_layer(4, 3, 2, 2, 1, 1, 2), conv_layer(6, 2, 2, 2, 2, 0, 0, 2),
                                conv_layer(4, 1, 1, 1, 1, 0, 0, 4, false), conv_layer(2, 5, 5, 3, 3, 2, 2)}) {
    const Cnn net({4, 7, 6}, {layer}, InitScheme::Glorot);
    Rng rng(1);
    const Vec theta = rng.normal_vector(net.num_params());
    Mat X(net.input_dim(), 4);
    for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
    const Mat expected = reference_conv(net.layers()[0], theta, X);
    const Mat got = net.forward(theta, X);
    ASSERT_EQ(got.rows(), expected.rows());
    EXPECT_LT((got - expected).cwiseAbs().maxCoeff(), 1e-12) << net.to_json().dump();
  }
}

TEST(CnnLayers, PoolingEqualsItsDefinition) {
  for (CnnLayerType type : {CnnLayerType::MaxPool, CnnLayerType::AvgPool})
    for (const auto& [k, s, p] : {std::tuple<Index, Index, Index>{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {2, 1, 0}}) {
      const Cnn net({3, 7, 6}, {pool_layer(type, k, s, p)});
      Rng rng(2);
      Mat X(net.input_dim(), 3);
      for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
      const Mat expected = reference_pool(net.layers()[0], X);
      EXPECT_LT((net.forward(Vec(), X) - expected).cwiseAbs().maxCoeff(), 1e-14) << to_string(type) << " k" << k << " s" << s << " p" << p;
    }
}

TEST(CnnLayers, MaxPoolGivesATiedWindowsGradientToItsFirstMaximum) {
  // A 1x1 conv of two channels with weights (1, 1) gives 1 at pixels 0 (from channel 0) and 3 (from
  // channel 1) of a 2x2 window: a tie. PyTorch's CPU kernel passes the gradient to the first
  // maximum (row-major), so channel 0's weight gets it and channel 1's none.
  const Cnn net({2, 2, 2}, {conv_layer(1, 1, 1), pool_layer(CnnLayerType::MaxPool, 2, 2, 0)});
  Mat X(8, 1);
  X << 1.0, 0.0, 0.0, 0.0,  // channel 0
      0.0, 0.0, 0.0, 1.0;   // channel 1
  Vec theta(3);
  theta << 1.0, 1.0, 0.0;  // weight [1, 2, 1, 1], bias
  Vec grad = Vec::Zero(3);
  const OutputLoss<double> pick = [](const Mat& Y, Mat& dY) {
    dY.setOnes(Y.rows(), Y.cols());
    return Y.sum();
  };
  EXPECT_DOUBLE_EQ(net.value_and_gradient(theta, X, pick, grad), 1.0);
  EXPECT_DOUBLE_EQ(grad[0], 1.0);
  EXPECT_DOUBLE_EQ(grad[1], 0.0);
  EXPECT_DOUBLE_EQ(grad[2], 1.0);
}

TEST(CnnLayers, GroupNormStandardisesEachGroupOfEachExample) {
  const Cnn net({4, 3, 3}, {group_norm(2)});
  Vec theta(8);
  theta << 1, 1, 1, 1, 0, 0, 0, 0;  // weight 1, bias 0
  Rng rng(4);
  Mat X(net.input_dim(), 3);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = 3.0 + 2.0 * rng.normal();
  const Mat Y = net.forward(theta, X);
  for (Index n = 0; n < 3; ++n)
    for (Index g = 0; g < 2; ++g) {
      const Vec y = Y.col(n).segment(g * 18, 18);
      const Vec x = X.col(n).segment(g * 18, 18);
      const double var = (x.array() - x.mean()).square().mean();
      EXPECT_NEAR(y.mean(), 0.0, 1e-13);
      EXPECT_NEAR(y.squaredNorm() / 18.0, var / (var + 1e-5), 1e-12);  // biased variance, eps 1e-5 as PyTorch
    }
}

TEST(CnnLayers, FlattenAndGlobalAveragePoolingKeepTheChannelMajorOrder) {
  const Cnn flat({2, 2, 3}, {simple(CnnLayerType::Flatten)});
  Mat X(12, 2);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = static_cast<double>(i);
  EXPECT_EQ(flat.forward(Vec(), X), X);
  const Cnn gap({2, 2, 3}, {simple(CnnLayerType::GlobalAvgPool)});
  const Mat Y = gap.forward(Vec(), X);
  ASSERT_EQ(Y.rows(), 2);
  EXPECT_DOUBLE_EQ(Y(0, 0), 2.5);  // channel 0 of example 0: 0..5
  EXPECT_DOUBLE_EQ(Y(1, 1), 20.5);  // channel 1 of example 1: 18..23
}

TEST(CnnLayers, ResidualBlockAddsItsShortcut) {
  // A body that gives zero (a conv with zero weights and no bias) leaves act(x) through the identity.
  CnnLayer block = simple(CnnLayerType::Residual);
  block.body = {conv_layer(2, 3, 3, 1, 1, 1, 1, 1, false)};
  block.activation = Activation::Tanh;
  const Cnn net({2, 3, 3}, {block});
  Rng rng(6);
  Mat X(18, 2);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.normal();
  EXPECT_LT((net.forward(Vec::Zero(net.num_params()), X) - Mat(X.array().tanh())).cwiseAbs().maxCoeff(), 1e-15);
}

// ---------------------------------------------------------------------------------------------
// Layout and initialisation.

TEST(CnnLayout, FollowsPyTorchNamesShapesAndOrder) {
  const auto layers = parse_cnn_layers("conv6k5,pool2,conv16k5,gn4,pool2,fc120,fc84", {1, 28, 28}, 10, Activation::Relu);
  const Cnn net({1, 28, 28}, layers);
  const auto& blocks = net.layout().blocks();
  const std::vector<std::tuple<std::string, Index, Index>> expected = {
      {"conv1.weight", 6, 25},  {"conv1.bias", 6, 1},   {"conv2.weight", 16, 150}, {"conv2.bias", 16, 1},
      {"gn1.weight", 16, 1},    {"gn1.bias", 16, 1},    {"fc1.weight", 120, 256},  {"fc1.bias", 120, 1},
      {"fc2.weight", 84, 120},  {"fc2.bias", 84, 1},    {"fc3.weight", 10, 84},    {"fc3.bias", 10, 1}};
  ASSERT_EQ(blocks.size(), expected.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].name, std::get<0>(expected[i]));
    EXPECT_EQ(blocks[i].rows, std::get<1>(expected[i]));
    EXPECT_EQ(blocks[i].cols, std::get<2>(expected[i]));
  }
  EXPECT_EQ(net.num_params(), 6 * 25 + 6 + 16 * 150 + 16 + 32 + 120 * 256 + 120 + 84 * 120 + 84 + 10 * 84 + 10);
  EXPECT_EQ(net.output_dim(), 10);
  EXPECT_EQ(net.layout().name_of(25 * 6 - 1), "conv1.weight[5,24]");  // [o, i*kh*kw]: o = 5, (i, kh, kw) = (0, 4, 4)
}

TEST(CnnLayout, InitialisationUsesFansAndUnitNorms) {
  const auto layers = parse_cnn_layers("conv32k3,gn8,fc16", {3, 8, 8}, 2, Activation::Relu);
  const Cnn net({3, 8, 8}, layers, InitScheme::He);
  Rng rng(5);
  const Vec theta = net.initial_params(rng);
  const auto& w = net.layout().block("conv1.weight");
  const Vec weights = theta.segment(w.offset, w.size());
  EXPECT_NEAR(weights.squaredNorm() / double(weights.size()), 2.0 / 27.0, 0.02);  // He: var 2 / fan_in, fan_in 3*3*3
  const auto& g = net.layout().block("gn1.weight");
  EXPECT_EQ(theta.segment(g.offset, g.size()), Vec::Ones(32));
  const auto& b = net.layout().block("gn1.bias");
  EXPECT_EQ(theta.segment(b.offset, b.size()), Vec::Zero(32));
}

// ---------------------------------------------------------------------------------------------
// The layer-list language.

std::vector<CnnLayerType> types_of(const std::vector<CnnLayer>& layers) {
  std::vector<CnnLayerType> out;
  for (const auto& l : layers) out.push_back(l.type);
  return out;
}

TEST(CnnLayerList, ExpandsTokensWithActivationsAfterNorms) {
  using T = CnnLayerType;
  const auto layers = parse_cnn_layers("conv16k3p1,gn4,pool2,conv32k3s2,avgpool2,fc128", {1, 28, 28}, 10, Activation::Relu);
  EXPECT_EQ(types_of(layers), (std::vector<T>{T::Conv, T::GroupNorm, T::Activation, T::MaxPool, T::Conv, T::Activation, T::AvgPool,
                                              T::Linear, T::Activation, T::Linear}));
  EXPECT_EQ(layers[0].pad_h, 1);
  EXPECT_EQ(layers[3].stride_h, 2);  // a pool's stride is its kernel by default
  EXPECT_EQ(layers[4].stride_w, 2);
  EXPECT_EQ(layers.back().out, 10);
  EXPECT_EQ(layers.back().name, "fc2");
  // identity: no activation layers at all
  EXPECT_EQ(types_of(parse_cnn_layers("conv2k3,fc4", {1, 5, 5}, 1, Activation::Identity)),
            (std::vector<T>{T::Conv, T::Linear, T::Linear}));
}

TEST(CnnLayerList, ResNetPresetHasTheCifarShape) {
  const auto layers = parse_cnn_layers("resnet20w16", {3, 32, 32}, 10, Activation::Relu);
  const Cnn net({3, 32, 32}, layers);
  int blocks = 0, projections = 0;
  for (const auto& l : net.layers())
    if (l.type == CnnLayerType::Residual) {
      ++blocks;
      projections += !l.shortcut.empty();
    }
  EXPECT_EQ(blocks, 9);       // 3 stages of (20 - 2) / 6 = 3 blocks
  EXPECT_EQ(projections, 2);  // where the width doubles and the stride is 2
  EXPECT_EQ(net.layers()[net.layers().size() - 2].type, CnnLayerType::GlobalAvgPool);
  EXPECT_EQ(net.layers()[net.layers().size() - 3].out_shape, (ImageShape{64, 8, 8}));
  // ResNet-20 on CIFAR-10 (He et al. 2016): 0.27M parameters (with its BatchNorm's affine maps).
  EXPECT_NEAR(static_cast<double>(net.num_params()), 0.27e6, 0.005e6);
  EXPECT_TRUE(net.layout().block("res1.conv1.weight").size() == 16 * 16 * 9);
  EXPECT_TRUE(net.layout().block("res4.shortcut.0.weight").size() == 32 * 16);
}

void expect_input_error(const std::string& text, const std::vector<std::string>& parts, ImageShape shape = {1, 8, 8}) {
  try {
    parse_cnn_layers(text, shape, 2, Activation::Relu);
    FAIL() << "expected InputError for '" << text << "'";
  } catch (const InputError& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "'" << part << "' not in: " << e.what();
  }
}

TEST(CnnLayerList, BadStringsNameTheTokenItsPositionAndWhatIsValid) {
  const std::string valid = "valid tokens are conv<out>k<k>";
  expect_input_error("conv4k3,pol2", {"--layers 'conv4k3,pol2'", "token 2 'pol2' is not a layer", valid});
  expect_input_error("conv4", {"token 1 'conv4' needs its kernel size", valid});
  expect_input_error("conv4k3x2", {"token 1 'conv4k3x2' has an unknown option 'x'", "options: g<n>, k<n>, nb, p<n>, s<n>"});
  expect_input_error("conv4k3,,fc2", {"token 2 '' is empty"});
  expect_input_error("conv4k3,", {"token 2 '' is empty"});
  expect_input_error("fc", {"token 1 'fc' needs a number >= 1"});
  expect_input_error("gap3", {"token 1 'gap3' takes no number"});
  expect_input_error("conv4k3s0", {"option 's' must be >= 1"});
  expect_input_error("conv4k3k5", {"gives option 'k' twice"});
  expect_input_error("res8gn3frn", {"more than one normalisation"});
  expect_input_error("resnet10", {"token 1 'resnet10' has depth 10", "6 m + 2"});
  expect_input_error("conv4k3,conv4k9", {"token 2 'conv4k9' does not fit its input 4x6x6", "kernel 9x9 is larger than its input 6x6"});
  expect_input_error("conv6k3,gn4", {"token 2 'gn4' does not fit", "6 channels must be divisible by its 4 groups"});
  expect_input_error("conv4k3-2", {"unexpected character '-'"});
  expect_input_error("  ", {"--layers is empty", valid});
  expect_input_error("conv6k3g4", {"divisible by groups 4"});
}

TEST(CnnLayerList, InputShapeIsCheckedAgainstTheData) {
  EXPECT_EQ(parse_image_shape({1, 28, 28}, 784), (ImageShape{1, 28, 28}));
  EXPECT_EQ(parse_image_shape({8, 8}, 64), (ImageShape{1, 8, 8}));
  try {
    parse_image_shape({1, 28, 28}, 64);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--input-shape 1x28x28 is 784 values per example, but the data have 64 input columns"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_image_shape({1, 0, 28}, 0), InputError);
  EXPECT_THROW(parse_image_shape({784}, 784), InputError);
}

TEST(CnnDescription, BadDescriptionsAreInputErrors) {
  nlohmann::json d = Cnn({1, 5, 5}, parse_cnn_layers("conv2k3", {1, 5, 5}, 1, Activation::Tanh)).to_json();
  nlohmann::json bad = d;
  bad["layers"][0]["type"] = "deconv";
  EXPECT_THROW(make_model(bad), InputError);
  bad = d;
  bad["input_shape"] = {5, 5};
  EXPECT_THROW(make_model(bad), InputError);
  bad = d;
  bad["output_dim"] = 3;
  EXPECT_THROW(make_model(bad), InputError);
  bad = d;
  bad["layers"][0]["out"] = 0;
  EXPECT_THROW(make_model(bad), InputError);
  // Sizes are whole numbers in range before anything is allocated.
  for (const nlohmann::json& out : {nlohmann::json(6.5), nlohmann::json(1e12), nlohmann::json(-2), nlohmann::json("8")}) {
    bad = d;
    bad["layers"][0]["out"] = out;
    EXPECT_THROW(make_model(bad), InputError) << out.dump();
  }
  bad = d;
  bad["layers"][0]["out"] = 1000000;
  bad["layers"][0]["kernel"] = {5, 5};
  bad["input_shape"] = {2000, 5, 5};
  try {
    make_model(bad);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("parameters 5e+10, more than the 1e+09 uqnn takes"), std::string::npos) << e.what();
  }
  bad = d;
  bad["input_shape"] = {1, 5.5, 5};
  EXPECT_THROW(make_model(bad), InputError);
}

// A CNN posterior's value alone (the forward pass, in chunks of examples_per_pass) is its gradient
// path's value, in both precisions, for a data set of one chunk and of several.
TEST(CnnPosterior, TheValueAloneIsTheGradientPathsValueInBothPrecisions) {
  for (const Precision precision : {Precision::Float64, Precision::Float32}) {
    const auto model = parsed("conv16k3p1,gn4,pool2,fc8", {1, 28, 28}, 3, Activation::Relu);
    model->set_precision(precision);
    const Index n = model->examples_per_pass() + 7;  // two chunks
    ASSERT_LT(n, 5000);
    Rng rng(12);
    Mat X(784, n), Y(1, n);
    for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.uniform(-1, 1);
    for (Index i = 0; i < n; ++i) Y(0, i) = static_cast<double>(rng.uniform_index(3));
    const Posterior post(model, make_categorical_likelihood(3), GaussianPrior::isotropic(model->num_params(), 1.0), X, Y);
    const Vec theta = post.initial_point(rng);
    Vec grad;
    const double value = post.log_density_and_grad(theta, grad);
    EXPECT_NEAR(post.log_density(theta), value, 1e-12 * std::abs(value)) << (precision == Precision::Float32 ? "float32" : "float64");
  }
}

}  // namespace
}  // namespace uqnn
