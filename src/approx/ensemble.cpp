#include "uqnn/approx/ensemble.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/core/state_archive.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn {

void EnsembleParams::validate() const {
  require(members >= 1, "ensemble members", ">= 1");
  require(data_fraction > 0 && data_fraction <= 1, "data_fraction (delta)", "in (0, 1]");
  require(threads >= 0, "threads", ">= 0 (0 = hardware concurrency)");
  require(loss == "mse" || loss == "nll", "ensemble loss", "mse or nll");
  require(noise_holdout >= 0 && noise_holdout < 1, "noise_holdout", "in [0, 1)");
  training.validate();
}

IndexVec member_subset(Index num_data, double data_fraction, Rng& rng) {
  IndexVec rows;
  if (data_fraction >= 1.0) {
    for (Index i = 0; i < num_data; ++i) rows.push_back(i);
    return rows;
  }
  const auto size = static_cast<Index>(std::floor(data_fraction * static_cast<double>(num_data)));
  if (size < 1)
    throw std::invalid_argument(fmt::format("data_fraction {} leaves floor(delta N) = 0 of {} rows: raise it", data_fraction, num_data));
  IndexVec perm = rng.permutation(num_data);
  perm.resize(static_cast<std::size_t>(size));
  std::sort(perm.begin(), perm.end());
  return perm;
}

IndexVec split_off_held_out(IndexVec& rows, double fraction, Rng& rng) {
  const auto n = static_cast<Index>(rows.size());
  const Index held = std::max<Index>(1, static_cast<Index>(std::floor(fraction * static_cast<double>(n))));
  if (held >= n)
    throw InputError(fmt::format("holding out {} of a member's {} rows for its noise estimate leaves none to train on: "
                                 "lower --ens-noise-holdout (0 = the training residuals) or give more data",
                                 held, n));
  const IndexVec perm = rng.permutation(n);
  IndexVec held_out, kept;
  for (Index i = 0; i < n; ++i) (i < held ? held_out : kept).push_back(rows[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])]);
  std::sort(held_out.begin(), held_out.end());
  std::sort(kept.begin(), kept.end());
  rows = kept;
  return held_out;
}

namespace {
std::vector<double> to_doubles(const Vec& v) { return {v.data(), v.data() + v.size()}; }
Vec to_vec(const std::vector<double>& v) { return Eigen::Map<const Vec>(v.data(), static_cast<Index>(v.size())); }
}  // namespace

namespace {
constexpr const char* kMemberCheckpointFormat = "uqnn member checkpoint 1";
std::filesystem::path member_file(const MemberCheckpoint& checkpoint, Index j) {
  return checkpoint.directory / fmt::format("member-{}.state", j);
}
/// A member's file: which member of how many, and its bytes (member_fit_bytes).
void archive_member(StateArchive& a, std::int64_t& member, std::int64_t& members, std::string& bytes) {
  a.section(kMemberCheckpointFormat);
  a.io(member), a.io(members), a.io(bytes);
}
}  // namespace

std::optional<std::string> read_member_checkpoint(const MemberCheckpoint& checkpoint, Index j, Index count) {
  const auto file = member_file(checkpoint, j);
  if (!std::filesystem::exists(file)) return std::nullopt;
  StateArchive a = StateArchive::read_file(file);
  std::int64_t member = -1, members = -1;
  std::string bytes;
  archive_member(a, member, members, bytes);
  a.expect_end();
  if (member != j || members != count)
    throw InputError(fmt::format("{}: holds member {} of {}; this run expects member {} of {}", file.string(), member, members, j, count));
  return bytes;
}

void write_member_checkpoint(const MemberCheckpoint& checkpoint, Index j, Index count, const std::string& bytes) {
  StateArchive a;
  std::int64_t member = j, members = count;
  std::string payload = bytes;
  archive_member(a, member, members, payload);
  atomic_write_text(member_file(checkpoint, j), a.take());
  const std::string progress_prefix = fmt::format("member-{}-", j);
  for (const auto& entry : std::filesystem::directory_iterator(checkpoint.directory)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(progress_prefix) && name.ends_with(".state")) {
      std::error_code ignored;  // a leftover costs only disk: the member's own file is what a resume reads
      std::filesystem::remove(entry.path(), ignored);
    }
  }
}

EpochCheckpoint MemberCheckpoint::progress(Index j, const std::string& phase) const {
  EpochCheckpoint c;
  if (!enabled()) return c;
  c.file = directory / fmt::format("member-{}-{}.state", j, phase);
  c.every_epochs = every_epochs;
  c.every_seconds = every_seconds;
  c.resume = resume;
  return c;
}

std::string member_fit_bytes(const MemberFit& fit) {
  ByteWriter w;
  w.put(to_doubles(fit.theta));
  w.put(std::vector<double>(fit.rows.begin(), fit.rows.end()));  // row indices are exact in a double
  w.put(std::vector<double>(fit.history.epoch.begin(), fit.history.epoch.end()));
  w.put(fit.history.train_loss);
  w.put(fit.history.validation_loss);
  w.put(fit.history.learning_rate);
  w.put(to_doubles(fit.anchor));
  const ConvergenceReport& c = fit.convergence;
  w.put(std::vector<double>{c.converged ? 1.0 : 0.0, static_cast<double>(c.iterations), c.gradient_norm});
  w.put(c.optimizer);
  w.put(c.stop_reason);
  w.put(c.advice);
  return w.take();
}

MemberFit member_fit_from_bytes(const std::string& bytes) {
  ByteReader r(bytes);
  MemberFit fit;
  fit.theta = to_vec(r.get_doubles());
  for (const double i : r.get_doubles()) fit.rows.push_back(static_cast<Index>(i));
  for (const double e : r.get_doubles()) fit.history.epoch.push_back(static_cast<Index>(e));
  fit.history.train_loss = r.get_doubles();
  fit.history.validation_loss = r.get_doubles();
  fit.history.learning_rate = r.get_doubles();
  fit.anchor = to_vec(r.get_doubles());
  const std::vector<double> numbers = r.get_doubles();
  fit.convergence.converged = numbers.at(0) != 0.0;
  fit.convergence.iterations = static_cast<Index>(numbers.at(1));
  fit.convergence.gradient_norm = numbers.at(2);
  fit.convergence.optimizer = r.get_string();
  fit.convergence.stop_reason = r.get_string();
  fit.convergence.advice = r.get_string();
  if (!r.done()) throw InputError("a trained member's bytes go on after its last field (a corrupt message or checkpoint)");
  return fit;
}

std::vector<MemberFit> fit_deep_ensemble(const Posterior& posterior, const EnsembleParams& params, std::uint64_t seed,
                                         const Mat& Xv, const Mat& Yv) {
  params.validate();
  const Model& model = posterior.model();
  const Likelihood& lik = posterior.likelihood();
  const Index P = model.num_params();
  const bool nll = params.loss == "nll";
  if (!nll && lik.kind() != "gaussian" && lik.kind() != "gaussian_learned_sigma")
    throw InputError("deep ensembles minimise the MSE (seed 001), which fits a Gaussian likelihood with one output per "
                     "target, not '" + lik.kind() + "': use --method rms (which minimises -log posterior)");
  const bool noise_from_held_out = params.noise_holdout > 0 && lik.kind() == "gaussian_learned_sigma";
  const auto member_training = [&params](Index j) {
    TrainParams training = params.training;
    training.checkpoint = params.checkpoint.progress(j, "training");
    return training;
  };
  std::function<MemberFit(Index)> member = [&](Index j) {
    Rng rng(seed, static_cast<std::uint64_t>(j));
    MemberFit fit;
    fit.rows = member_subset(posterior.num_data(), params.data_fraction, rng);
    IndexVec held_out;
    if (noise_from_held_out) held_out = split_off_held_out(fit.rows, params.noise_holdout, rng);
    const Mat X = gather_columns(posterior.inputs(), fit.rows), Y = gather_columns(posterior.targets(), fit.rows);
    // log sigma from the mean squared residual per target: on the training rows alone, or the average
    // of that and the held-out rows' (EnsembleParams::noise_holdout says why).
    const auto noise_log_sd = [&](const Vec& network) {
      const auto mse = [&](const Mat& Xn, const Mat& Yn) { return (model.forward(network, Xn) - Yn).squaredNorm() / static_cast<double>(Yn.size()); };
      double variance = mse(X, Y);
      if (!held_out.empty())
        variance = 0.5 * (variance + mse(gather_columns(posterior.inputs(), held_out), gather_columns(posterior.targets(), held_out)));
      return 0.5 * std::log(std::max(variance, 1e-300));
    };
    if (nll) {
      // Seed 003 App. D: Gaussian NLL (here: the posterior's likelihood), weight decay from the optimiser.
      std::shared_ptr<const Posterior> posterior_view(&posterior, [](const Posterior*) {});
      NegativeLogLikelihoodObjective objective(posterior_view, X, Y);
      std::function<double(const Vec&)> validation;
      if (Xv.cols() > 0)
        validation = [&](const Vec& w) { return -posterior.log_likelihood(w, Xv, Yv) / static_cast<double>(Xv.cols()); };
      const TrainResult trained = train(objective, posterior.initial_point(rng), member_training(j), rng, validation);
      fit.theta = trained.best_theta;
      if (noise_from_held_out) fit.theta[P] = noise_log_sd(fit.theta.head(P));
      fit.history = trained.history;
      fit.convergence = trained.convergence;
      return fit;
    }
    const Vec start = model.initial_params(rng);
    // Shared ownership is not needed: the objective lives only in this call.
    std::shared_ptr<const Model> model_view(&model, [](const Model*) {});
    MeanSquaredErrorObjective objective(model_view, X, Y);
    std::function<double(const Vec&)> validation;
    if (Xv.cols() > 0)
      validation = [&](const Vec& w) { return (model.forward(w, Xv) - Yv).squaredNorm() / static_cast<double>(Xv.cols()); };
    const TrainResult trained = train(objective, start, member_training(j), rng, validation);
    fit.theta.resize(posterior.dim());
    fit.theta.head(P) = trained.best_theta;
    Vec extra = lik.initial_extra();
    if (lik.kind() == "gaussian_learned_sigma") extra[0] = noise_log_sd(trained.best_theta);
    fit.theta.tail(extra.size()) = extra;
    fit.history = trained.history;
    fit.convergence = trained.convergence;
    return fit;
  };
  return run_members<MemberFit>(params.members, params.threads, member, member_fit_bytes, member_fit_from_bytes, params.checkpoint);
}

std::vector<MemberFit> fit_randomized_map(const Posterior& posterior, const RandomizedMapParams& params,
                                          std::uint64_t seed, const Mat& Xv, const Mat& Yv) {
  params.ensemble.validate();
  const auto* gaussian = dynamic_cast<const GaussianPrior*>(&posterior.prior());
  if (!gaussian)
    throw InputError("randomized MAP needs a Gaussian prior (--prior gaussian or fan-in): its anchors are drawn from it");
  const Likelihood& lik = posterior.likelihood();
  if (params.perturb_targets && (lik.kind() != "gaussian" || lik.num_extra() != 0))
    throw InputError("randomized MAP with perturbed targets needs a Gaussian likelihood with fixed noise (--noise)");
  const Index N = posterior.num_data(), P = posterior.model().num_params();
  std::function<MemberFit(Index)> member = [&](Index j) {
    Rng rng(seed, static_cast<std::uint64_t>(j));
    MemberFit fit;
    fit.rows = member_subset(N, params.ensemble.data_fraction, rng);
    const Index n_j = static_cast<Index>(fit.rows.size());
    Mat X = gather_columns(posterior.inputs(), fit.rows), Y = gather_columns(posterior.targets(), fit.rows);
    const Vec start = posterior.initial_point(rng);
    fit.anchor = gaussian->mean() + gaussian->sd().cwiseProduct(rng.normal_vector(P));
    if (params.perturb_targets) {
      const Mat noise_sd = lik.noise_variance(posterior.model().forward(start.head(P), X), Vec(0)).cwiseSqrt();
      for (Index i = 0; i < Y.cols(); ++i)
        for (Index o = 0; o < Y.rows(); ++o) Y(o, i) += noise_sd(o, i) * rng.normal();
    }
    // (|D_j| / N) ||w - w0||^2 / (2 sd^2) = ||w - w0||^2 / (2 (sd sqrt(N / |D_j|))^2): the member's
    // posterior on D_j with the anchored prior widened by sqrt(N / |D_j|) has exactly seed 001's loss
    // (up to a constant); NegativeLogPosteriorObjective then divides it by |D_j|.
    const double widen = std::sqrt(static_cast<double>(N) / static_cast<double>(n_j));
    auto anchored = std::make_shared<GaussianPrior>(fit.anchor, gaussian->sd() * widen);
    auto member_posterior = std::make_shared<Posterior>(posterior.model_ptr(), posterior.likelihood_ptr(), anchored, X, Y);
    NegativeLogPosteriorObjective objective(member_posterior);
    std::function<double(const Vec&)> validation;
    if (Xv.cols() > 0)
      validation = [&](const Vec& w) { return -posterior.log_likelihood(w, Xv, Yv) / static_cast<double>(Xv.cols()); };
    TrainParams training = params.ensemble.training;
    training.checkpoint = params.ensemble.checkpoint.progress(j, "training");
    const TrainResult trained = train(objective, start, training, rng, validation);
    fit.theta = trained.best_theta;
    fit.history = trained.history;
    fit.convergence = trained.convergence;
    return fit;
  };
  return run_members<MemberFit>(params.ensemble.members, params.ensemble.threads, member, member_fit_bytes,
                                member_fit_from_bytes, params.ensemble.checkpoint);
}

}  // namespace uqnn
