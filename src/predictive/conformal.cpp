#include "uqnn/predictive/conformal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

constexpr double kUnboundedQuantile = std::numeric_limits<double>::infinity();

void require_alpha(double alpha) { require(alpha > 0 && alpha < 1, "alpha (miscoverage)", "in (0, 1)"); }

/// Probabilities as classes: a bernoulli row (K = 1) becomes the two classes (1 - p, p).
Mat as_classes(const Mat& p) {
  if (p.rows() != 1) return p;
  Mat two(2, p.cols());
  two.row(0) = 1.0 - p.row(0).array();
  two.row(1) = p.row(0);
  return two;
}

/// Class indices of column i in decreasing probability (ties by index, so sets are reproducible).
std::vector<Index> ranked(const Mat& p, Index i) {
  std::vector<Index> order(static_cast<std::size_t>(p.rows()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return p(a, i) > p(b, i); });
  return order;
}

}  // namespace

double conformal_quantile(std::vector<double> scores, double alpha) {
  require_alpha(alpha);
  require(!scores.empty(), "calibration scores", "at least one");
  for (double s : scores) require(!std::isnan(s), "calibration scores", "not NaN");
  const auto n = static_cast<double>(scores.size());
  // The rank ceil((n + 1)(1 - alpha)); a tiny slack keeps an exact integer product (e.g. 110 x 0.9)
  // from rounding up to the next rank.
  const double rank = std::ceil((n + 1) * (1 - alpha) - 1e-9);
  if (rank > n) return kUnboundedQuantile;
  const auto k = static_cast<std::size_t>(std::max(1.0, rank)) - 1;
  std::nth_element(scores.begin(), scores.begin() + static_cast<std::ptrdiff_t>(k), scores.end());
  return scores[k];
}

double normalized_split_conformal_quantile(const Vec& mean, const Vec& sd, const Vec& y, double alpha) {
  require(mean.size() == y.size() && sd.size() == y.size(), "calibration predictions", "one mean and sd per target");
  require((sd.array() > 0).all() && sd.allFinite(), "predictive sd", "finite and > 0");
  std::vector<double> scores(static_cast<std::size_t>(y.size()));
  for (Index i = 0; i < y.size(); ++i) scores[static_cast<std::size_t>(i)] = std::abs(y(i) - mean(i)) / sd(i);
  return conformal_quantile(std::move(scores), alpha);
}

ConformalIntervals normalized_split_conformal(const Vec& mean, const Vec& sd, double quantile) {
  require(mean.size() == sd.size(), "predictive sd", "one per mean");
  ConformalIntervals c;
  c.quantile = quantile;
  c.lower = mean - quantile * sd;
  c.upper = mean + quantile * sd;
  return c;
}

double cqr_quantile(const Vec& lower, const Vec& upper, const Vec& y, double alpha) {
  require(lower.size() == y.size() && upper.size() == y.size(), "calibration quantiles", "one lower and upper per target");
  std::vector<double> scores(static_cast<std::size_t>(y.size()));
  for (Index i = 0; i < y.size(); ++i) scores[static_cast<std::size_t>(i)] = std::max(lower(i) - y(i), y(i) - upper(i));
  return conformal_quantile(std::move(scores), alpha);
}

ConformalIntervals cqr(const Vec& lower, const Vec& upper, double quantile) {
  require(lower.size() == upper.size(), "predictive quantiles", "one upper per lower");
  ConformalIntervals c;
  c.quantile = quantile;
  c.lower = lower.array() - quantile;
  c.upper = upper.array() + quantile;
  return c;
}

ConformalIntervals cv_plus(const Mat& model_means, const Vec& residuals, const IndexVec& folds, double alpha) {
  require_alpha(alpha);
  const Index n = residuals.size(), K = model_means.rows(), m = model_means.cols();
  require(n > 0, "out-of-fold residuals", "at least one");
  require(static_cast<Index>(folds.size()) == n, "folds", "one per residual");
  for (const Index k : folds) require(k >= 0 && k < K, "fold of a residual", fmt::format("in [0, {}) (one model per fold)", K));
  require(residuals.allFinite() && (residuals.array() >= 0).all(), "out-of-fold residuals", "finite and >= 0");
  ConformalIntervals c;
  c.lower.resize(m);
  c.upper.resize(m);
  std::vector<double> above(static_cast<std::size_t>(n)), below(static_cast<std::size_t>(n));
  for (Index j = 0; j < m; ++j) {
    for (Index i = 0; i < n; ++i) {
      const double mu = model_means(folds[static_cast<std::size_t>(i)], j);
      above[static_cast<std::size_t>(i)] = mu + residuals(i);
      below[static_cast<std::size_t>(i)] = residuals(i) - mu;  // negated mu - R_i
    }
    // q+ is the ceil((1 - alpha)(n + 1))-th smallest, which conformal_quantile computes; q- the
    // floor(alpha (n + 1))-th smallest of v = mu - R, which is minus the ceil((1 - alpha)(n + 1))-th
    // smallest of -v (floor(alpha (n + 1)) = n + 1 - ceil((1 - alpha)(n + 1))).
    c.upper(j) = conformal_quantile(above, alpha);
    c.lower(j) = -conformal_quantile(below, alpha);
  }
  return c;
}

void SetScoreOptions::validate() const {
  require(lambda >= 0 && std::isfinite(lambda), "RAPS lambda", ">= 0 and finite");
  require(k_reg >= 0, "RAPS k_reg", ">= 0");
}

Vec set_scores(const Mat& probabilities, const std::vector<Index>& labels, const SetScoreOptions& options, Rng& rng) {
  options.validate();
  const Mat p = as_classes(probabilities);
  require(static_cast<Index>(labels.size()) == p.cols(), "labels", "one per row of probabilities");
  Vec scores(p.cols());
  for (Index i = 0; i < p.cols(); ++i) {
    const Index y = labels[static_cast<std::size_t>(i)];
    require(y >= 0 && y < p.rows(), "label", "a class index in [0, K)");
    const std::vector<Index> order = ranked(p, i);
    const double u = options.randomized ? rng.uniform() : 1.0;
    double before = 0.0;
    Index rank = 0;  // 1-based rank of y
    for (Index r = 0; r < p.rows(); ++r) {
      if (order[static_cast<std::size_t>(r)] == y) {
        rank = r + 1;
        break;
      }
      before += p(order[static_cast<std::size_t>(r)], i);
    }
    scores(i) = before + u * p(y, i) + options.lambda * static_cast<double>(std::max<Index>(0, rank - options.k_reg));
  }
  return scores;
}

std::vector<std::vector<Index>> prediction_sets(const Mat& probabilities, double threshold, const SetScoreOptions& options, Rng& rng) {
  options.validate();
  const Mat p = as_classes(probabilities);
  std::vector<std::vector<Index>> sets(static_cast<std::size_t>(p.cols()));
  for (Index i = 0; i < p.cols(); ++i) {
    const std::vector<Index> order = ranked(p, i);
    const double u = options.randomized ? rng.uniform() : 1.0;
    double before = 0.0;
    // The score grows with the rank (for lambda >= 0), so the set is a prefix of `order`.
    for (Index r = 0; r < p.rows(); ++r) {
      const Index k = order[static_cast<std::size_t>(r)];
      const double score = before + u * p(k, i) + options.lambda * static_cast<double>(std::max<Index>(0, r + 1 - options.k_reg));
      if (score > threshold) break;
      sets[static_cast<std::size_t>(i)].push_back(k);
      before += p(k, i);
    }
  }
  return sets;
}

namespace {

/// Mean NLL of labels under softmax(beta log p) and its first two derivatives in beta.
struct TemperatureObjective {
  const Mat& log_p;
  const std::vector<Index>& labels;
  void operator()(double beta, double& value, double& gradient, double& curvature) const {
    value = gradient = curvature = 0.0;
    for (Index i = 0; i < log_p.cols(); ++i) {
      const auto z = log_p.col(i);
      const double top = (beta * z).maxCoeff();
      const Vec w = ((beta * z).array() - top).exp();
      const double total = w.sum();
      const double mean_z = w.dot(z) / total;
      const double mean_z2 = w.dot(z.cwiseProduct(z)) / total;
      const double y = z(labels[static_cast<std::size_t>(i)]);
      value += top + std::log(total) - beta * y;
      gradient += mean_z - y;
      curvature += mean_z2 - mean_z * mean_z;
    }
    const double n = static_cast<double>(log_p.cols());
    value /= n;
    gradient /= n;
    curvature /= n;
  }
};

}  // namespace

TemperatureFit fit_temperature(const Mat& probabilities, const std::vector<Index>& labels, Index max_iterations, double tolerance) {
  require(max_iterations >= 1, "max_iterations", ">= 1");
  require(tolerance > 0, "tolerance", "> 0");
  const Mat p = as_classes(probabilities);
  require(p.cols() > 0, "calibration rows", "at least one");
  require(static_cast<Index>(labels.size()) == p.cols(), "labels", "one per row of probabilities");
  for (Index y : labels) require(y >= 0 && y < p.rows(), "label", "a class index in [0, K)");
  require(p.allFinite() && (p.array() >= 0).all(), "class probabilities", "finite and >= 0");
  // log 0 floored at the smallest normal double's log, as classification_metrics does.
  const Mat log_p = p.array().max(std::numeric_limits<double>::min()).log().matrix();
  const TemperatureObjective objective{log_p, labels};
  TemperatureFit fit;
  double value = 0, gradient = 0, curvature = 0;
  objective(1.0, value, gradient, curvature);
  fit.nll_before = value;
  // Bracket [lo, hi] of beta with gradient(lo) < 0 < gradient(hi) (the NLL is convex in beta);
  // beta is kept in [1e-4, 1e4] (T in [1e-4, 1e4]): beyond, the rows are separable (T -> 0) or
  // carry no information about the label (T -> infinity), and the fit reports no convergence.
  double lo = 1e-4, hi = 1e4, beta = 1.0, evaluated = 1.0;
  for (fit.iterations = 1; fit.iterations <= max_iterations; ++fit.iterations) {
    objective(beta, value, gradient, curvature);
    evaluated = beta;
    if (std::abs(gradient) <= tolerance) {
      fit.converged = true;
      break;
    }
    (gradient < 0 ? lo : hi) = beta;
    const double newton = curvature > 0 ? beta - gradient / curvature : (gradient < 0 ? 2 * beta : 0.5 * beta);
    beta = newton > lo && newton < hi ? newton : 0.5 * (lo + hi);
    if (hi - lo <= 1e-14 * hi) break;
  }
  fit.iterations = std::min(fit.iterations, max_iterations);
  fit.temperature = 1.0 / evaluated;  // the beta whose NLL and gradient are reported
  fit.gradient = gradient;
  fit.curvature = curvature;
  fit.nll_after = value;
  return fit;
}

Mat apply_temperature(const Mat& probabilities, double temperature) {
  require(temperature > 0 && std::isfinite(temperature), "temperature", "> 0 and finite");
  const Mat p = as_classes(probabilities);
  Mat out(p.rows(), p.cols());
  for (Index i = 0; i < p.cols(); ++i) {
    const Vec z = p.col(i).array().max(std::numeric_limits<double>::min()).log() / temperature;
    const Vec w = (z.array() - z.maxCoeff()).exp();
    out.col(i) = w / w.sum();
  }
  if (probabilities.rows() == 1) return out.row(1);
  return out;
}

}  // namespace uqnn
