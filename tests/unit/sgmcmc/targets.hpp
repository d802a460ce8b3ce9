#pragma once
// Test targets for SG-MCMC: an independent Gaussian (full batch) and a conjugate Bayesian linear
// regression Posterior (minibatches) with its exact posterior, plus the stationary covariance of
// a linear discrete-time chain, used to derive the O(eps) bias allowed by the tolerances.
#include <Eigen/Eigenvalues>
#include <memory>

#include "uqnn/core/rng.hpp"
#include "uqnn/mcmc/chain_sampler.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn::testing {

/// log p = -sum_k (theta_k - mean_k)^2 / (2 sd_k^2).
class IndependentGaussian : public LogDensity {
 public:
  IndependentGaussian(Vec mean, Vec sd) : mean_(std::move(mean)), sd_(std::move(sd)) {}
  Index dim() const override { return mean_.size(); }
  double log_density_and_grad(const Vec& theta, Vec& grad) const override {
    const Vec z = (theta - mean_).cwiseQuotient(sd_);
    grad = -z.cwiseQuotient(sd_);
    return -0.5 * z.squaredNorm();
  }
  Vec precision() const { return sd_.array().square().inverse().matrix(); }
  Vec hessian_vector_product(const Vec&, const Vec& v) const override { return -precision().cwiseProduct(v); }
  const Vec& mean() const { return mean_; }
  const Vec& sd() const { return sd_; }

 private:
  Vec mean_, sd_;
};

/// y = w . x + b + N(0, noise_sd^2), x ~ N(0, I_2), N points; prior N(0, prior_sd^2 I) on (w, b).
/// (Not named LinearRegression: tests/unit/mcmc has a different struct of that name in the same
/// namespace and binary, an ODR violation that UBSan caught as garbage matrix sizes.)
struct SgLinearRegression {
  std::shared_ptr<Posterior> posterior;
  Vec exact_mean;  ///< theta order: layer0.weight (1 x 2) then layer0.bias
  Mat exact_cov;
  Mat precision;   ///< A = Phi^T Phi / s^2 + I / prior_sd^2 (grad log p = -A (theta - mean))
};

inline SgLinearRegression make_linear_regression(Index N = 200, double noise_sd = 0.5, double prior_sd = 1.0,
                                               std::uint64_t seed = 7) {
  Rng rng(seed);
  Mat X(2, N), Y(1, N);
  for (Index i = 0; i < N; ++i) {
    X(0, i) = rng.normal();
    X(1, i) = rng.normal();
    Y(0, i) = 0.5 * X(0, i) - 1.0 * X(1, i) + 0.3 + noise_sd * rng.normal();
  }
  auto model = std::make_shared<Mlp>(Mlp::linear(2, 1));
  SgLinearRegression lr;
  lr.posterior = std::make_shared<Posterior>(model, make_gaussian_likelihood(noise_sd),
                                             GaussianPrior::isotropic(model->num_params(), prior_sd), X, Y);
  Mat Phi(N, 3);
  Phi.leftCols(2) = X.transpose();
  Phi.col(2).setOnes();
  lr.precision = Phi.transpose() * Phi / (noise_sd * noise_sd) + Mat::Identity(3, 3) / (prior_sd * prior_sd);
  lr.exact_cov = lr.precision.inverse();
  lr.exact_mean = lr.exact_cov * Phi.transpose() * Y.row(0).transpose() / (noise_sd * noise_sd);
  return lr;
}

/// Covariance of the minibatch gradient estimate (batch of n without replacement) at theta:
/// (1/n) (N - n) / (N - 1) Cov_pop(G_i), G_i the estimate from the single point i.
inline Mat minibatch_gradient_cov(const Posterior& p, const Vec& theta, Index n) {
  const Index N = p.num_data(), d = p.dim();
  Mat G(d, N);
  Vec g(d);
  for (Index i = 0; i < N; ++i) {
    p.minibatch_log_density_and_grad(theta, IndexVec{i}, g);
    G.col(i) = g;
  }
  const Vec m = G.rowwise().mean();
  const Mat C = G.colwise() - m;
  const Mat pop = C * C.transpose() / static_cast<double>(N);
  return pop * (static_cast<double>(N - n) / static_cast<double>(N - 1)) / static_cast<double>(n);
}

/// Stationary covariance of x' = T x + noise, Cov(noise) = Q: vec(S) = (I - T (x) T)^-1 vec(Q).
inline Mat stationary_cov(const Mat& T, const Mat& Q) {
  const Index k = T.rows();
  Mat K(k * k, k * k);
  for (Index i = 0; i < k; ++i)
    for (Index j = 0; j < k; ++j) K.block(i * k, j * k, k, k) = T(i, j) * T;
  const Mat I = Mat::Identity(k * k, k * k);
  const Vec q = Eigen::Map<const Vec>(Q.data(), k * k);
  const Vec s = (I - K).partialPivLu().solve(q);
  return Eigen::Map<const Mat>(s.data(), k, k);
}

/// Stationary covariance of SGLD (seed-002 convention) on a Gaussian with precision A, with
/// minibatch-gradient covariance V: x' = (I - h A) x + sqrt(2h) xi + h * gradient noise.
inline Mat sgld_stationary_cov(const Mat& A, double h, const Mat& V) {
  const Index d = A.rows();
  return stationary_cov(Mat::Identity(d, d) - h * A, 2.0 * h * Mat::Identity(d, d) + h * h * V);
}

/// Stationary covariance of the position under SGHMC (Chen et al. 2014's discretisation, M = I, B_hat = 0).
inline Mat sghmc_stationary_cov(const Mat& A, double h, double C, const Mat& V) {
  const Index d = A.rows();
  Mat T = Mat::Zero(2 * d, 2 * d);
  T.topLeftCorner(d, d).setIdentity();
  T.topRightCorner(d, d) = h * Mat::Identity(d, d);
  // Chen et al.'s order: w' = w + h z, z' = z - h A w' - h C z = -h A w + ((1 - h C) I - h^2 A) z.
  T.bottomLeftCorner(d, d) = -h * A;
  T.bottomRightCorner(d, d) = (1.0 - h * C) * Mat::Identity(d, d) - h * h * A;
  Mat Q = Mat::Zero(2 * d, 2 * d);
  Q.bottomRightCorner(d, d) = 2.0 * C * h * Mat::Identity(d, d) + h * h * V;
  return stationary_cov(T, Q).topLeftCorner(d, d);
}

/// Runs `chains` chains (streams 0..chains-1 of `seed`) and returns draws[k] as [draws, chains].
inline std::vector<Mat> run_chains(const std::function<std::unique_ptr<ChainSampler>()>& make, const Vec& start,
                                   Index chains, Index warmup, Index draws, std::uint64_t seed) {
  std::vector<Mat> out(static_cast<std::size_t>(start.size()), Mat(draws, chains));
  for (Index c = 0; c < chains; ++c) {
    auto sampler = make();
    Rng rng(seed, static_cast<std::uint64_t>(c));
    sampler->init(start);
    for (Index t = 0; t < warmup; ++t) sampler->transition(rng, true);
    for (Index t = 0; t < draws; ++t) {
      sampler->transition(rng, false);
      for (Index k = 0; k < start.size(); ++k) out[static_cast<std::size_t>(k)](t, c) = sampler->position()[k];
    }
  }
  return out;
}

}  // namespace uqnn::testing
