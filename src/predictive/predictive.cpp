#include "uqnn/predictive/predictive.hpp"
#include "uqnn/predictive/scores.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/lppd.hpp"
#include "uqnn/io/csv.hpp"

namespace uqnn {

PredictiveDraws predict_draws(const Model& model, const Likelihood& likelihood, const Draws& draws, const Mat& inputs) {
  require(!draws.empty(), "number of draws", ">= 1");
  PredictiveDraws out;
  const Index P = model.num_params();
  draws.for_each([&](Index, const Vec& theta) {
    const Mat Y = model.forward(theta.head(P), inputs);
    out.means.push_back(likelihood.mean(Y));
    out.noise_variance.push_back(likelihood.noise_variance(Y, theta.tail(theta.size() - P)));
  });
  return out;
}

/// The p-quantile of the Gaussian mixture (1/S) sum_k N(mu_k, sd_k^2): the root of
/// F(y) = (1/S) sum_k Phi((y - mu_k) / sd_k) - p, by Newton's method from `start` inside a bracket
/// that it keeps, falling back to bisection when a step leaves it (components with sd 0 make F a
/// step function there). F is monotone, so the root is unique up to the flat parts of F.
double mixture_quantile(const double* mu, const double* sd, Index S, double p, double start) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (Index k = 0; k < S; ++k) {
    lo = std::min(lo, mu[k] - 12.0 * sd[k]);  // Phi(-12) ~ 2e-33: F(lo) < p and F(hi) > p
    hi = std::max(hi, mu[k] + 12.0 * sd[k]);
  }
  if (!(hi > lo)) return lo;  // every component a point mass at the same value
  const double inv_sqrt2 = 1.0 / std::numbers::sqrt2, inv_sqrt2pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;
  double y = std::clamp(start, lo, hi);
  for (int iteration = 0; iteration < 200; ++iteration) {
    double cdf = 0.0, density = 0.0;
    for (Index k = 0; k < S; ++k) {
      if (sd[k] > 0) {
        const double z = (y - mu[k]) / sd[k];
        cdf += 0.5 * std::erfc(-z * inv_sqrt2);
        density += inv_sqrt2pi * std::exp(-0.5 * z * z) / sd[k];
      } else {
        cdf += y >= mu[k] ? 1.0 : 0.0;
      }
    }
    const double excess = cdf / static_cast<double>(S) - p;
    (excess < 0 ? lo : hi) = y;
    if (std::abs(excess) < 1e-13 || hi - lo <= 1e-13 * std::max(1.0, std::abs(y))) break;
    const double newton = density > 0 ? y - excess * static_cast<double>(S) / density : lo - 1.0;
    y = newton > lo && newton < hi ? newton : 0.5 * (lo + hi);
  }
  return y;
}

PredictiveSummary summarize_predictive(const PredictiveDraws& draws, const std::vector<double>& levels, Rng& rng) {
  const Index S = draws.num_draws();
  require(S >= 1, "number of draws", ">= 1");
  const Index t = draws.means[0].rows(), n = draws.means[0].cols();
  PredictiveSummary s;
  s.mean = Mat::Zero(t, n);
  Mat noise = Mat::Zero(t, n);
  for (Index k = 0; k < S; ++k) {
    s.mean += draws.means[static_cast<std::size_t>(k)];
    noise += draws.noise_variance[static_cast<std::size_t>(k)];
  }
  s.mean /= static_cast<double>(S);
  noise /= static_cast<double>(S);
  Mat epistemic = Mat::Zero(t, n);
  if (S > 1) {
    for (Index k = 0; k < S; ++k) epistemic += (draws.means[static_cast<std::size_t>(k)] - s.mean).array().square().matrix();
    epistemic /= static_cast<double>(S - 1);
  }
  s.epistemic_sd = epistemic.cwiseSqrt();
  s.sd = (epistemic + noise).cwiseSqrt();
  if (levels.empty()) return s;
  std::vector<double> probabilities;  // each level's lower and upper tail probability
  for (double level : levels) {
    require(level > 0 && level < 1, "interval level", "in (0, 1)");
    s.intervals[level] = {Mat(t, n), Mat(t, n)};
    probabilities.push_back(0.5 - level / 2);
    probabilities.push_back(0.5 + level / 2);
  }
  std::vector<double> quantiles(probabilities.size());
  // A draw with a non-finite mean or noise variance makes the moments non-finite; its intervals
  // are NaN too (a bracket or an ordering of such values would give a finite, meaningless bound).
  const auto non_finite = [&](Index o, Index i) {
    if (std::isfinite(s.mean(o, i)) && std::isfinite(s.sd(o, i))) return false;
    std::fill(quantiles.begin(), quantiles.end(), std::numeric_limits<double>::quiet_NaN());
    return true;
  };
  const auto store = [&](Index o, Index i) {
    std::size_t j = 0;
    for (double level : levels) {
      s.intervals[level].first(o, i) = quantiles[j++];
      s.intervals[level].second(o, i) = quantiles[j++];
    }
  };
  if (S <= kExactQuantileMaxDraws) {
    // Few draws: the predictive is a mixture of S Gaussians, and its quantiles are computed exactly,
    // starting from those of the moment-matched Gaussian (mean, sd above).
    std::vector<double> mu(static_cast<std::size_t>(S)), sd(static_cast<std::size_t>(S));
    for (Index o = 0; o < t; ++o)
      for (Index i = 0; i < n; ++i) {
        if (non_finite(o, i)) {
          store(o, i);
          continue;
        }
        for (Index k = 0; k < S; ++k) {
          mu[static_cast<std::size_t>(k)] = draws.means[static_cast<std::size_t>(k)](o, i);
          sd[static_cast<std::size_t>(k)] = std::sqrt(draws.noise_variance[static_cast<std::size_t>(k)](o, i));
        }
        for (std::size_t j = 0; j < probabilities.size(); ++j) {
          // Start: the logistic approximation of the normal quantile, Phi(z) ~ 1 / (1 + exp(-1.702 z)).
          const double z = std::log(probabilities[j] / (1 - probabilities[j])) / 1.702;
          quantiles[j] = mixture_quantile(mu.data(), sd.data(), S, probabilities[j], s.mean(o, i) + s.sd(o, i) * z);
        }
        store(o, i);
      }
    return s;
  }
  // Many draws: samples of the predictive mixture (draw s, then y = mu_s + sqrt(noise_s) z), at
  // least 2000 in all, and their type-7 quantiles. Only the order statistics the quantiles need are
  // selected (nth_element on shrinking ranges), not the whole sample sorted.
  const Index per_draw = std::max<Index>(1, (2000 + S - 1) / S);
  const Index total = per_draw * S;
  std::vector<double> samples(static_cast<std::size_t>(total));
  std::vector<std::pair<std::size_t, std::size_t>> ranks;  // (order statistic lo, slot) sorted by lo
  for (std::size_t j = 0; j < probabilities.size(); ++j)
    ranks.emplace_back(static_cast<std::size_t>(std::floor((static_cast<double>(total) - 1) * probabilities[j])), j);
  std::sort(ranks.begin(), ranks.end());
  for (Index o = 0; o < t; ++o)
    for (Index i = 0; i < n; ++i) {
      if (non_finite(o, i)) {
        store(o, i);
        continue;
      }
      std::size_t m = 0;
      for (Index k = 0; k < S; ++k) {
        const double mu = draws.means[static_cast<std::size_t>(k)](o, i);
        const double sd = std::sqrt(draws.noise_variance[static_cast<std::size_t>(k)](o, i));
        for (Index r = 0; r < per_draw; ++r) samples[m++] = mu + sd * rng.normal();
      }
      auto first = samples.begin();
      for (const auto& [lo, j] : ranks) {
        const auto nth = samples.begin() + static_cast<std::ptrdiff_t>(lo);
        if (nth >= first) {
          std::nth_element(first, nth, samples.end());
          first = nth + 1;
        }
        const std::size_t hi = std::min(lo + 1, samples.size() - 1);
        // The next order statistic is the smallest value after the lo-th (all of them are >= it).
        const double next = hi == lo ? samples[lo] : *std::min_element(samples.begin() + static_cast<std::ptrdiff_t>(hi), samples.end());
        const double h = (static_cast<double>(total) - 1) * probabilities[j];
        quantiles[j] = samples[lo] + (h - std::floor(h)) * (next - samples[lo]);
      }
      store(o, i);
    }
  return s;
}

void rescale_summary(PredictiveSummary& s, const Vec& mean, const Vec& scale) {
  const auto affine = [&](Mat& m) { m = ((m.array().colwise() * scale.array()).colwise() + mean.array()).matrix(); };
  affine(s.mean);
  s.sd = (s.sd.array().colwise() * scale.array().abs()).matrix();
  s.epistemic_sd = (s.epistemic_sd.array().colwise() * scale.array().abs()).matrix();
  for (auto& [level, bounds] : s.intervals) {
    affine(bounds.first);
    affine(bounds.second);
  }
}

RegressionMetrics regression_metrics(const PredictiveDraws& draws, const PredictiveSummary& s, const Mat& targets_std,
                                     const Mat& targets, double log_scale) {
  RegressionMetrics m;
  m.n = targets.cols();
  if (m.n == 0) return m;
  const Index t = targets.rows();
  m.rmse = std::sqrt((s.mean - targets).squaredNorm() / static_cast<double>(targets.size()));
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
  double nll = 0;
  for (Index i = 0; i < targets.size(); ++i) {
    const double sd = s.sd.data()[i], r = targets.data()[i] - s.mean.data()[i];
    nll += 0.5 * r * r / (sd * sd) + std::log(sd) + half_log_2pi;
  }
  m.nll = nll / static_cast<double>(m.n);
  // Pointwise log-likelihood of each draw (Gaussian with the draw's noise), in standardised units.
  const Index S = draws.num_draws();
  Mat log_lik(S, m.n);
  for (Index k = 0; k < S; ++k)
    for (Index i = 0; i < m.n; ++i) {
      double ll = 0;
      for (Index o = 0; o < t; ++o) {
        const double var = draws.noise_variance[static_cast<std::size_t>(k)](o, i);
        const double r = targets_std(o, i) - draws.means[static_cast<std::size_t>(k)](o, i);
        ll += -0.5 * r * r / var - 0.5 * std::log(var) - half_log_2pi;
      }
      log_lik(k, i) = ll;
    }
  m.lppd = diagnostics::lppd(log_lik) - log_scale;  // already a mean over points
  for (const auto& [level, bounds] : s.intervals) {
    Index inside = 0;
    for (Index i = 0; i < targets.size(); ++i)
      inside += (targets.data()[i] >= bounds.first.data()[i] && targets.data()[i] <= bounds.second.data()[i]) ? 1 : 0;
    m.coverage[level] = static_cast<double>(inside) / static_cast<double>(targets.size());
  }
  return m;
}

ClassificationMetrics classification_metrics(const Mat& probabilities, const Mat& targets, bool categorical, int num_bins) {
  require(num_bins >= 1, "number of calibration bins", ">= 1");
  require(probabilities.cols() == targets.cols(), "classification targets", "one column per predicted row");
  if (categorical) require(targets.rows() == 1, "categorical targets", "one row of class indices");
  else require(targets.rows() == probabilities.rows(), "bernoulli targets", "one row per output");
  // log 0 would make one confidently wrong point an infinite NLL: floor at the smallest normal
  // double, as a 1e-308 probability is already a certain miss.
  const auto safe_log = [](double p) { return std::log(std::max(p, std::numeric_limits<double>::min())); };
  ClassificationMetrics m;
  m.bins.resize(static_cast<std::size_t>(num_bins));
  for (int b = 0; b < num_bins; ++b) {
    m.bins[static_cast<std::size_t>(b)].lower = static_cast<double>(b) / num_bins;
    m.bins[static_cast<std::size_t>(b)].upper = static_cast<double>(b + 1) / num_bins;
  }
  std::vector<double> entropy;
  double correct = 0.0, nll = 0.0, brier = 0.0;
  // One point: its top-class confidence, whether it is right, its NLL, Brier and entropy terms.
  const auto add = [&](double confidence, bool right, double p_label, double brier_term, double point_entropy) {
    const int b = std::min(num_bins - 1, static_cast<int>(confidence * num_bins));
    auto& bin = m.bins[static_cast<std::size_t>(std::max(0, b))];
    bin.confidence += confidence;
    bin.accuracy += right ? 1.0 : 0.0;
    ++bin.count;
    correct += right ? 1.0 : 0.0;
    nll -= safe_log(p_label);
    brier += brier_term;
    entropy.push_back(point_entropy);
  };
  const auto xlogx = [](double p) { return p > 0 ? p * std::log(p) : 0.0; };
  for (Index i = 0; i < probabilities.cols(); ++i) {
    if (categorical) {
      const double y = targets(0, i);
      if (!(y >= 0 && y < static_cast<double>(probabilities.rows()) && y == std::floor(y)))
        throw InputError("categorical target of row " + std::to_string(i + 1) + " is " + format_double(y) +
                         ": it must be an integer class in [0, " + std::to_string(probabilities.rows()) + ")");
      const auto label = static_cast<Index>(y);
      Index top = 0;
      const double confidence = probabilities.col(i).maxCoeff(&top);
      double brier_term = 0.0, h = 0.0;
      for (Index k = 0; k < probabilities.rows(); ++k) {
        const double p = probabilities(k, i), indicator = k == label ? 1.0 : 0.0;
        brier_term += (p - indicator) * (p - indicator);
        h -= xlogx(p);
      }
      add(confidence, top == label, probabilities(label, i), brier_term, h);
    } else {
      for (Index o = 0; o < probabilities.rows(); ++o) {
        const double p = probabilities(o, i), y = targets(o, i);
        if (y != 0.0 && y != 1.0)
          throw InputError("bernoulli target of row " + std::to_string(i + 1) + " is " + format_double(y) + ": it must be 0 or 1");
        const bool predicts_one = p >= 0.5;
        add(predicts_one ? p : 1.0 - p, predicts_one == (y == 1.0), y == 1.0 ? p : 1.0 - p, (p - y) * (p - y),
            -xlogx(p) - xlogx(1.0 - p));
      }
    }
  }
  m.n = static_cast<Index>(entropy.size());
  require(m.n > 0, "classification metrics", "at least one point");
  const double n = static_cast<double>(m.n);
  m.accuracy = correct / n;
  m.nll = nll / n;
  m.brier = brier / n;
  for (auto& bin : m.bins) {
    if (bin.count == 0) continue;
    bin.confidence /= static_cast<double>(bin.count);
    bin.accuracy /= static_cast<double>(bin.count);
    m.ece += static_cast<double>(bin.count) / n * std::abs(bin.accuracy - bin.confidence);
  }
  m.entropy = Eigen::Map<const Vec>(entropy.data(), static_cast<Index>(entropy.size()));
  return m;
}

}  // namespace uqnn
