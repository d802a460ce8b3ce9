#include "uqnn/prob/likelihood.hpp"

#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <type_traits>

#include "uqnn/core/error.hpp"

namespace uqnn {

void Likelihood::validate_targets(const Mat& targets) const {
  for (Index i = 0; i < targets.size(); ++i)
    if (!std::isfinite(targets.data()[i]))
      throw InputError(fmt::format("{} likelihood: target value {} is not finite", kind(), targets.data()[i]));
}

Mat Likelihood::extra_fisher_information(const Mat& /*Y*/, const Vec& extra) const {
  if (extra.size() == 0) return Mat(0, 0);
  throw std::logic_error("likelihood '" + kind() + "' has extra parameters but no Fisher information for them");
}

namespace {


using std::exp;
using std::log;

/// Shared implementation of the virtual double / Dual pair from one template per likelihood.
template <typename Derived>
class LikelihoodBase : public Likelihood {
 public:
  double log_likelihood(const Mat& Y, const Mat& targets, const Vec& extra, Mat* dY, Vec* d_extra) const override {
    return self().template evaluate<double>(Y, targets, extra, dY, d_extra, nullptr);
  }
  Dual log_likelihood(const MatT<Dual>& Y, const Mat& targets, const VecT<Dual>& extra, MatT<Dual>* dY,
                      VecT<Dual>* d_extra) const override {
    return self().template evaluate<Dual>(Y, targets, extra, dY, d_extra, nullptr);
  }
  Vec pointwise_log_likelihood(const Mat& Y, const Mat& targets, const Vec& extra) const override {
    Vec out = Vec::Zero(Y.cols());
    self().template evaluate<double>(Y, targets, extra, nullptr, nullptr, &out);
    return out;
  }

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

/// Gaussian with sigma fixed or learned (extra = log sigma).
class Gaussian : public LikelihoodBase<Gaussian> {
 public:
  Gaussian(bool learned, double sigma, NoiseSdPrior prior) : learned_(learned), sigma_(sigma), prior_(prior) {
    require(sigma > 0 && std::isfinite(sigma), "likelihood sigma", "a finite number > 0");
    require(prior.kind == NoiseSdPrior::Kind::Flat || (prior.scale > 0 && std::isfinite(prior.scale)),
            "noise-sd prior scale", "a finite number > 0");
    require(std::isfinite(prior.location), "noise-sd prior location", "a finite number");
  }
  std::string kind() const override { return learned_ ? "gaussian_learned_sigma" : "gaussian"; }
  Index model_outputs(Index target_dim) const override { return target_dim; }
  ParamLayout extra_layout() const override {
    ParamLayout l;
    if (learned_) l.add_vector("likelihood.log_sigma", 1, 1);
    return l;
  }
  Vec initial_extra() const override { return learned_ ? Vec::Constant(1, std::log(sigma_)) : Vec(0); }
  double extra_log_prior(const Vec& extra, Vec* grad) const override {
    if (!learned_) return 0.0;
    return prior_.log_density(extra[0], grad ? &(*grad)[0] : nullptr);
  }
  Vec extra_prior_hessian_diagonal(const Vec& extra) const override {
    if (!learned_) return Vec(0);
    return Vec::Constant(1, prior_.second_derivative(extra[0]));
  }
  /// -d^2/ds^2 of -s - r^2 e^{-2s} / 2 is 2 r^2 / sigma^2, with expectation 2 per observation; the
  /// cross term -d^2/df ds = 2 r / sigma^2 has expectation 0.
  Mat extra_fisher_information(const Mat& Y, const Vec& /*extra*/) const override {
    if (!learned_) return Mat(0, 0);
    return Mat::Constant(1, 1, 2.0 * static_cast<double>(Y.size()));
  }

  template <typename T>
  T evaluate(const MatT<T>& Y, const Mat& targets, const VecT<T>& extra, MatT<T>* dY, VecT<T>* d_extra,
             Vec* pointwise) const {
    const T log_sigma = learned_ ? extra[0] : T(std::log(sigma_));
    const T inv_var = exp(T(-2) * log_sigma);
    if constexpr (std::is_same_v<T, double>) {
      // Whole-array packet expressions (Y and the targets are [t x n], contiguous): the sums run
      // in Eigen's vectorised reduction, not as one add waiting for the last over the n points.
      thread_local Eigen::ArrayXXd r, terms;
      r = targets.array() - Y.array();
      terms = -0.5 * inv_var * r.square() - (log_sigma + kHalfLog2Pi);
      if (pointwise) *pointwise = terms.colwise().sum().transpose().matrix();
      if (dY) *dY = (r * inv_var).matrix();
      // d/d log_sigma of sum [-0.5 r^2 e^{-2 s} - s] = sum r^2 e^{-2 s} - count.
      if (learned_ && d_extra) (*d_extra)[0] += r.square().sum() * inv_var - static_cast<double>(Y.size());
      return terms.sum();
    }
    T total = T(0);
    T sum_sq = T(0);
    for (Index i = 0; i < Y.cols(); ++i) {
      T point = T(0);
      for (Index o = 0; o < Y.rows(); ++o) {
        const T r = T(targets(o, i)) - Y(o, i);
        point += T(-0.5) * r * r * inv_var - log_sigma - T(kHalfLog2Pi);
        sum_sq += r * r;
        if (dY) (*dY)(o, i) = r * inv_var;
      }
      if (pointwise) (*pointwise)[i] = value_of(point);
      total += point;
    }
    // d/d log_sigma of sum [-0.5 r^2 e^{-2 s} - s] = sum r^2 e^{-2 s} - count.
    if (learned_ && d_extra) (*d_extra)[0] += sum_sq * inv_var - T(static_cast<double>(Y.size()));
    return total;
  }

  Mat mean(const Mat& Y) const override { return Y; }
  Mat noise_variance(const Mat& Y, const Vec& extra) const override {
    const double s = learned_ ? std::exp(extra[0]) : sigma_;
    return Mat::Constant(Y.rows(), Y.cols(), s * s);
  }
  nlohmann::json to_json() const override {
    if (!learned_) return {{"kind", "gaussian"}, {"sigma", sigma_}};
    if (prior_.kind == NoiseSdPrior::Kind::LogNormal)
      return {{"kind", "gaussian_learned_sigma"}, {"initial_sigma", sigma_}, {"log_sigma_prior_mean", prior_.location},
              {"log_sigma_prior_sd", prior_.scale}};
    return {{"kind", "gaussian_learned_sigma"}, {"initial_sigma", sigma_}, {"noise_prior", prior_.to_string()}};
  }

 private:
  bool learned_;
  double sigma_;
  NoiseSdPrior prior_;
};

/// Heteroscedastic Gaussian: rows [0, t) of Y are the mean, rows [t, 2t) log sigma.
class Heteroscedastic : public LikelihoodBase<Heteroscedastic> {
 public:
  std::string kind() const override { return "heteroscedastic"; }
  Index model_outputs(Index target_dim) const override { return 2 * target_dim; }

  template <typename T>
  T evaluate(const MatT<T>& Y, const Mat& targets, const VecT<T>& /*extra*/, MatT<T>* dY, VecT<T>* /*d_extra*/,
             Vec* pointwise) const {
    const Index t = targets.rows();
    if constexpr (std::is_same_v<T, double>) {
      // One output row at a time as Eigen packet expressions on contiguous copies of its (strided)
      // mean and log-sigma rows: the exp, the residuals, the terms and their sum all vectorised.
      // Point by point, the scalar exp cost a third of a float32 gradient of seed 003's 2x16
      // networks, and the running sum over the points, one add waiting for the last, 3% (airfoil's
      // 1,202 rows on a Zen 4 host). Whole-block array expressions on Y itself are no better: with
      // a run-time row count Eigen does not vectorise them.
      thread_local Eigen::ArrayXd s, r, scaled, point;
      const Index n = Y.cols();
      if (pointwise) pointwise->setZero(n);
      double total = 0.0;
      for (Index o = 0; o < t; ++o) {
        s = Y.row(t + o).transpose().array();
        r = targets.row(o).transpose().array() - Y.row(o).transpose().array();
        scaled = r * (-2.0 * s).exp();  // r / sigma^2
        point = -0.5 * r * scaled - s - kHalfLog2Pi;
        total += point.sum();
        if (pointwise) *pointwise += point.matrix();
        if (dY) {
          dY->row(o) = scaled.transpose().matrix();
          dY->row(t + o) = (r * scaled - 1.0).transpose().matrix();
        }
      }
      return total;
    }
    T total = T(0);
    for (Index i = 0; i < Y.cols(); ++i) {
      T point = T(0);
      for (Index o = 0; o < t; ++o) {
        const T s = Y(t + o, i);
        const T inv_var = exp(T(-2) * s);
        const T r = T(targets(o, i)) - Y(o, i);
        point += T(-0.5) * r * r * inv_var - s - T(kHalfLog2Pi);
        if (dY) {
          (*dY)(o, i) = r * inv_var;
          (*dY)(t + o, i) = r * r * inv_var - T(1);
        }
      }
      if (pointwise) (*pointwise)[i] = value_of(point);
      total += point;
    }
    return total;
  }
  Mat mean(const Mat& Y) const override { return Y.topRows(Y.rows() / 2); }
  Mat noise_variance(const Mat& Y, const Vec& /*extra*/) const override {
    return (2.0 * Y.bottomRows(Y.rows() / 2).array()).exp().matrix();
  }
  nlohmann::json to_json() const override { return {{"kind", "heteroscedastic"}}; }
};

/// Bernoulli on a logit: log p = y f - log(1 + e^f).
class Bernoulli : public LikelihoodBase<Bernoulli> {
 public:
  std::string kind() const override { return "bernoulli"; }
  Index model_outputs(Index target_dim) const override { return target_dim; }
  void validate_targets(const Mat& targets) const override {
    for (Index i = 0; i < targets.size(); ++i) {
      const double y = targets.data()[i];
      if (y != 0.0 && y != 1.0)
        throw InputError(fmt::format("bernoulli likelihood: target value {} (example {}) must be 0 or 1", y, i / targets.rows()));
    }
  }
  template <typename T>
  T evaluate(const MatT<T>& Y, const Mat& targets, const VecT<T>& /*extra*/, MatT<T>* dY, VecT<T>* /*d_extra*/,
             Vec* pointwise) const {
    T total = T(0);
    for (Index i = 0; i < Y.cols(); ++i) {
      T point = T(0);
      for (Index o = 0; o < Y.rows(); ++o) {
        const T f = Y(o, i);
        const double y = targets(o, i);
        // log(1 + e^f) computed stably on either side of 0.
        const T log1pexp = f > T(0) ? T(f + log(T(1) + exp(-f))) : T(log(T(1) + exp(f)));
        point += T(y) * f - log1pexp;
        if (dY) (*dY)(o, i) = T(y) - T(1) / (T(1) + exp(-f));
      }
      if (pointwise) (*pointwise)[i] = value_of(point);
      total += point;
    }
    return total;
  }
  Mat mean(const Mat& Y) const override { return (1.0 / (1.0 + (-Y.array()).exp())).matrix(); }
  Mat noise_variance(const Mat& Y, const Vec& /*extra*/) const override { return Mat::Zero(Y.rows(), Y.cols()); }
  nlohmann::json to_json() const override { return {{"kind", "bernoulli"}}; }
};

/// Categorical on K logits; the single target row holds the class index.
class Categorical : public LikelihoodBase<Categorical> {
 public:
  explicit Categorical(Index k) : k_(k) { require(k >= 2, "categorical num_classes", ">= 2"); }
  std::string kind() const override { return "categorical"; }
  Index model_outputs(Index target_dim) const override {
    require(target_dim == 1, "categorical target columns", "exactly 1 (the class index)");
    return k_;
  }
  void validate_targets(const Mat& targets) const override {
    for (Index i = 0; i < targets.size(); ++i) {
      const double y = targets.data()[i];
      if (y != std::floor(y) || y < 0 || y >= static_cast<double>(k_))
        throw InputError(fmt::format("categorical likelihood: target value {} (example {}) must be an integer class in [0, {}] "
                                     "(the likelihood has {} classes: give the data's number of classes with --classes)",
                                     y, i, k_ - 1, k_));
    }
  }
  template <typename T>
  T evaluate(const MatT<T>& Y, const Mat& targets, const VecT<T>& /*extra*/, MatT<T>* dY, VecT<T>* /*d_extra*/,
             Vec* pointwise) const {
    T total = T(0);
    for (Index i = 0; i < Y.cols(); ++i) {
      T m = Y(0, i);
      for (Index c = 1; c < k_; ++c)
        if (Y(c, i) > m) m = Y(c, i);
      T sum = T(0);
      for (Index c = 0; c < k_; ++c) sum += exp(Y(c, i) - m);
      const T log_norm = m + log(sum);
      const Index label = static_cast<Index>(targets(0, i));
      const T point = Y(label, i) - log_norm;
      if (dY)
        for (Index c = 0; c < k_; ++c) (*dY)(c, i) = (c == label ? T(1) : T(0)) - exp(Y(c, i) - log_norm);
      if (pointwise) (*pointwise)[i] = value_of(point);
      total += point;
    }
    return total;
  }
  Mat mean(const Mat& Y) const override {
    Mat p = Y;
    for (Index i = 0; i < Y.cols(); ++i) {
      p.col(i) = (Y.col(i).array() - Y.col(i).maxCoeff()).exp().matrix();
      p.col(i) /= p.col(i).sum();
    }
    return p;
  }
  /// Zero, in the shape of mean(Y) (K probabilities per row): the predictive's spread is the draws'.
  Mat noise_variance(const Mat& Y, const Vec& /*extra*/) const override { return Mat::Zero(Y.rows(), Y.cols()); }
  nlohmann::json to_json() const override { return {{"kind", "categorical"}, {"num_classes", k_}}; }

 private:
  Index k_;
};

}  // namespace

namespace {
/// u = (sigma / S)^2 at s = log sigma: the half-normal's and half-Cauchy's one quantity.
double squared_ratio(double s, double scale) { return std::exp(2.0 * s) / (scale * scale); }
}  // namespace

double NoiseSdPrior::log_density(double s, double* grad) const {
  switch (kind) {
    case Kind::LogNormal: {
      const double z = (s - location) / scale;
      if (grad) *grad -= z / scale;
      return -0.5 * z * z - std::log(scale) - kHalfLog2Pi;
    }
    case Kind::HalfNormal: {  // log(2 N(e^s; 0, S)) + s
      const double u = squared_ratio(s, scale);
      if (grad) *grad += 1.0 - u;
      return -0.5 * u + s + std::log(2.0 / scale) - kHalfLog2Pi;
    }
    case Kind::HalfCauchy: {  // log(2 / (pi S (1 + u))) + s
      const double u = squared_ratio(s, scale);
      if (grad) *grad += 1.0 - 2.0 * u / (1.0 + u);
      return -std::log1p(u) + s + std::log(2.0 / (std::numbers::pi * scale));
    }
    case Kind::Flat:
      if (grad) *grad += 1.0;
      return s;
  }
  return 0.0;
}

double NoiseSdPrior::second_derivative(double s) const {
  switch (kind) {
    case Kind::LogNormal: return -1.0 / (scale * scale);
    case Kind::HalfNormal: return -2.0 * squared_ratio(s, scale);
    case Kind::HalfCauchy: {
      const double u = squared_ratio(s, scale);
      return -4.0 * u / ((1.0 + u) * (1.0 + u));
    }
    case Kind::Flat: return 0.0;
  }
  return 0.0;
}

NoiseSdPrior NoiseSdPrior::in_units_of(double unit) const {
  NoiseSdPrior p = *this;
  if (kind == Kind::LogNormal) p.location -= std::log(unit);
  if (kind == Kind::HalfNormal || kind == Kind::HalfCauchy) p.scale /= unit;
  return p;
}

NoiseSdPrior NoiseSdPrior::parse(const std::string& text, const std::string& flag) {
  const auto bad = [&](const std::string& why) {
    return InputError(flag + " '" + text + "': " + why +
                      "; valid forms are lognormal:M,S (log sigma ~ N(M, S^2)), halfnormal:S, halfcauchy:S and flat, "
                      "with S > 0 in the target's units");
  };
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : text.substr(colon + 1);
  const auto number = [&](const std::string& t) {
    std::size_t used = 0;
    double v = 0.0;
    try {
      v = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (t.empty() || used != t.size() || !std::isfinite(v)) throw bad("'" + t + "' is not a finite number");
    return v;
  };
  NoiseSdPrior p;
  if (name == "flat") {
    if (colon != std::string::npos) throw bad("flat takes no parameters");
    p.kind = Kind::Flat;
    p.scale = 1.0;
    return p;
  }
  if (name == "halfnormal" || name == "halfcauchy") {
    if (colon == std::string::npos || args.find(',') != std::string::npos) throw bad(name + " takes one scale S");
    p.kind = name == "halfnormal" ? Kind::HalfNormal : Kind::HalfCauchy;
    p.scale = number(args);
  } else if (name == "lognormal") {
    const auto comma = args.find(',');
    if (colon == std::string::npos || comma == std::string::npos) throw bad("lognormal takes a location and a scale, M,S");
    p.kind = Kind::LogNormal;
    p.location = number(args.substr(0, comma));
    p.scale = number(args.substr(comma + 1));
  } else {
    throw bad("'" + name + "' is not a known prior");
  }
  if (!(p.scale > 0)) throw bad("the scale must be > 0");
  return p;
}

std::string NoiseSdPrior::to_string() const {
  switch (kind) {
    case Kind::LogNormal: return fmt::format("lognormal:{},{}", location, scale);
    case Kind::HalfNormal: return fmt::format("halfnormal:{}", scale);
    case Kind::HalfCauchy: return fmt::format("halfcauchy:{}", scale);
    case Kind::Flat: return "flat";
  }
  return "";
}

std::shared_ptr<Likelihood> make_gaussian_likelihood(double sigma) {
  return std::make_shared<Gaussian>(false, sigma, NoiseSdPrior{});
}
std::shared_ptr<Likelihood> make_learned_sigma_likelihood(double initial_sigma, double prior_mean, double prior_sd) {
  return make_learned_sigma_likelihood(initial_sigma, NoiseSdPrior{NoiseSdPrior::Kind::LogNormal, prior_mean, prior_sd});
}
std::shared_ptr<Likelihood> make_learned_sigma_likelihood(double initial_sigma, const NoiseSdPrior& prior) {
  return std::make_shared<Gaussian>(true, initial_sigma, prior);
}
std::shared_ptr<Likelihood> make_heteroscedastic_likelihood() { return std::make_shared<Heteroscedastic>(); }
std::shared_ptr<Likelihood> make_bernoulli_likelihood() { return std::make_shared<Bernoulli>(); }
std::shared_ptr<Likelihood> make_categorical_likelihood(Index k) { return std::make_shared<Categorical>(k); }

std::shared_ptr<Likelihood> make_likelihood(const nlohmann::json& d) {
  try {
    const std::string kind = d.at("kind").get<std::string>();
    if (kind == "gaussian") return make_gaussian_likelihood(d.at("sigma").get<double>());
    if (kind == "gaussian_learned_sigma" && d.contains("noise_prior"))
      return make_learned_sigma_likelihood(d.at("initial_sigma").get<double>(),
                                           NoiseSdPrior::parse(d.at("noise_prior").get<std::string>(), "noise_prior"));
    if (kind == "gaussian_learned_sigma")
      return make_learned_sigma_likelihood(d.at("initial_sigma").get<double>(), d.at("log_sigma_prior_mean").get<double>(),
                                           d.at("log_sigma_prior_sd").get<double>());
    if (kind == "heteroscedastic") return make_heteroscedastic_likelihood();
    if (kind == "bernoulli") return make_bernoulli_likelihood();
    if (kind == "categorical") return make_categorical_likelihood(d.at("num_classes").get<Index>());
    throw InputError("unknown likelihood '" + kind +
                     "': valid are gaussian, gaussian_learned_sigma, heteroscedastic, bernoulli, categorical");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("invalid likelihood description: ") + e.what());
  } catch (const std::invalid_argument& e) {  // a constructor's range check (e.g. sigma <= 0)
    throw InputError(std::string("invalid likelihood description: ") + e.what());
  }
}

}  // namespace uqnn
