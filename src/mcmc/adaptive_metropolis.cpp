#include "uqnn/mcmc/adaptive_metropolis.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <fmt/format.h>

#include "uqnn/core/error.hpp"

namespace uqnn {

void AdaptiveMetropolisParams::validate(Index dim) const {
  require(std::isfinite(gamma) && gamma > 0.0, "gamma", "finite and > 0");
  require(t0 >= 1, "t0", ">= 1");
  require(t_adapt >= 1, "t_adapt", ">= 1");
  require(std::isfinite(regularization) && regularization >= 0.0, "regularization", "finite and >= 0");
  if (initial_covariance.size() > 0 && diagonal) {
    require(initial_covariance.rows() == dim && initial_covariance.cols() == 1, "initial_covariance",
            fmt::format("[{}, 1] variances (a diagonal proposal) or empty", dim));
    require(initial_covariance.allFinite() && (initial_covariance.array() > 0).all(), "initial_covariance",
            "finite variances > 0");
  } else if (initial_covariance.size() > 0) {
    require(initial_covariance.rows() == dim && initial_covariance.cols() == dim, "initial_covariance",
            fmt::format("[{0}, {0}] (the log density's dimension) or empty", dim));
    require(initial_covariance.allFinite(), "initial_covariance", "finite");
    require((initial_covariance - initial_covariance.transpose()).cwiseAbs().maxCoeff() <=
                1e-10 * (1.0 + initial_covariance.cwiseAbs().maxCoeff()),
            "initial_covariance", "symmetric");
    Eigen::LLT<Mat> llt(initial_covariance);
    require(llt.info() == Eigen::Success, "initial_covariance", "positive definite");
  }
}

Mat robust_cholesky(const Mat& covariance, bool* used_fallback) {
  if (used_fallback) *used_fallback = false;
  if (covariance.cols() == 1 && covariance.rows() > 1) {  // variances (a diagonal proposal)
    const bool proper = covariance.allFinite() && (covariance.array() > 0).all();
    if (used_fallback) *used_fallback = !proper;
    return covariance.cwiseMax(std::numeric_limits<double>::min()).cwiseSqrt();
  }
  Eigen::LLT<Mat> llt(covariance);
  if (llt.info() == Eigen::Success && llt.matrixL().toDenseMatrix().allFinite()) return llt.matrixL();
  if (used_fallback) *used_fallback = true;
  const Index n = covariance.rows();
  const double scale = std::max(covariance.diagonal().cwiseAbs().mean(), 1e-300);
  for (double tau = 1e-10; tau <= 1e-2; tau *= 100.0) {
    Mat jittered = covariance;
    jittered.diagonal().array() += tau * scale;
    llt.compute(jittered);
    if (llt.info() == Eigen::Success && llt.matrixL().toDenseMatrix().allFinite()) return llt.matrixL();
  }
  Vec d = covariance.diagonal().cwiseMax(std::numeric_limits<double>::min());
  Mat lower = Mat::Zero(n, n);
  lower.diagonal() = d.cwiseSqrt();
  return lower;
}

Mat inverse_curvature(const LogDensity& density, const Vec& at, Index max_dense) {
  const Index dim = density.dim();
  require(at.size() == dim, "inverse_curvature: point", fmt::format("of dimension {}", dim));
  const bool dense = dim <= max_dense;
  Mat hessian = dense ? Mat(dim, dim) : Mat(dim, 1);  // of -log p; column 0 holds the diagonal when not dense
  Vec x = at, plus(dim), minus(dim);
  for (Index j = 0; j < dim; ++j) {
    const double h = 1e-4 * std::max(1.0, std::abs(at[j]));
    x[j] = at[j] + h;
    density.log_density_and_grad(x, plus);
    x[j] = at[j] - h;
    density.log_density_and_grad(x, minus);
    x[j] = at[j];
    const Vec column = -(plus - minus) / (2.0 * h);
    if (dense) hessian.col(j) = column;
    else hessian(j, 0) = column[j];
  }
  if (!hessian.allFinite()) throw InputError("the log density's gradient is not finite next to the chain's start");
  if (!dense) {
    const double top = hessian.col(0).cwiseAbs().maxCoeff();
    const double floor = std::max(1e-8 * top, std::numeric_limits<double>::min());
    return hessian.col(0).cwiseMax(floor).cwiseInverse();
  }
  const Mat symmetric = 0.5 * (hessian + hessian.transpose());
  Eigen::SelfAdjointEigenSolver<Mat> eigen(symmetric);
  const Vec values = eigen.eigenvalues();
  const double top = values.cwiseAbs().maxCoeff();
  const double floor = std::max(1e-8 * top, std::numeric_limits<double>::min());
  const Vec inverse = values.cwiseMax(floor).cwiseInverse();
  const Mat& vectors = eigen.eigenvectors();
  return vectors * inverse.asDiagonal() * vectors.transpose();
}

Mat history_covariance(const AdaptiveMetropolisState& state) {
  if (state.history_count < 2) return Mat::Zero(state.history_m2.rows(), state.history_m2.cols());
  return state.history_m2 / static_cast<double>(state.history_count - 1);
}

namespace {

/// Sigma = gamma 2.4^2 / K (C + reg I) (seed 001); C [K, 1] is a diagonal.
Mat scaled_proposal(const Mat& c, double gamma, double regularization) {
  const double k = static_cast<double>(c.rows());
  Mat sigma = c;
  if (c.cols() == 1) sigma.array() += regularization;
  else sigma.diagonal().array() += regularization;
  return (gamma * 2.4 * 2.4 / k) * sigma;
}

void add_to_history(AdaptiveMetropolisState& s, const Vec& w) {
  // Welford's recursive mean and sum of squared deviations.
  ++s.history_count;
  const Vec delta = w - s.history_mean;
  s.history_mean += delta / static_cast<double>(s.history_count);
  if (s.history_m2.cols() == 1 && s.history_m2.rows() > 1) s.history_m2.col(0) += delta.cwiseProduct(w - s.history_mean);
  else s.history_m2.noalias() += delta * (w - s.history_mean).transpose();
}

}  // namespace

AdaptiveMetropolisState AdaptiveMetropolis::init(const Vec& position, const AdaptiveMetropolisParams& params) const {
  const Index dim = density_->dim();
  params.validate(dim);
  if (position.size() != dim)
    throw InputError(fmt::format("initial point has {} coordinates; the log density has dim {}", position.size(), dim));
  AdaptiveMetropolisState s;
  s.position = position;
  s.log_density = density_->log_density(position);
  if (!std::isfinite(s.log_density))
    throw InputError(fmt::format("log density at the initial point is not finite ({}); choose another initial point",
                                 s.log_density));
  s.history_mean = Vec::Zero(dim);
  s.history_m2 = params.diagonal ? Mat::Zero(dim, 1) : Mat::Zero(dim, dim);
  add_to_history(s, position);
  const Mat unit = params.diagonal ? Mat(Mat::Ones(dim, 1)) : Mat(Mat::Identity(dim, dim));
  const Mat sigma0 = params.initial_covariance.size() > 0 ? params.initial_covariance
                                                          : Mat(scaled_proposal(unit, params.gamma, 0.0));
  s.proposal_cholesky = robust_cholesky(sigma0);
  return s;
}

AdaptiveMetropolisStep AdaptiveMetropolis::step(Rng& rng, const AdaptiveMetropolisState& state,
                                                const AdaptiveMetropolisParams& params) const {
  const Index dim = state.position.size();
  AdaptiveMetropolisStep out{state, {}};
  AdaptiveMetropolisState& s = out.state;
  Vec xi(dim);
  for (Index i = 0; i < dim; ++i) xi[i] = rng.normal();
  const Vec proposal = params.diagonal ? Vec(state.position + state.proposal_cholesky.col(0).cwiseProduct(xi))
                                       : Vec(state.position + state.proposal_cholesky.triangularView<Eigen::Lower>() * xi);
  const double lp = density_->log_density(proposal);
  const double u = rng.uniform();
  if (!std::isfinite(lp)) {
    out.info.is_divergent = true;
  } else {
    out.info.accept_prob = std::min(1.0, std::exp(lp - state.log_density));
    if (u < out.info.accept_prob) {
      out.info.is_accepted = true;
      s.position = proposal;
      s.log_density = lp;
    }
  }
  ++s.iteration;
  add_to_history(s, s.position);
  // Adaptation at t = t0 and every t_adapt steps after (seed 001).
  if (params.adapt && s.iteration >= params.t0 && (s.iteration - params.t0) % params.t_adapt == 0) {
    bool fallback = false;
    s.proposal_cholesky = robust_cholesky(scaled_proposal(history_covariance(s), params.gamma, params.regularization),
                                          &fallback);
    out.info.covariance_updated = true;
    out.info.cholesky_fallback = fallback;
  }
  return out;
}

}  // namespace uqnn
