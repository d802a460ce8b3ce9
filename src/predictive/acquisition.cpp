#include "uqnn/predictive/acquisition.hpp"

#include <cmath>
#include <stdexcept>

namespace uqnn {

namespace {

struct PointMoments {
  Vec mean_variance;  ///< Var_s[mu_s]
  Vec mean_noise;     ///< E_s[sigma_s^2]
  Vec mean_log_noise; ///< E_s[log sigma_s^2]
};

PointMoments point_moments(const PredictiveDraws& draws) {
  if (draws.num_draws() < 1) throw std::invalid_argument("acquisition: no draws");
  const Index n = draws.means.front().cols();
  const double S = static_cast<double>(draws.num_draws());
  Vec sum = Vec::Zero(n), square = Vec::Zero(n);
  PointMoments m{Vec::Zero(n), Vec::Zero(n), Vec::Zero(n)};
  for (Index s = 0; s < draws.num_draws(); ++s) {
    const auto i = static_cast<std::size_t>(s);
    const auto mu = draws.means[i].row(0).transpose();
    const auto var = draws.noise_variance[i].row(0).transpose();
    sum += mu;
    square += mu.cwiseProduct(mu);
    m.mean_noise += var;
    m.mean_log_noise += var.array().log().matrix();
  }
  const Vec mean = sum / S;
  m.mean_variance = (square / S - mean.cwiseProduct(mean)).cwiseMax(0.0);
  m.mean_noise /= S;
  m.mean_log_noise /= S;
  return m;
}

}  // namespace

Vec epistemic_variance(const PredictiveDraws& draws) {
  const double S = static_cast<double>(draws.num_draws());
  // The unbiased estimate, as summarize_predictive's epistemic_sd (one draw: no spread).
  return S > 1 ? Vec(point_moments(draws).mean_variance * (S / (S - 1))) : Vec::Zero(draws.means.front().cols());
}

Vec bald_score(const PredictiveDraws& draws) {
  const PointMoments m = point_moments(draws);
  return (0.5 * (m.mean_variance + m.mean_noise).array().log() - 0.5 * m.mean_log_noise.array()).matrix();
}

}  // namespace uqnn
