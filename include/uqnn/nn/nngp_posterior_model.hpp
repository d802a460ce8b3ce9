#pragma once
/// @file NngpPosteriorModel: exact Gaussian-process regression with the NNGP kernel of a network
/// (nn/nngp.hpp), written as a Model of one parameter so that predictions, output files and
/// `uqnn predict` treat it as any other fit (`uqnn fit --method nngp`).
///
/// With training inputs X, targets y, signal variance s^2 and noise variance s_n^2, the posterior of
/// f at x is N(m(x), v(x)) (Rasmussen & Williams 2006, eqs. 2.25-2.26):
///     m(x) = s^2 k(x, X) (s^2 K + s_n^2 I)^-1 y,   v(x) = s^2 k(x, x) - s^4 k(x, X) (s^2 K + s_n^2 I)^-1 k(X, x).
/// The model's one parameter is a standard normal quantile z: f(z, x) = m(x) + z sqrt(v(x)). A
/// stratified set of quantiles z_s = Phi^-1((s + 1/2) / S) as the draws makes the predictive mixture
/// of N(f(z_s, x), s_n^2) the exact N(m(x), v(x) + s_n^2) up to the quantile grid (so intervals, NLL and
/// LPPD are the GP's own). The draws are perfectly correlated across inputs: per-point quantities
/// are exact, joint ones across inputs are not (a GP draw would be).
#include <Eigen/Cholesky>
#include <memory>
#include <mutex>

#include "uqnn/nn/model.hpp"
#include "uqnn/nn/nngp.hpp"

namespace uqnn {

class NngpPosteriorModel : public Model {
 public:
  /// `inputs` [d, n] and `targets` [1, n] are the training data (standardised); throws
  /// std::invalid_argument on shapes or variances out of range, std::runtime_error when the kernel
  /// matrix cannot be factorised.
  NngpPosteriorModel(NngpArchitecture architecture, double signal_variance, double noise_variance, Mat inputs, Mat targets);

  std::string kind() const override { return "nngp_posterior"; }
  Index input_dim() const override { return inputs_.rows(); }
  Index output_dim() const override { return 1; }
  const ParamLayout& layout() const override { return layout_; }
  Vec initial_params(Rng& /*rng*/) const override { return Vec::Zero(1); }

  Mat forward(const Vec& theta, const Mat& X) const override;
  double value_and_gradient(ConstVecRef theta, const Mat& X, const OutputLoss<double>& loss, VecRef grad) const override;
  Vec hessian_vector_product(const Vec& theta, const Vec& v, const Mat& X, const OutputLoss<Dual>& loss) const override;
  Mat jacobian_vector_product(const Vec& theta, const Vec& v, const Mat& X) const override;
  Mat jacobian(const Vec& theta, const Mat& X) const override;
  /// {"kind": "nngp_posterior", "architecture": {...}, "signal_variance", "noise_variance", "inputs", "targets"}.
  nlohmann::json to_json() const override;

  /// m(X) and sqrt(v(X)), each [1, n]. The last inputs' values are kept: predictions evaluate the
  /// model once per draw on the same inputs, and each evaluation costs a kernel matrix.
  std::pair<Mat, Mat> mean_and_sd(const Mat& X) const;
  const NngpArchitecture& architecture() const { return architecture_; }
  double signal_variance() const { return signal_variance_; }
  double noise_variance() const { return noise_variance_; }
  /// log p(y | X) of the training targets under the GP (R&W eq. 2.30).
  double log_marginal_likelihood() const;

 private:
  NngpArchitecture architecture_;
  double signal_variance_, noise_variance_;
  Mat inputs_, targets_;
  Eigen::LLT<Mat> llt_;  ///< of s^2 K + s_n^2 I
  Vec alpha_;            ///< (s^2 K + s_n^2 I)^-1 y
  ParamLayout layout_;
  struct Evaluated {
    Mat inputs, mean, sd;
  };
  mutable std::mutex last_mutex_;
  mutable std::shared_ptr<const Evaluated> last_;
};

}  // namespace uqnn
