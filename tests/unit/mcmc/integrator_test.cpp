// Deterministic parts of the Hamiltonian samplers (DESIGN testing ladder, step 1): metric
// algebra, leapfrog energy error O(eps^2), exact reversibility, non-finite densities.
#include <gtest/gtest.h>

#include <cmath>

#include "test_models.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/hmc.hpp"
#include "uqnn/mcmc/integrator.hpp"
#include "uqnn/mcmc/mala.hpp"
#include "uqnn/mcmc/nuts.hpp"

namespace uqnn {
namespace {

/// A non-Gaussian 2-D density: log p = -x^4/4 - (y - x^2)^2 / 2 (a quartic "banana").
class Banana : public LogDensity {
 public:
  Index dim() const override { return 2; }
  double log_density_and_grad(const Vec& t, Vec& g) const override {
    const double x = t[0], y = t[1], r = y - x * x;
    g.resize(2);
    g << -x * x * x + 2.0 * x * r, -r;
    return -0.25 * x * x * x * x - 0.5 * r * r;
  }
};

/// N(0, I) for x0 < 1 and NaN beyond (a hole in the support).
class HoleDensity : public LogDensity {
 public:
  explicit HoleDensity(Index d) : d_(d) {}
  Index dim() const override { return d_; }
  double log_density_and_grad(const Vec& t, Vec& g) const override {
    g = -t;
    if (t[0] > 1.0) return std::nan("");
    return -0.5 * t.squaredNorm();
  }

 private:
  Index d_;
};

Metric dense_test_metric() {
  Mat m(3, 3);
  m << 2.0, 0.3, -0.2, 0.3, 1.0, 0.1, -0.2, 0.1, 0.5;
  return make_dense_metric(m);
}

TEST(HmcMetric, KineticEnergyVelocityAndMomentumCovariance) {
  Vec inv(3);
  inv << 2.0, 0.5, 1.5;
  for (const Metric& metric : {make_diagonal_metric(inv), dense_test_metric()}) {
    const Mat minv = inverse_metric_matrix(metric);
    Vec p(3);
    p << 0.3, -1.2, 0.7;
    EXPECT_NEAR(kinetic_energy(metric, p), 0.5 * p.dot(minv * p), 1e-14);
    Vec v;
    velocity(metric, p, v);
    EXPECT_LT((v - minv * p).norm(), 1e-14);
    // p ~ N(0, M), M = (M^-1)^-1: sample covariance of 40000 draws within 3% (relative to ||M||).
    Rng rng(3);
    Mat sum = Mat::Zero(3, 3);
    const int n = 40000;
    Vec draw;
    for (int i = 0; i < n; ++i) {
      sample_momentum(metric, rng, draw);
      sum += draw * draw.transpose();
    }
    const Mat m = minv.inverse();
    EXPECT_LT((sum / n - m).norm() / m.norm(), 0.03) << metric_name(metric);
  }
  EXPECT_THROW(make_diagonal_metric(Vec::Constant(2, -1.0)), std::invalid_argument);
  Mat indefinite(2, 2);
  indefinite << 1.0, 2.0, 2.0, 1.0;
  EXPECT_THROW(make_dense_metric(indefinite), std::invalid_argument);
}

TEST(HmcMetric, TurningCriterion) {
  Vec rho(2), forward(2), backward(2);
  rho << 1.0, 0.0;
  forward << 1.0, 0.5;
  backward << -0.1, 1.0;
  EXPECT_FALSE(is_turning(forward, forward, rho));
  EXPECT_TRUE(is_turning(backward, forward, rho));
  EXPECT_TRUE(is_turning(forward, backward, rho));
}

/// |H(T) - H(0)| after integrating to time T = 1 with step size eps.
double energy_error(const LogDensity& density, const Metric& metric, const Vec& q, const Vec& p, double eps) {
  PhasePoint z{q, p, Vec(), 0.0};
  EXPECT_TRUE(evaluate(density, z));
  const double h0 = hamiltonian(metric, z);
  Vec scratch;
  const int steps = static_cast<int>(std::lround(1.0 / eps));
  for (int i = 0; i < steps; ++i) EXPECT_TRUE(leapfrog(density, metric, eps, z, scratch));
  return std::abs(hamiltonian(metric, z) - h0);
}

TEST(HmcLeapfrog, EnergyErrorIsSecondOrder) {
  const auto gaussian = testing::correlated_gaussian();
  const Banana banana;
  Vec q3(3), p3(3), q2(2), p2(2);
  q3 << 0.5, -1.0, 0.8;
  p3 << 0.7, 0.2, -1.1;
  q2 << 0.9, 0.3;
  p2 << -0.6, 1.0;
  struct Case {
    const LogDensity* density;
    Metric metric;
    Vec q, p;
  };
  Vec inv(2);
  inv << 0.8, 1.3;
  for (const Case& c : {Case{gaussian.get(), dense_test_metric(), q3, p3}, Case{&banana, make_diagonal_metric(inv), q2, p2},
                        Case{&banana, make_unit_metric(2), q2, p2}}) {
    const double e1 = energy_error(*c.density, c.metric, c.q, c.p, 0.02);
    const double e2 = energy_error(*c.density, c.metric, c.q, c.p, 0.01);
    const double e3 = energy_error(*c.density, c.metric, c.q, c.p, 0.005);
    // Halving eps quarters the error (global error of a second-order method at fixed time).
    EXPECT_NEAR(e1 / e2, 4.0, 0.25) << e1 << " " << e2;
    EXPECT_NEAR(e2 / e3, 4.0, 0.25) << e2 << " " << e3;
    EXPECT_GT(e3, 0.0);
  }
}

TEST(HmcLeapfrog, ExactlyReversible) {
  const auto gaussian = testing::correlated_gaussian();
  const Banana banana;
  Vec q(3), p(3);
  q << 0.5, -1.0, 0.8;
  p << 0.7, 0.2, -1.1;
  for (const LogDensity* density : {static_cast<const LogDensity*>(gaussian.get()), static_cast<const LogDensity*>(&banana)}) {
    const Index d = density->dim();
    const Metric metric = d == 3 ? dense_test_metric() : make_diagonal_metric(Vec::Constant(2, 0.7));
    PhasePoint z{q.head(d), p.head(d), Vec(), 0.0};
    ASSERT_TRUE(evaluate(*density, z));
    const PhasePoint start = z;
    Vec scratch;
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(leapfrog(*density, metric, 0.05, z, scratch));
    EXPECT_GT((z.position - start.position).norm(), 0.1);  // it moved
    z.momentum = -z.momentum;
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(leapfrog(*density, metric, 0.05, z, scratch));
    EXPECT_LT((z.position - start.position).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT((z.momentum + start.momentum).cwiseAbs().maxCoeff(), 1e-12);
    // Integrating with -eps is the same as flipping the momentum.
    PhasePoint back = start;
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(leapfrog(*density, metric, 0.05, back, scratch));
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(leapfrog(*density, metric, -0.05, back, scratch));
    EXPECT_LT((back.position - start.position).cwiseAbs().maxCoeff(), 1e-12);
  }
}

TEST(HmcLeapfrog, NonFiniteDensityIsRejectionNotException) {
  const HoleDensity density(2);
  Vec x0(2);
  x0 << 0.9, 0.0;
  Rng rng(5);
  // HMC: long steps into the hole are divergent rejections; the state stays finite.
  Hmc hmc(density);
  GradientState s = hmc.init(x0);
  HmcParams hp;
  hp.step_size = 0.5;
  int divergent = 0;
  for (int i = 0; i < 200; ++i) {
    HmcStep step = hmc.step(rng, s, hp);
    divergent += step.info.is_divergent;
    if (step.info.is_divergent) {
      EXPECT_FALSE(step.info.is_accepted);
    }
    s = step.state;
    ASSERT_TRUE(s.position.allFinite() && std::isfinite(s.log_density));
    ASSERT_LE(s.position[0], 1.0);
  }
  EXPECT_GT(divergent, 0);
  // NUTS: divergence flagged, draw finite and inside the support.
  Nuts nuts(density);
  s = nuts.init(x0);
  NutsParams np;
  np.step_size = 0.5;
  divergent = 0;
  for (int i = 0; i < 200; ++i) {
    NutsStep step = nuts.step(rng, s, np);
    divergent += step.info.is_divergent;
    s = step.state;
    ASSERT_TRUE(s.position.allFinite() && std::isfinite(s.log_density) && std::isfinite(step.info.energy));
    ASSERT_LE(s.position[0], 1.0);
  }
  EXPECT_GT(divergent, 0);
  // MALA.
  Mala mala(density);
  s = mala.init(x0);
  divergent = 0;
  for (int i = 0; i < 200; ++i) {
    MalaStep step = mala.step(rng, s, MalaParams{0.8});
    divergent += step.info.is_divergent;
    s = step.state;
    ASSERT_TRUE(s.position.allFinite() && std::isfinite(s.log_density));
  }
  EXPECT_GT(divergent, 0);
  // A start in the hole is a clear error.
  Vec bad(2);
  bad << 2.0, 0.0;
  EXPECT_THROW(hmc.init(bad), InputError);
}

TEST(HmcKernel, ParamsValidateNamesTheParameter) {
  HmcParams p;
  p.step_size = -1.0;
  try {
    p.validate(3);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("step_size"), std::string::npos) << e.what();
  }
  p = HmcParams{};
  p.num_leapfrog_steps = 0;
  EXPECT_THROW(p.validate(3), std::invalid_argument);
  p = HmcParams{};
  p.step_size_jitter = 1.0;
  EXPECT_THROW(p.validate(3), std::invalid_argument);
  p = HmcParams{};
  p.metric = make_unit_metric(2);
  EXPECT_THROW(p.validate(3), std::invalid_argument);
  NutsParams n;
  n.max_depth = 0;
  EXPECT_THROW(n.validate(3), std::invalid_argument);
  EXPECT_THROW(MalaParams{0.0}.validate(3), std::invalid_argument);
  MalaParams m;
  m.metric = make_unit_metric(2);
  EXPECT_THROW(m.validate(3), std::invalid_argument);
  m.metric = make_dense_metric(Mat::Identity(2, 2));
  EXPECT_THROW(m.validate(3), std::invalid_argument);
  m.metric = make_dense_metric(Mat::Identity(3, 3));
  EXPECT_NO_THROW(m.validate(3));  // a dense metric of the right size (MALA's --metric dense)
}

}  // namespace
}  // namespace uqnn
