#include "uqnn/predictive/scores.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "uqnn/core/error.hpp"
#include "uqnn/diagnostics/normal_quantile.hpp"

namespace uqnn {

namespace {

constexpr double kInvSqrt2 = 1.0 / std::numbers::sqrt2;
constexpr double kInvSqrt2Pi = 0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2;

double normal_cdf(double z) { return 0.5 * std::erfc(-z * kInvSqrt2); }
double normal_pdf(double z) { return kInvSqrt2Pi * std::exp(-0.5 * z * z); }

/// E|m + sqrt(v) Z| for Z ~ N(0, 1) (Grimit et al. 2006, the A of eq. 4).
double abs_moment(double m, double v) {
  if (!(v > 0)) return std::abs(m);
  const double s = std::sqrt(v), z = m / s;
  return 2 * s * normal_pdf(z) + m * (2 * normal_cdf(z) - 1);
}

void require_finite(const Vec& v, const std::string& what) {
  require(v.allFinite(), what, "finite");
}

/// The mixture's mean and sd with the (S - 1) divisor for the means' spread, as
/// summarize_predictive reports them (so gaussian_nll equals `uqnn fit`'s nll).
void mixture_moments(const Mat& means, const Mat& sds, Vec& mean, Vec& sd) {
  const Index S = means.rows();
  mean = means.colwise().mean().transpose();
  Vec spread = Vec::Zero(means.cols());
  if (S > 1) spread = (means.rowwise() - mean.transpose()).array().square().colwise().sum().transpose() / static_cast<double>(S - 1);
  sd = (spread.array() + sds.array().square().colwise().mean().transpose()).sqrt();
}

}  // namespace

double crps_gaussian(double mean, double sd, double y) {
  if (!(sd > 0)) return std::abs(y - mean);
  const double z = (y - mean) / sd;
  return sd * (z * (2 * normal_cdf(z) - 1) + 2 * normal_pdf(z) - std::numbers::inv_sqrtpi);
}

double crps_mixture(const double* mu, const double* sd, Index S, double y) {
  double first = 0.0, second = 0.0;
  for (Index k = 0; k < S; ++k) {
    first += abs_moment(y - mu[k], sd[k] * sd[k]);
    second += abs_moment(0.0, 2 * sd[k] * sd[k]);  // the diagonal k = l
    for (Index l = k + 1; l < S; ++l) second += 2 * abs_moment(mu[k] - mu[l], sd[k] * sd[k] + sd[l] * sd[l]);
  }
  const double s = static_cast<double>(S);
  return first / s - second / (2 * s * s);
}

double crps_sorted_samples(const double* x, Index m, double y) {
  // sum_{j,k} |x_j - x_k| = 2 sum_j (2j - m - 1) x_(j) for the order statistics (j = 1..m).
  double first = 0.0, pairs = 0.0;
  for (Index j = 0; j < m; ++j) {
    first += std::abs(x[j] - y);
    pairs += static_cast<double>(2 * (j + 1) - m - 1) * x[j];
  }
  const double md = static_cast<double>(m);
  return first / md - pairs / (md * md);
}

RegressionPredictive RegressionPredictive::gaussian(Vec mean, Vec sd) {
  require(mean.size() == sd.size(), "predictive sd", "one per predictive mean");
  require_finite(mean, "predictive mean");
  require(sd.allFinite() && (sd.array() > 0).all(), "predictive sd", "finite and > 0");
  RegressionPredictive p;
  p.form_ = Form::Gaussian;
  p.mean_ = std::move(mean);
  p.sd_ = std::move(sd);
  return p;
}

RegressionPredictive RegressionPredictive::mixture(Mat means, Mat sds) {
  require(means.rows() >= 1, "mixture components", ">= 1");
  require(means.rows() == sds.rows() && means.cols() == sds.cols(), "mixture sds", "the shape of the means");
  require(means.allFinite(), "mixture means", "finite");
  require(sds.allFinite() && (sds.array() >= 0).all(), "mixture sds", "finite and >= 0");
  require((sds.colwise().maxCoeff().array() > 0).all(), "mixture sds", "> 0 for some component at every point");
  RegressionPredictive p;
  p.form_ = Form::Mixture;
  mixture_moments(means, sds, p.mean_, p.sd_);
  p.a_ = std::move(means);
  p.b_ = std::move(sds);
  return p;
}

RegressionPredictive RegressionPredictive::samples(Mat samples) {
  require(samples.rows() >= 2, "predictive samples", "at least 2 per point");
  require(samples.allFinite(), "predictive samples", "finite");
  RegressionPredictive p;
  p.form_ = Form::Samples;
  p.mean_ = samples.colwise().mean().transpose();
  p.sd_ = ((samples.rowwise() - p.mean_.transpose()).array().square().colwise().sum() / static_cast<double>(samples.rows() - 1))
              .sqrt()
              .transpose();
  for (Index i = 0; i < samples.cols(); ++i) std::sort(samples.col(i).data(), samples.col(i).data() + samples.rows());
  p.a_ = std::move(samples);
  return p;
}

double RegressionPredictive::cdf(Index i, double y) const {
  switch (form_) {
    case Form::Gaussian: return normal_cdf((y - mean_(i)) / sd_(i));
    case Form::Mixture: {
      double F = 0.0;
      for (Index k = 0; k < a_.rows(); ++k)
        F += b_(k, i) > 0 ? normal_cdf((y - a_(k, i)) / b_(k, i)) : (y >= a_(k, i) ? 1.0 : 0.0);
      return F / static_cast<double>(a_.rows());
    }
    case Form::Samples: {
      const double* x = a_.col(i).data();
      return static_cast<double>(std::upper_bound(x, x + a_.rows(), y) - x) / static_cast<double>(a_.rows());
    }
  }
  return 0.0;
}

double RegressionPredictive::quantile(Index i, double p) const {
  require(p > 0 && p < 1, "quantile probability", "in (0, 1)");
  switch (form_) {
    case Form::Gaussian: return mean_(i) + sd_(i) * diagnostics::inverse_normal_cdf(p);
    case Form::Mixture:
      return mixture_quantile(a_.col(i).data(), b_.col(i).data(), a_.rows(), p, mean_(i) + sd_(i) * diagnostics::inverse_normal_cdf(p));
    case Form::Samples: {
      const double h = static_cast<double>(a_.rows() - 1) * p;
      const auto lo = static_cast<Index>(std::floor(h));
      const Index hi = std::min(lo + 1, a_.rows() - 1);
      return a_(lo, i) + (h - static_cast<double>(lo)) * (a_(hi, i) - a_(lo, i));
    }
  }
  return 0.0;
}

double RegressionPredictive::log_density(Index i, double y) const {
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
  const auto gaussian = [&](double mu, double sd) {
    const double z = (y - mu) / sd;
    return -0.5 * z * z - std::log(sd) - half_log_2pi;
  };
  if (form_ != Form::Mixture) return gaussian(mean_(i), sd_(i));
  double top = -std::numeric_limits<double>::infinity();
  for (Index k = 0; k < a_.rows(); ++k)
    if (b_(k, i) > 0) top = std::max(top, gaussian(a_(k, i), b_(k, i)));
  double sum = 0;
  for (Index k = 0; k < a_.rows(); ++k)
    if (b_(k, i) > 0) sum += std::exp(gaussian(a_(k, i), b_(k, i)) - top);
  return top + std::log(sum / static_cast<double>(a_.rows()));
}

double RegressionPredictive::crps(Index i, double y) const {
  switch (form_) {
    case Form::Gaussian: return crps_gaussian(mean_(i), sd_(i), y);
    case Form::Mixture: {
      const Index S = a_.rows();
      if (S <= kCrpsExactMaxComponents) return crps_mixture(a_.col(i).data(), b_.col(i).data(), S, y);
      // Many components: the energy form on r quantiles of each component at the mid-points
      // (j + 1/2) / r, sorted, about 4096 in all (deterministic, no random numbers).
      const Index r = std::max<Index>(1, (4096 + S - 1) / S);
      std::vector<double> x;
      x.reserve(static_cast<std::size_t>(r * S));
      for (Index k = 0; k < S; ++k)
        for (Index j = 0; j < r; ++j)
          x.push_back(a_(k, i) + b_(k, i) * diagnostics::inverse_normal_cdf((static_cast<double>(j) + 0.5) / static_cast<double>(r)));
      std::sort(x.begin(), x.end());
      return crps_sorted_samples(x.data(), static_cast<Index>(x.size()), y);
    }
    case Form::Samples: return crps_sorted_samples(a_.col(i).data(), a_.rows(), y);
  }
  return 0.0;
}

std::vector<double> coverage_from_pit(const Vec& pit, const std::vector<double>& levels) {
  require(pit.size() > 0, "PIT values", "at least one");
  std::vector<double> out;
  for (double level : levels) {
    require(level > 0 && level < 1, "nominal level", "in (0, 1)");
    const double lo = 0.5 - level / 2, hi = 0.5 + level / 2;
    out.push_back(static_cast<double>((pit.array() >= lo && pit.array() <= hi).count()) / static_cast<double>(pit.size()));
  }
  return out;
}

RegressionScores score_regression(const RegressionPredictive& p, const Vec& y, const std::vector<double>& levels) {
  const Index n = p.size();
  require(n > 0, "regression predictive", "at least one point");
  require(y.size() == n, "targets", "one per predicted point (" + std::to_string(n) + ")");
  require_finite(y, "targets");
  RegressionScores s;
  s.n = n;
  const double half_log_2pi = 0.5 * std::log(2 * std::numbers::pi);
  s.pit.resize(n);
  double se = 0, ae = 0, nll = 0, gnll = 0, crps = 0;
  for (Index i = 0; i < n; ++i) {
    const double r = y(i) - p.mean()(i), sd = p.sd()(i);
    se += r * r;
    ae += std::abs(r);
    const double g = 0.5 * r * r / (sd * sd) + std::log(sd) + half_log_2pi;
    gnll += g;
    nll -= p.log_density(i, y(i));
    crps += p.crps(i, y(i));
    s.pit(i) = p.cdf(i, y(i));
  }
  s.rmse = std::sqrt(se / static_cast<double>(n));
  s.mae = ae / static_cast<double>(n);
  s.gaussian_nll = gnll / static_cast<double>(n);
  s.nll = nll / static_cast<double>(n);
  s.crps = crps / static_cast<double>(n);
  for (double level : levels) {
    require(level > 0 && level < 1, "interval level", "in (0, 1)");
    Index inside = 0;
    double width = 0;
    for (Index i = 0; i < n; ++i) {
      const double lo = p.quantile(i, 0.5 - level / 2), hi = p.quantile(i, 0.5 + level / 2);
      inside += y(i) >= lo && y(i) <= hi ? 1 : 0;
      width += hi - lo;
    }
    s.coverage[level] = static_cast<double>(inside) / static_cast<double>(n);
    s.width[level] = width / static_cast<double>(n);
  }
  for (int k = 1; k <= 19; ++k) s.calibration_nominal.push_back(0.05 * k);
  s.calibration_observed = coverage_from_pit(s.pit, s.calibration_nominal);
  return s;
}

// ---------------------------------------------------------------------------------------------

void confidence_and_correct(const Mat& probabilities, const Mat& targets, bool categorical, Vec& confidence, Vec& correct) {
  require(probabilities.cols() == targets.cols(), "classification targets", "one column per predicted row");
  require(probabilities.cols() > 0, "class probabilities", "at least one row");
  require(probabilities.allFinite(), "class probabilities", "finite");
  if (categorical) {
    require(targets.rows() == 1, "categorical targets", "one row of class indices");
    confidence.resize(probabilities.cols());
    correct.resize(probabilities.cols());
    for (Index i = 0; i < probabilities.cols(); ++i) {
      Index top = 0;
      confidence(i) = probabilities.col(i).maxCoeff(&top);
      const double y = targets(0, i);
      if (!(y >= 0 && y < static_cast<double>(probabilities.rows()) && y == std::floor(y)))
        throw InputError("categorical target of row " + std::to_string(i + 1) + " is " + std::to_string(y) +
                         ": it must be an integer class in [0, " + std::to_string(probabilities.rows()) + ")");
      correct(i) = static_cast<double>(top) == y ? 1.0 : 0.0;
    }
    return;
  }
  require(targets.rows() == probabilities.rows(), "bernoulli targets", "one row per output");
  confidence.resize(probabilities.size());
  correct.resize(probabilities.size());
  Index j = 0;
  for (Index i = 0; i < probabilities.cols(); ++i)
    for (Index o = 0; o < probabilities.rows(); ++o, ++j) {
      const double p = probabilities(o, i), y = targets(o, i);
      if (y != 0.0 && y != 1.0)
        throw InputError("bernoulli target of row " + std::to_string(i + 1) + " is " + std::to_string(y) + ": it must be 0 or 1");
      const bool predicts_one = p >= 0.5;
      confidence(j) = predicts_one ? p : 1.0 - p;
      correct(j) = predicts_one == (y == 1.0) ? 1.0 : 0.0;
    }
}

CalibrationError calibration_error(const Vec& confidence, const Vec& correct, int num_bins, BinScheme scheme) {
  require(num_bins >= 1, "number of calibration bins", ">= 1");
  const Index n = confidence.size();
  require(n > 0, "confidences", "at least one");
  require(correct.size() == n, "correctness", "one per confidence");
  require(confidence.allFinite() && (confidence.array() >= 0).all() && (confidence.array() <= 1).all(), "confidences", "in [0, 1]");
  CalibrationError e;
  using Bin = ClassificationMetrics::Bin;
  if (scheme == BinScheme::EqualWidth) {
    e.bins.resize(static_cast<std::size_t>(num_bins));
    for (int b = 0; b < num_bins; ++b) {
      e.bins[static_cast<std::size_t>(b)].lower = static_cast<double>(b) / num_bins;
      e.bins[static_cast<std::size_t>(b)].upper = static_cast<double>(b + 1) / num_bins;
    }
    for (Index i = 0; i < n; ++i) {
      // As classification_metrics: bin floor(c B), the top bin closed at 1.
      const int b = std::min(num_bins - 1, static_cast<int>(confidence(i) * num_bins));
      Bin& bin = e.bins[static_cast<std::size_t>(b)];
      bin.confidence += confidence(i);
      bin.accuracy += correct(i);
      ++bin.count;
    }
  } else {
    std::vector<Index> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return confidence(a) < confidence(b); });
    for (int b = 0; b < num_bins; ++b) {
      const Index first = n * b / num_bins, last = n * (b + 1) / num_bins;
      if (last == first) continue;
      Bin bin;
      bin.lower = confidence(order[static_cast<std::size_t>(first)]);
      bin.upper = confidence(order[static_cast<std::size_t>(last - 1)]);
      for (Index k = first; k < last; ++k) {
        bin.confidence += confidence(order[static_cast<std::size_t>(k)]);
        bin.accuracy += correct(order[static_cast<std::size_t>(k)]);
      }
      bin.count = last - first;
      e.bins.push_back(bin);
    }
  }
  for (Bin& bin : e.bins) {
    if (bin.count == 0) continue;
    bin.confidence /= static_cast<double>(bin.count);
    bin.accuracy /= static_cast<double>(bin.count);
    const double gap = std::abs(bin.accuracy - bin.confidence);
    e.ece += static_cast<double>(bin.count) / static_cast<double>(n) * gap;
    e.mce = std::max(e.mce, gap);
  }
  return e;
}

RiskCoverage risk_coverage(const Vec& confidence, const Vec& correct) {
  const Index n = confidence.size();
  require(n > 0, "confidences", "at least one");
  require(correct.size() == n, "correctness", "one per confidence");
  require(confidence.allFinite(), "confidences", "finite");
  std::vector<Index> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return confidence(a) > confidence(b); });
  RiskCoverage rc;
  rc.coverage.resize(n);
  rc.risk.resize(n);
  double errors_before = 0.0;
  for (Index a = 0; a < n;) {
    Index b = a;
    double group_errors = 0.0;
    while (b < n && confidence(order[static_cast<std::size_t>(b)]) == confidence(order[static_cast<std::size_t>(a)])) {
      group_errors += 1.0 - correct(order[static_cast<std::size_t>(b)]);
      ++b;
    }
    const double rate = group_errors / static_cast<double>(b - a);
    for (Index k = a + 1; k <= b; ++k) {
      rc.coverage(k - 1) = static_cast<double>(k) / static_cast<double>(n);
      rc.risk(k - 1) = (errors_before + static_cast<double>(k - a) * rate) / static_cast<double>(k);
    }
    errors_before += group_errors;
    a = b;
  }
  rc.aurc = rc.risk.mean();
  return rc;
}

ClassificationScores score_classification(const Mat& probabilities, const Mat& targets, bool categorical, int num_bins) {
  ClassificationScores s;
  s.basic = classification_metrics(probabilities, targets, categorical, num_bins);
  Vec confidence, correct;
  confidence_and_correct(probabilities, targets, categorical, confidence, correct);
  s.equal_width = calibration_error(confidence, correct, num_bins, BinScheme::EqualWidth);
  s.equal_mass = calibration_error(confidence, correct, num_bins, BinScheme::EqualMass);
  s.risk_coverage = risk_coverage(confidence, correct);
  return s;
}

// ---------------------------------------------------------------------------------------------

UncertaintyScores uncertainty_scores(const std::vector<Mat>& draws) {
  require(!draws.empty(), "probability draws", "at least one");
  const Index n = draws.front().cols();
  require(n > 0, "class probabilities", "at least one row");
  const auto xlogx = [](double p) { return p > 0 ? p * std::log(p) : 0.0; };
  const auto as_classes = [](const Mat& p) -> Mat {
    if (p.rows() != 1) return p;
    Mat two(2, p.cols());
    two.row(0) = 1.0 - p.row(0).array();
    two.row(1) = p.row(0);
    return two;
  };
  Mat mean;
  UncertaintyScores u;
  u.expected_entropy = Vec::Zero(n);
  for (const Mat& d : draws) {
    require(d.cols() == n && d.rows() == draws.front().rows(), "probability draws", "all of one shape");
    require(d.allFinite() && (d.array() >= 0).all(), "class probabilities", "finite and >= 0");
    const Mat p = as_classes(d);
    if (mean.size() == 0) mean = Mat::Zero(p.rows(), n);
    mean += p;
    for (Index i = 0; i < n; ++i)
      for (Index k = 0; k < p.rows(); ++k) u.expected_entropy(i) -= xlogx(p(k, i));
  }
  const double S = static_cast<double>(draws.size());
  mean /= S;
  u.expected_entropy /= S;
  u.predictive_entropy.resize(n);
  u.max_probability.resize(n);
  for (Index i = 0; i < n; ++i) {
    double h = 0;
    for (Index k = 0; k < mean.rows(); ++k) h -= xlogx(mean(k, i));
    u.predictive_entropy(i) = h;
    u.max_probability(i) = mean.col(i).maxCoeff();
  }
  // H[mean] >= mean H by concavity; rounding can make a zero difference slightly negative.
  u.mutual_information = (u.predictive_entropy - u.expected_entropy).cwiseMax(0.0);
  return u;
}

DetectionScores detection_scores(const Vec& in, const Vec& out) {
  require(in.size() > 0, "in-distribution scores", "at least one (a single class has no ROC curve)");
  require(out.size() > 0, "out-of-distribution scores", "at least one (a single class has no ROC curve)");
  require(in.allFinite(), "in-distribution scores", "finite");
  require(out.allFinite(), "out-of-distribution scores", "finite");
  const Index n0 = in.size(), n1 = out.size(), n = n0 + n1;
  // (score, is OOD) sorted by decreasing score; thresholds at the distinct scores.
  std::vector<std::pair<double, bool>> all;
  all.reserve(static_cast<std::size_t>(n));
  for (Index i = 0; i < n0; ++i) all.emplace_back(in(i), false);
  for (Index i = 0; i < n1; ++i) all.emplace_back(out(i), true);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  DetectionScores d;
  double tp = 0, fp = 0, auc = 0, ap = 0, previous_recall = 0;
  bool fpr_set = false;
  for (std::size_t a = 0; a < all.size();) {
    std::size_t b = a;
    double group_tp = 0, group_fp = 0;
    while (b < all.size() && all[b].first == all[a].first) {
      (all[b].second ? group_tp : group_fp) += 1;
      ++b;
    }
    // AUROC by the trapezoid over this step of the ROC curve: a tie group adds a diagonal step,
    // which counts its OOD-vs-in pairs one half (the Mann-Whitney statistic).
    auc += group_fp * (tp + 0.5 * group_tp);
    tp += group_tp;
    fp += group_fp;
    const double recall = tp / static_cast<double>(n1);
    if (tp + fp > 0) ap += (recall - previous_recall) * tp / (tp + fp);
    previous_recall = recall;
    if (!fpr_set && recall >= 0.95) {
      d.fpr_at_95_tpr = fp / static_cast<double>(n0);
      fpr_set = true;
    }
    a = b;
  }
  d.auroc = auc / (static_cast<double>(n0) * static_cast<double>(n1));
  d.aupr = ap;
  return d;
}

std::map<std::string, DetectionScores> ood_detection(const UncertaintyScores& in, const UncertaintyScores& out) {
  std::map<std::string, DetectionScores> m;
  m["predictive_entropy"] = detection_scores(in.predictive_entropy, out.predictive_entropy);
  m["mutual_information"] = detection_scores(in.mutual_information, out.mutual_information);
  m["max_probability"] = detection_scores((1.0 - in.max_probability.array()).matrix(), (1.0 - out.max_probability.array()).matrix());
  return m;
}

}  // namespace uqnn
