#pragma once
// Conjugate Bayesian linear regression: y = w1 x1 + w2 x2 + b + N(0, sigma^2), prior N(0, sd^2) per
// coordinate; the exact posterior is N(m, A^-1), A = Phi^T Phi / sigma^2 + diag(1/sd^2).
#include <cmath>
#include <memory>

#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn::testing {

struct Blr {
  std::shared_ptr<Posterior> posterior;
  Mat A;     // exact posterior precision
  Vec mean;  // exact posterior mean
  double log_evidence = 0.0;
  double sigma = 0.3;
  Vec prior_sd;
  Mat Phi;
  Vec y;
};

/// Exact log evidence log N(y | Phi m0, sigma^2 I + Phi S0 Phi^T) for prior N(m0 = 0, diag(sd^2)).
inline double blr_log_evidence(const Mat& Phi, const Vec& y, double sigma, const Vec& prior_sd) {
  const Index n = y.size();
  Mat C = sigma * sigma * Mat::Identity(n, n) + Phi * prior_sd.array().square().matrix().asDiagonal() * Phi.transpose();
  Eigen::LLT<Mat> llt(C);
  const Mat L = llt.matrixL();
  return -0.5 * y.dot(llt.solve(y)) - L.diagonal().array().log().sum() - 0.5 * static_cast<double>(n) * std::log(2 * M_PI);
}

inline Blr make_blr(Index n = 30, double sigma = 0.3, std::uint64_t seed = 7) {
  Blr b;
  b.sigma = sigma;
  Rng rng(seed, 0);
  Mat X(2, n);
  for (Index i = 0; i < n; ++i) {
    X(0, i) = rng.uniform(-1, 1);
    X(1, i) = rng.uniform(-1, 1);
  }
  Mat Y(1, n);
  for (Index i = 0; i < n; ++i) Y(0, i) = 0.7 * X(0, i) - 1.3 * X(1, i) + 0.4 + sigma * rng.normal();
  b.prior_sd = Vec(3);
  b.prior_sd << 1.5, 0.8, 2.0;  // not isotropic: catches a prior term applied to the wrong coordinate
  auto model = std::make_shared<Mlp>(Mlp::linear(2, 1));
  auto prior = std::make_shared<GaussianPrior>(Vec::Zero(3), b.prior_sd);
  b.posterior = std::make_shared<Posterior>(model, make_gaussian_likelihood(sigma), prior, X, Y);
  // theta = [W(0,0), W(0,1), b] (nn.Linear order).
  b.Phi.resize(n, 3);
  b.Phi.col(0) = X.row(0).transpose();
  b.Phi.col(1) = X.row(1).transpose();
  b.Phi.col(2).setOnes();
  b.y = Y.row(0).transpose();
  b.A = b.Phi.transpose() * b.Phi / (sigma * sigma);
  b.A.diagonal() += b.prior_sd.array().square().inverse().matrix();
  b.mean = b.A.llt().solve(b.Phi.transpose() * b.y / (sigma * sigma));
  b.log_evidence = blr_log_evidence(b.Phi, b.y, sigma, b.prior_sd);
  return b;
}

inline double max_relative(const Mat& a, const Mat& b) { return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff(); }

}  // namespace uqnn::testing
