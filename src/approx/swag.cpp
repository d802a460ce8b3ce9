#include "uqnn/approx/swag.hpp"

#include <fmt/format.h>

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/optim/epoch_loop.hpp"
#include "uqnn/optim/optimizer.hpp"

namespace uqnn {

namespace {
constexpr double kDivergedLossFactor = 100.0;
}  // namespace

void SwagParams::validate() const {
  require(steps >= 1, "swag steps (T)", ">= 1");
  require(snapshot_every >= 1, "swag snapshot_every (c)", ">= 1");
  require(learning_rate > 0, "swag learning_rate", "> 0");
  require(momentum >= 0 && momentum < 1, "swag momentum", "in [0, 1)");
  require(batch_size >= 0, "swag batch_size", ">= 0 (0 = full batch)");
  if (low_rank) {
    require(rank >= 2, "swag rank (k)", ">= 2 for the low-rank covariance (it divides by k - 1)");
    require(steps / snapshot_every >= 2, "swag steps / snapshot_every (T / c)", ">= 2 for the low-rank covariance");
  }
}

SwagPosterior::SwagPosterior(Vec mean, Vec diagonal_variance, Mat deviations)
    : mean_(std::move(mean)), diagonal_variance_(std::move(diagonal_variance)), deviations_(std::move(deviations)) {
  if (diagonal_variance_.size() != mean_.size() || (deviations_.cols() > 0 && deviations_.rows() != mean_.size()))
    throw std::invalid_argument("swag: mean, variance and deviations differ in dimension");
  if ((diagonal_variance_.array() < 0).any()) throw std::invalid_argument("swag: negative diagonal variance");
  if (deviations_.cols() == 1) throw std::invalid_argument("swag: the low-rank part needs >= 2 deviation columns");
}

std::vector<Vec> SwagPosterior::sample(Rng& rng, Index n) const {
  const double half = std::sqrt(0.5);
  const Index k = deviations_.cols();
  const Vec sd = diagonal_variance_.cwiseSqrt();
  std::vector<Vec> out;
  for (Index s = 0; s < n; ++s) {
    Vec w = mean_ + half * sd.cwiseProduct(rng.normal_vector(dim()));  // a new vector: the mean is untouched
    if (k > 0) w += half * (deviations_ * rng.normal_vector(k)) / std::sqrt(static_cast<double>(k - 1));
    out.push_back(std::move(w));
  }
  return out;
}

Vec SwagPosterior::marginal_variance() const {
  Vec v = 0.5 * diagonal_variance_;
  const Index k = deviations_.cols();
  if (k > 0) v += 0.5 * deviations_.rowwise().squaredNorm() / static_cast<double>(k - 1);
  return v;
}

SwagResult fit_swag(const Objective& objective, const Vec& theta0, const SwagParams& params, Rng& rng) {
  params.validate();
  const Index K = theta0.size(), N = objective.num_data();
  OptimizerParams sgd;
  sgd.name = "sgd";
  sgd.learning_rate = params.learning_rate;
  sgd.momentum = params.momentum;
  auto optimizer = make_optimizer(sgd, K);
  SwagResult result;
  Vec w = theta0, mean = theta0, second = theta0.array().square();  // w_0 is snapshot 0
  Index n = 1;
  std::vector<Vec> last;  // the last `rank` deviations, oldest first
  Vec grad(K);
  IndexVec all_rows(static_cast<std::size_t>(N));
  for (Index i = 0; i < N; ++i) all_rows[static_cast<std::size_t>(i)] = i;
  const double initial_loss = objective.loss_and_grad(w, all_rows, grad);  // full batch at w_0
  // The loop's epochs are SGD steps t = 1..T (its epoch t - 1), each on the next minibatch of a
  // running permutation (Maddox et al. 2019, Alg. 1).
  EpochLoopCallbacks callbacks;
  callbacks.state = [&](StateArchive& a) {
    a.io(w), a.io(mean), a.io(second), a.io(n), a.io(last), a.io(rng);
    a.io(result.loss);
    optimizer->archive(a);
    objective.archive(a);
  };
  callbacks.on_step = [&](Index epoch, const IndexVec& rows) {
    const Index t = epoch + 1;
    const double loss = objective.loss_and_grad(w, rows, grad);
    if (!std::isfinite(loss) || !grad.allFinite())
      throw DivergenceError(fmt::format("swag: SGD diverged at step {} (non-finite loss): lower --swag-lr", t));
    // SGD at a stable rate fluctuates around the pre-trained loss; a minibatch loss above
    // kDivergedLossFactor times its scale only happens when the iterates blow up, long before the
    // loss turns non-finite, and the moments of such iterates would be garbage.
    if (loss > initial_loss + kDivergedLossFactor * std::max(1.0, std::abs(initial_loss)))
      throw DivergenceError(fmt::format("swag: SGD diverged at step {} (loss per datum rose from {:.4g} to {:.4g}): lower --swag-lr "
                                           "(or leave it unset: it then follows the curvature at the MAP)",
                                           t, initial_loss, loss));
    optimizer->step(w, grad, params.learning_rate);
    result.loss.push_back(loss);
    if (t % params.snapshot_every == 0) {
      const double nn = static_cast<double>(n);
      mean = (nn * mean + w) / (nn + 1);
      second = (nn * second + w.array().square().matrix()) / (nn + 1);
      ++n;
      if (params.low_rank) {
        last.push_back(w - mean);
        if (static_cast<Index>(last.size()) > params.rank) last.erase(last.begin());
      }
    }
  };
  // 2: the running permutation moved into the loop's part of the file, and the step counter is
  // the loop's (steps done, not the next step).
  const EpochLoopResult ran = run_epochs({.epochs = params.steps, .num_data = N, .batch_size = params.batch_size,
                                          .minibatches = Minibatches::RunningPermutation,
                                          .checkpoint = params.checkpoint,
                                          .checkpoint_section = "uqnn swag checkpoint 2"}, rng, callbacks);
  result.resumed_at_step = ran.resumed_at_epoch;
  result.interrupted = ran.interrupted;
  // The low-rank part divides by (columns - 1): with fewer than two deviations (a run stopped early)
  // only the diagonal part is kept.
  if (last.size() < 2) last.clear();
  if (!w.allFinite()) throw DivergenceError("swag: SGD diverged: lower --swag-lr");
  Vec variance = second - mean.array().square().matrix();
  for (Index k = 0; k < K; ++k)
    if (variance[k] < 0) {
      variance[k] = 0.0;
      ++result.num_clamped_variances;
    }
  Mat D(K, static_cast<Index>(last.size()));
  for (std::size_t j = 0; j < last.size(); ++j) D.col(static_cast<Index>(j)) = last[j];
  result.num_snapshots = n;
  result.approximation = std::make_shared<SwagPosterior>(mean, variance, D);
  return result;
}

double swag_default_learning_rate(const LogDensity& density, const Vec& theta, Index num_data) {
  return 1.0 / stiffest_direction(density, theta, num_data).curvature;
}

double swag_minibatch_learning_rate(const Objective& objective, const Vec& theta, Index batch_size, double lambda_max, Rng& rng) {
  const Index N = objective.num_data(), D = theta.size();
  require(batch_size >= 1 && batch_size <= N, "swag batch size", fmt::format("in [1, {}]", N));
  constexpr Index kMaxRows = 512;
  const IndexVec order = rng.permutation(N);
  const Index M = std::min(N, kMaxRows);
  // tr(C) = mean over rows of |g_i - g_bar|^2, by Welford's update (one gradient in memory at a time).
  Vec mean = Vec::Zero(D), g(D);
  double sum_squares = 0.0;
  for (Index m = 0; m < M; ++m) {
    objective.loss_and_grad(theta, IndexVec{order[static_cast<std::size_t>(m)]}, g);
    const Vec delta = g - mean;
    mean += delta / static_cast<double>(m + 1);
    sum_squares += delta.dot(g - mean);
  }
  const double trace = M > 1 ? sum_squares / static_cast<double>(M - 1) : 0.0;
  const double stable = 1.0 / lambda_max;
  if (!(trace > 0.0) || !std::isfinite(trace)) return stable;  // no gradient noise: nothing to match
  const double mandt = 2.0 * static_cast<double>(batch_size) / static_cast<double>(N) * static_cast<double>(D) / trace;
  return std::min(mandt, stable);
}


}  // namespace uqnn
