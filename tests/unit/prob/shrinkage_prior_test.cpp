// Horseshoe, regularized horseshoe and ARD priors (issue 20, item 4): the non-centred model's
// weights, derivatives and JSON against hand computations and finite differences; the prior's log
// density against the closed forms, its derivatives against finite differences, its exact draws
// against the distributions' quantiles; and NUTS at its defaults on the prior alone against the
// exact draws' quantiles within Monte Carlo error.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "../mcmc/test_models.hpp"
#include "uqnn/mcmc/nuts.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/nn/non_centred_model.hpp"
#include "uqnn/prob/shrinkage_prior.hpp"

namespace uqnn {
namespace {

ShrinkageSpec spec_of(ShrinkageKind kind, ShrinkageGroups groups = ShrinkageGroups::Unit) {
  ShrinkageSpec s;
  s.kind = kind;
  s.groups = groups;
  s.global_scale = 0.7;
  s.bias_sd = 1.5;
  return s;
}

std::shared_ptr<NonCentredModel> small_model(const ShrinkageSpec& spec) {
  return std::make_shared<NonCentredModel>(std::make_shared<Mlp>(MlpSpec{2, {3}, 1, Activation::Tanh, InitScheme::Glorot}), spec);
}

struct Case {
  const char* name;
  ShrinkageKind kind;
  ShrinkageGroups groups;
};
const Case kCases[] = {{"horseshoe_weight", ShrinkageKind::Horseshoe, ShrinkageGroups::Weight},
                       {"horseshoe_unit", ShrinkageKind::Horseshoe, ShrinkageGroups::Unit},
                       {"horseshoe_layer", ShrinkageKind::Horseshoe, ShrinkageGroups::Layer},
                       {"regularized", ShrinkageKind::RegularizedHorseshoe, ShrinkageGroups::Unit},
                       {"ard", ShrinkageKind::Ard, ShrinkageGroups::Unit}};

/// u's entry named `block`[i] (a vector block of the hierarchy's layout).
double entry(const NonCentredModel& m, const Vec& u, const std::string& block, Index i = 0) {
  return u[m.layout().block(block).offset + i];
}

/// w computed from the definitions in nn/non_centred_model.hpp, block by block.
Vec weights_by_hand(const NonCentredModel& m, const Vec& u) {
  const ShrinkageSpec& s = m.hierarchy().spec;
  Vec w = u.head(m.network().num_params());
  for (const auto& b : m.network().layout().blocks()) {
    if (!b.matrix) continue;
    const bool first = b.offset == 0;
    for (Index r = 0; r < b.rows; ++r)
      for (Index c = 0; c < b.cols; ++c) {
        double scale = 1.0 / std::sqrt(static_cast<double>(b.fan_in));
        if (s.kind == ShrinkageKind::Ard) {
          scale *= std::exp(entry(m, u, b.name + ".log_scale", first ? c : 0));
        } else {
          const bool per_layer = s.groups == ShrinkageGroups::Layer;
          const double tau = std::exp(per_layer ? entry(m, u, "log_tau") : entry(m, u, b.name + ".log_tau"));
          const Index which = s.groups == ShrinkageGroups::Weight ? r * b.cols + c : s.groups == ShrinkageGroups::Unit ? r : 0;
          const double lambda = std::exp(entry(m, u, b.name + ".log_lambda", which));
          double local = lambda;
          if (s.kind == ShrinkageKind::RegularizedHorseshoe) {
            const double c2 = std::exp(2.0 * entry(m, u, "log_c"));
            local = std::sqrt(c2 * lambda * lambda / (c2 + tau * tau * lambda * lambda));  // Piironen & Vehtari eq. 2.8
          }
          scale *= tau * local;
        }
        w[b.offset + r * b.cols + c] *= scale;
      }
  }
  return w;
}

/// A smooth, non-quadratic loss: sum sin(Y) + Y^2 / 2 - target Y.
template <typename T>
OutputLoss<T> test_loss() {
  return [](const MatT<T>& Y, MatT<T>& dY) {
    T value = T(0.0);
    dY.resize(Y.rows(), Y.cols());
    for (Index j = 0; j < Y.cols(); ++j)
      for (Index i = 0; i < Y.rows(); ++i) {
        using std::cos;
        using std::sin;
        value = value + sin(Y(i, j)) + T(0.5) * Y(i, j) * Y(i, j) - T(0.3) * Y(i, j);
        dY(i, j) = cos(Y(i, j)) + Y(i, j) - T(0.3);
      }
    return value;
  };
}

class NonCentredModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(NonCentredModelTest, WeightsDerivativesAndJsonMatchTheDefinitions) {
  const auto model = small_model(spec_of(GetParam().kind, GetParam().groups));
  const ShrinkagePrior prior(model->hierarchy());
  Rng rng(3);
  Vec u = prior.sample(rng);
  // Keep the log-scales moderate so finite differences stay accurate.
  u.tail(model->hierarchy().num_hyper()) = u.tail(model->hierarchy().num_hyper()).cwiseMax(-1.0).cwiseMin(1.0);
  Mat X(2, 4);
  X << 0.3, -1.0, 0.8, 0.1, -0.5, 0.4, 1.2, -0.9;
  const Index K = model->num_params();

  const Vec w = weights_by_hand(*model, u);
  EXPECT_LT((model->network_params(u) - w).norm(), 1e-13);
  EXPECT_LT((model->forward(u, X) - model->network().forward(w, X)).norm(), 1e-13);

  // Gradient against central differences.
  const auto loss = test_loss<double>();
  Vec grad = Vec::Zero(K);
  model->value_and_gradient(u, X, loss, grad);
  const auto value_at = [&](const Vec& x) {
    Vec g = Vec::Zero(K);
    return model->value_and_gradient(x, X, loss, g);
  };
  const double h = 1e-6;
  for (Index k = 0; k < K; ++k) {
    Vec up = u, down = u;
    up[k] += h, down[k] -= h;
    EXPECT_NEAR(grad[k], (value_at(up) - value_at(down)) / (2 * h), 1e-6) << model->layout().name_of(k);
  }

  // Hessian-vector product against differences of the gradient.
  const Vec v = Rng(4).normal_vector(K);
  const Vec hv = model->hessian_vector_product(u, v, X, test_loss<Dual>());
  Vec g_up = Vec::Zero(K), g_down = Vec::Zero(K);
  model->value_and_gradient(u + 1e-5 * v, X, loss, g_up);
  model->value_and_gradient(u - 1e-5 * v, X, loss, g_down);
  EXPECT_LT((hv - (g_up - g_down) / 2e-5).cwiseAbs().maxCoeff(), 1e-6 * (1.0 + hv.cwiseAbs().maxCoeff()));

  // Jacobian: its columns are the Jacobian-vector products along the unit vectors.
  const Mat J = model->jacobian(u, X);
  ASSERT_EQ(J.cols(), K);
  const Mat jv = model->jacobian_vector_product(u, v, X);
  EXPECT_LT((J * v - Eigen::Map<const Vec>(jv.data(), jv.size())).norm(), 1e-12 * (1.0 + jv.norm()));
  const Mat fd = (model->forward(u + 1e-6 * v, X) - model->forward(u - 1e-6 * v, X)) / 2e-6;
  EXPECT_LT((jv - fd).norm(), 1e-7);

  // The description rebuilds the same model.
  const auto rebuilt = make_model(nlohmann::json::parse(model->to_json().dump()));
  EXPECT_EQ(rebuilt->kind(), "non_centred");
  EXPECT_EQ(rebuilt->layout(), model->layout());
  EXPECT_LT((rebuilt->forward(u, X) - model->forward(u, X)).norm(), 1e-15);
}

TEST_P(NonCentredModelTest, StartsAtTheNetworksInitialisation) {
  const auto model = small_model(spec_of(GetParam().kind, GetParam().groups));
  Rng a(9), b(9);
  const Vec u = model->initial_params(a);
  EXPECT_LT((model->network_params(u) - model->network().initial_params(b)).norm(), 1e-14);
}

INSTANTIATE_TEST_SUITE_P(Kinds, NonCentredModelTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(NonCentredModel, GroupsAreUnitsLayersAndInputs) {
  const auto weight = small_model(spec_of(ShrinkageKind::Horseshoe, ShrinkageGroups::Weight));
  EXPECT_EQ(weight->hierarchy().num_hyper(), 1 + 6 + 1 + 3);  // per layer: tau and a lambda per weight
  EXPECT_EQ(weight->hierarchy().groups.size(), 9u);
  const auto unit = small_model(spec_of(ShrinkageKind::Horseshoe));
  // layer1: tau + 3 lambdas; layer2: tau + 1 lambda.
  EXPECT_EQ(unit->hierarchy().num_hyper(), 6);
  EXPECT_EQ(unit->layout().block("layer1.weight.log_lambda").rows, 3);
  EXPECT_EQ(unit->layout().block("layer1.weight_raw").size(), 6);
  const auto layer = small_model(spec_of(ShrinkageKind::Horseshoe, ShrinkageGroups::Layer));
  EXPECT_EQ(layer->hierarchy().num_hyper(), 3);  // one tau, a lambda per layer
  const auto regularized = small_model(spec_of(ShrinkageKind::RegularizedHorseshoe));
  EXPECT_EQ(regularized->hierarchy().num_hyper(), 7);
  const auto ard = small_model(spec_of(ShrinkageKind::Ard));
  EXPECT_EQ(ard->layout().block("layer1.weight.log_scale").rows, 2);  // one per input
  EXPECT_EQ(ard->layout().block("layer2.weight.log_scale").rows, 1);
  EXPECT_EQ(ard->num_params(), 13 + 3);
}

TEST(NonCentredModel, RefusesAModelWithoutWeights) {
  ParamLayout biases_only;
  biases_only.add_vector("bias", 2, 1);
  EXPECT_THROW(make_scale_hierarchy(biases_only, ShrinkageSpec{}), InputError);
  ShrinkageSpec bad;
  bad.slab_df = -1;
  EXPECT_THROW(bad.validate(), InputError);
}

// ---- the prior ----

double log_half_cauchy_density(double t, double scale) {
  return std::log(2.0 / (std::numbers::pi * scale)) - std::log1p((t / scale) * (t / scale));
}
double log_inverse_gamma_density(double v, double a, double b) {
  return a * std::log(b) - std::lgamma(a) - (a + 1) * std::log(v) - b / v;
}

class ShrinkagePriorTest : public ::testing::TestWithParam<Case> {};

TEST_P(ShrinkagePriorTest, DensityIsTheClosedFormWithTheLogJacobian) {
  const auto model = small_model(spec_of(GetParam().kind, GetParam().groups));
  const ShrinkagePrior prior(model->hierarchy());
  const ScaleHierarchy& H = model->hierarchy();
  const ShrinkageSpec& s = H.spec;
  Rng rng(5);
  const Vec u = prior.sample(rng);
  double expected = 0.0;
  for (Index k = 0; k < H.num_network; ++k) {
    const double sd = H.group_of[static_cast<std::size_t>(k)] >= 0 ? 1.0 : s.bias_sd;
    expected += -0.5 * (u[k] / sd) * (u[k] / sd) - std::log(sd) - 0.5 * std::log(2 * std::numbers::pi);
  }
  for (const auto& b : model->layout().blocks()) {
    if (b.offset < H.num_network) continue;
    for (Index i = 0; i < b.size(); ++i) {
      const double log_t = u[b.offset + i], t = std::exp(log_t);
      const std::string& n = b.name;
      const auto ends_with = [&n](const std::string& suffix) {
        return n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      double log_p = 0.0;  // density of t, then + log |dt/du| = log t; of v = t^2: + log |dv/du| = log 2 t^2
      if (ends_with("log_tau")) log_p = log_half_cauchy_density(t, s.global_scale) + log_t;
      else if (ends_with("log_lambda")) log_p = log_half_cauchy_density(t, 1.0) + log_t;
      else if (ends_with("log_c"))
        log_p = log_inverse_gamma_density(t * t, s.slab_df / 2, s.slab_df * s.slab_scale * s.slab_scale / 2) + std::log(2 * t * t);
      else if (ends_with("log_scale")) log_p = log_inverse_gamma_density(t * t, s.ard_shape, s.ard_rate) + std::log(2 * t * t);
      else ADD_FAILURE() << "unexpected block " << n;
      expected += log_p;
    }
  }
  EXPECT_NEAR(prior.log_density(u, nullptr), expected, 1e-11);

  // Gradient and Hessian diagonal against central differences (it is separable).
  Vec grad = Vec::Zero(u.size());
  prior.log_density(u, &grad);
  const Vec hd = prior.hessian_diagonal(u);
  const double h = 1e-5;
  for (Index k = 0; k < u.size(); ++k) {
    Vec up = u, down = u;
    up[k] += h, down[k] -= h;
    Vec gu = Vec::Zero(u.size()), gd = Vec::Zero(u.size());
    const double fu = prior.log_density(up, &gu), fd = prior.log_density(down, &gd);
    EXPECT_NEAR(grad[k], (fu - fd) / (2 * h), 1e-6 * (1 + std::abs(grad[k]))) << model->layout().name_of(k);
    EXPECT_NEAR(hd[k], (gu[k] - gd[k]) / (2 * h), 1e-5 * (1 + std::abs(hd[k]))) << model->layout().name_of(k);
  }
  // Far in the tails it stays finite and points back.
  Vec far = u;
  far.tail(H.num_hyper()).setConstant(400.0);
  Vec far_grad = Vec::Zero(u.size());
  EXPECT_TRUE(std::isfinite(prior.log_density(far, &far_grad)));
  EXPECT_TRUE(far_grad.allFinite());
  EXPECT_TRUE(prior.hessian_diagonal(far).allFinite());

  // The description rebuilds the same prior.
  const auto rebuilt = make_prior(nlohmann::json::parse(prior.to_json().dump()));
  EXPECT_EQ(rebuilt->dim(), prior.dim());
  EXPECT_DOUBLE_EQ(rebuilt->log_density(u, nullptr), prior.log_density(u, nullptr));
}

INSTANTIATE_TEST_SUITE_P(Kinds, ShrinkagePriorTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ShrinkagePrior, ExactDrawsHaveTheDistributionsQuantiles) {
  // Half-Cauchy(0, S): P(t <= S tan(pi p / 2)) = p; Gamma(a, b): mean a / b, variance a / b^2.
  auto spec = spec_of(ShrinkageKind::RegularizedHorseshoe, ShrinkageGroups::Layer);
  const auto model = small_model(spec);
  const ShrinkagePrior prior(model->hierarchy());
  const Index tau = model->layout().block("log_tau").offset, c = model->layout().block("log_c").offset;
  Rng rng(11);
  const int n = 40000;
  std::vector<double> taus, slab_precisions;
  for (int i = 0; i < n; ++i) {
    const Vec u = prior.sample(rng);
    taus.push_back(std::exp(u[tau]));
    slab_precisions.push_back(std::exp(-2.0 * u[c]));
  }
  for (double p : {0.1, 0.5, 0.9}) {
    const double q = spec.global_scale * std::tan(0.5 * std::numbers::pi * p);
    const double below = static_cast<double>(std::count_if(taus.begin(), taus.end(), [q](double t) { return t <= q; })) / n;
    EXPECT_NEAR(below, p, 4.5 * std::sqrt(p * (1 - p) / n)) << "p " << p;
  }
  const double a = spec.slab_df / 2, b = spec.slab_df * spec.slab_scale * spec.slab_scale / 2;
  double mean = 0, square = 0;
  for (double x : slab_precisions) mean += x, square += x * x;
  mean /= n;
  const double variance = square / n - mean * mean;
  EXPECT_NEAR(mean, a / b, 4.5 * std::sqrt(a / (b * b) / n));
  EXPECT_NEAR(variance, a / (b * b), 0.05 * a / (b * b));
  // Shape below 1 goes through the boost.
  Rng gamma_rng(12);
  double small_mean = 0;
  for (int i = 0; i < n; ++i) small_mean += sample_gamma(gamma_rng, 0.3, 2.0);
  EXPECT_NEAR(small_mean / n, 0.15, 4.5 * std::sqrt(0.3 / 4.0 / n));
}

/// The prior alone as a sampler's target.
class PriorDensity : public LogDensity {
 public:
  explicit PriorDensity(std::shared_ptr<const Prior> prior) : prior_(std::move(prior)) {}
  Index dim() const override { return prior_->dim(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override {
    grad.setZero(dim());
    return prior_->log_density(theta, &grad);
  }

 private:
  std::shared_ptr<const Prior> prior_;
};

TEST(ShrinkagePrior, NutsAtItsDefaultsReproducesThePriorsMarginalQuantiles) {
  // The regularized horseshoe per unit on a 2-3-1 network: NUTS (uqnn fit's defaults: 4 chains x
  // (1000 + 1000), Stan's adaptation) from prior draws. For a weight w = z s(h), its scale tau, a
  // lambda and the slab c, the fraction of draws at or below each exact quantile (from 400,000
  // exact draws) must match the level within Monte Carlo error (MCSE of the indicator's mean,
  // Bonferroni over every check, family-wise 1%).
  const auto model = small_model(spec_of(ShrinkageKind::RegularizedHorseshoe));
  const auto prior = std::make_shared<ShrinkagePrior>(model->hierarchy());
  const Index weight = model->layout().block("layer1.weight_raw").offset + 1;  // w[0, 1]
  const Index tau = model->layout().block("layer1.weight.log_tau").offset;
  const Index lambda = model->layout().block("layer1.weight.log_lambda").offset + 2;
  const Index slab = model->layout().block("log_c").offset;
  const auto quantity = [&](const Vec& u, int which) {
    switch (which) {
      case 0: return model->network_params(u)[weight];
      case 1: return u[tau];
      case 2: return u[lambda];
      default: return u[slab];
    }
  };
  const std::vector<double> levels = {0.05, 0.25, 0.5, 0.75, 0.95};
  std::vector<std::vector<double>> exact(4);
  Rng exact_rng(21);
  for (int i = 0; i < 400000; ++i) {
    const Vec u = prior->sample(exact_rng);
    for (int q = 0; q < 4; ++q) exact[static_cast<std::size_t>(q)].push_back(quantity(u, q));
  }
  std::vector<std::vector<double>> quantiles(4);
  for (int q = 0; q < 4; ++q) {
    auto& x = exact[static_cast<std::size_t>(q)];
    std::sort(x.begin(), x.end());
    for (double p : levels) quantiles[static_cast<std::size_t>(q)].push_back(x[static_cast<std::size_t>(p * (x.size() - 1))]);
  }

  const auto target = std::make_shared<PriorDensity>(prior);
  const RunResult run = testing::run_at_defaults(target, NutsConfig{}, prior->sample(exact_rng), 0.5, 23, "nuts");
  const Index C = static_cast<Index>(run.draws.size()), S = run.draws[0].rows();
  const int checks = 4 * static_cast<int>(levels.size());
  const double z = diagnostics::inverse_normal_cdf(1.0 - 0.01 / (2.0 * checks));
  const char* names[] = {"w[0,1]", "log tau", "log lambda", "log c"};
  for (int q = 0; q < 4; ++q)
    for (std::size_t l = 0; l < levels.size(); ++l) {
      Mat below(S, C);
      for (Index c = 0; c < C; ++c)
        for (Index s = 0; s < S; ++s)
          below(s, c) = quantity(run.draws[static_cast<std::size_t>(c)].row(s).transpose(), q) <= quantiles[static_cast<std::size_t>(q)][l];
      const double fraction = below.mean(), mcse = diagnostics::mcse_mean(below);
      std::printf("  %-10s p %.2f: NUTS %.4f (MCSE %.4f)\n", names[q], levels[l], fraction, mcse);
      EXPECT_LT(std::abs(fraction - levels[l]) / mcse, z) << names[q] << " at level " << levels[l];
      EXPECT_LT(mcse, 0.03) << names[q] << ": the chains are too inefficient";
    }
  EXPECT_LT(run.num_divergent(), S * C / 100) << "divergences";
}

}  // namespace
}  // namespace uqnn
