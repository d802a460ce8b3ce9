#include "uqnn/approx/ensemble.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include "uqnn/core/error.hpp"
#include "uqnn/core/state_archive.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/nn/lockstep_model.hpp"

namespace uqnn {

void EnsembleParams::validate() const {
  require(members >= 1, "ensemble members", ">= 1");
  require(data_fraction > 0 && data_fraction <= 1, "data_fraction (delta)", "in (0, 1]");
  require(threads >= 0, "threads", ">= 0 (0 = hardware concurrency)");
  require(loss == "mse" || loss == "nll", "ensemble loss", "mse or nll");
  require(noise_holdout >= 0 && noise_holdout < 1, "noise_holdout", "in [0, 1)");
  for (const Index k : fold_of_row) require(k >= 0 && k < members, "fold of a training row", "in [0, members)");
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

IndexVec member_rows(Index num_data, const EnsembleParams& params, Index j, Rng& rng) {
  IndexVec rows = member_subset(num_data, params.data_fraction, rng);
  if (params.fold_of_row.empty()) return rows;
  if (static_cast<Index>(params.fold_of_row.size()) != num_data)
    throw std::invalid_argument(fmt::format("fold_of_row has {} entries for {} training rows", params.fold_of_row.size(), num_data));
  rows.erase(std::remove_if(rows.begin(), rows.end(), [&](Index i) { return params.fold_of_row[static_cast<std::size_t>(i)] == j; }),
             rows.end());
  if (rows.empty()) throw InputError(fmt::format("member {} has no rows left once its fold is left out", j));
  return rows;
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
/// The posterior the members train on: `posterior` itself, or with lockstep (EnsembleParams::lockstep)
/// a copy whose model evaluates its gradients in lockstep. (The copy's rows are not spread over
/// processes, but the members' objectives never evaluate the whole posterior: they take their rows.)
std::shared_ptr<const Posterior> training_posterior(const Posterior& posterior, bool lockstep) {
  if (!lockstep) return std::shared_ptr<const Posterior>(&posterior, [](const Posterior*) {});
  return std::make_shared<Posterior>(std::make_shared<LockstepModel>(posterior.model_ptr()), posterior.likelihood_ptr(),
                                     posterior.prior_ptr(), posterior.inputs(), posterior.targets());
}

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

double held_out_noise_variance(const Model& model, const std::vector<MemberFit>& twins, const Mat& inputs, const Mat& targets) {
  const Index P = model.num_params(), n = inputs.cols(), outputs = targets.rows();
  // squared(j, i): twin j's squared error summed over the outputs of held-out row i.
  Mat squared(static_cast<Index>(twins.size()), n);
  for (std::size_t j = 0; j < twins.size(); ++j)
    squared.row(static_cast<Index>(j)) = (model.forward(twins[j].theta.head(P), inputs) - targets).colwise().squaredNorm();
  // EM for the common variance of the mixture (1/J) sum_j N(y_i; f_j(x_i), sigma^2 I): the
  // responsibilities r_ij ~ exp(-squared(j, i) / (2 sigma^2)), then sigma^2 = sum_ij r_ij squared(j, i) / (n O).
  // Each step raises the likelihood (Dempster, Laird & Rubin 1977); it starts from the pooled mean.
  double variance = squared.mean() / static_cast<double>(outputs);
  for (int step = 0; step < 10000 && variance > 0; ++step) {
    double weighted = 0.0;
    for (Index i = 0; i < n; ++i) {
      const Vec log_weight = -squared.col(i) / (2.0 * variance);
      const Vec weight = (log_weight.array() - log_weight.maxCoeff()).exp();
      weighted += weight.dot(squared.col(i)) / weight.sum();
    }
    const double next = weighted / static_cast<double>(n * outputs);
    const bool settled = std::abs(next - variance) <= 1e-12 * variance;
    variance = next;
    if (settled) break;
  }
  return variance;
}

std::vector<MemberFit> fit_deep_ensemble(const Posterior& posterior, const EnsembleParams& params, std::uint64_t seed,
                                         const Mat& Xv, const Mat& Yv) {
  params.validate();
  const Model& model = posterior.model();
  const Likelihood& lik = posterior.likelihood();
  const Index P = model.num_params();
  const bool nll = params.loss == "nll";
  if (!nll && lik.kind() != "gaussian" && lik.kind() != "gaussian_learned_sigma")
    throw InputError("deep ensembles minimise the MSE (as in QUiNN's solver manual), which fits a Gaussian likelihood "
                     "with one output per target, not '" +
                     lik.kind() + "': use --method rms (which minimises -log posterior)");
  const bool noise_from_held_out = params.noise_holdout > 0 && lik.kind() == "gaussian_learned_sigma";
  const std::shared_ptr<const Posterior> train_posterior = training_posterior(posterior, params.lockstep);
  // One network trained on `rows` with `rng` (initialisation, then minibatches) and the member's
  // epoch checkpoints of `phase`; theta carries the likelihood's extras (the NLL's own, or for the
  // MSE the likelihood's initial ones).
  const auto train_network = [&](const IndexVec& rows, Rng& rng, Index j, const std::string& phase) {
    MemberFit fit;
    fit.rows = rows;
    const Mat X = gather_columns(posterior.inputs(), rows), Y = gather_columns(posterior.targets(), rows);
    TrainParams training = params.training;
    training.checkpoint = params.checkpoint.progress(j, phase);
    TrainResult trained;
    if (nll) {
      // Seed 003 App. D: Gaussian NLL (here: the posterior's likelihood), weight decay from the optimiser.
      NegativeLogLikelihoodObjective objective(train_posterior, X, Y);
      std::function<double(const Vec&)> validation;
      if (Xv.cols() > 0)
        validation = [&](const Vec& w) { return -posterior.log_likelihood(w, Xv, Yv) / static_cast<double>(Xv.cols()); };
      trained = train(objective, posterior.initial_point(rng), training, rng, validation);
      fit.theta = trained.best_theta;
    } else {
      const Vec start = model.initial_params(rng);
      MeanSquaredErrorObjective objective(train_posterior->model_ptr(), X, Y);
      std::function<double(const Vec&)> validation;
      if (Xv.cols() > 0)
        validation = [&](const Vec& w) { return (model.forward(w, Xv) - Yv).squaredNorm() / static_cast<double>(Xv.cols()); };
      trained = train(objective, start, training, rng, validation);
      fit.theta.resize(posterior.dim());
      fit.theta.head(P) = trained.best_theta;
      fit.theta.tail(lik.num_extra()) = lik.initial_extra();
    }
    fit.history = trained.history;
    fit.convergence = trained.convergence;
    return fit;
  };
  // The mean squared residual per target of a member's network on `rows`.
  const auto mean_squared_residual = [&](const MemberFit& fit, const IndexVec& rows) {
    const Mat Y = gather_columns(posterior.targets(), rows);
    return (model.forward(fit.theta.head(P), gather_columns(posterior.inputs(), rows)) - Y).squaredNorm() / static_cast<double>(Y.size());
  };
  const auto log_sd = [](double variance) { return 0.5 * std::log(std::max(variance, 1e-300)); };
  std::function<MemberFit(Index)> member = [&](Index j) {
    Rng rng(seed, static_cast<std::uint64_t>(j));
    IndexVec rows = member_rows(posterior.num_data(), params, j, rng);
    if (!noise_from_held_out || params.noise_refit) {
      MemberFit fit = train_network(rows, rng, j, "training");
      // The MSE's member: log sigma of its training residuals (the NLL's member learned its own;
      // with noise_refit, fit_deep_ensemble replaces it by the held-out estimate).
      if (!nll && lik.kind() == "gaussian_learned_sigma") fit.theta[P] = log_sd(mean_squared_residual(fit, fit.rows));
      return fit;
    }
    // The average of the training and held-out rows' mean squared residuals (EnsembleParams::noise_holdout).
    const IndexVec held_out = split_off_held_out(rows, params.noise_holdout, rng);
    MemberFit fit = train_network(rows, rng, j, "training");
    fit.theta[P] = log_sd(0.5 * (mean_squared_residual(fit, fit.rows) + mean_squared_residual(fit, held_out)));
    return fit;
  };
  if (!noise_from_held_out || !params.noise_refit)
    return run_members<MemberFit>(params.members, params.threads, member, member_fit_bytes, member_fit_from_bytes, params.checkpoint,
                                  params.lockstep);

  // EnsembleParams::noise_refit. The held-out rows are common to all twins (stream 2^63 of the seed),
  // so that each is predicted by the twins' whole mixture, spread included.
  const Index N = posterior.num_data();
  IndexVec kept(static_cast<std::size_t>(N));
  std::iota(kept.begin(), kept.end(), Index{0});
  Rng held_out_rng(seed, std::uint64_t{1} << 63);
  const IndexVec held_out = split_off_held_out(kept, params.noise_holdout, held_out_rng);
  // Twin j: member j's rows and initialisation (its stream Rng(seed, j)) without the held-out rows.
  const std::function<MemberFit(Index)> twin = [&](Index j) {
    Rng rng(seed, static_cast<std::uint64_t>(j));
    const IndexVec rows = member_rows(N, params, j, rng);
    IndexVec twin_rows;
    std::set_difference(rows.begin(), rows.end(), held_out.begin(), held_out.end(), std::back_inserter(twin_rows));
    if (twin_rows.empty())
      throw InputError(fmt::format("member {}'s rows are all among the {} held out for the noise estimate: raise --ens-data-fraction or "
                                   "lower --ens-noise-holdout", j, held_out.size()));
    return train_network(twin_rows, rng, j, "noise-twin");
  };
  // Every process trains every twin (no encode / decode: not spread over MPI ranks or --part k/n),
  // because the noise estimate needs all of them; only the members are spread.
  const std::vector<MemberFit> twins = run_members<MemberFit>(params.members, params.threads, twin, {}, {}, {}, params.lockstep);
  if (stop_requested()) return std::vector<MemberFit>(static_cast<std::size_t>(params.members));
  const double variance = held_out_noise_variance(model, twins, gather_columns(posterior.inputs(), held_out),
                                                  gather_columns(posterior.targets(), held_out));
  std::vector<MemberFit> fits =
      run_members<MemberFit>(params.members, params.threads, member, member_fit_bytes, member_fit_from_bytes, params.checkpoint,
                             params.lockstep);
  for (MemberFit& fit : fits)  // floored at the member's own estimate (EnsembleParams::noise_refit says why)
    if (fit.theta.size() > 0) fit.theta[P] = std::max(fit.theta[P], log_sd(variance));
  return fits;
}

bool allows_perturbed_targets(const Likelihood& likelihood) {
  return likelihood.kind() == "gaussian" && likelihood.num_extra() == 0;
}

std::vector<MemberFit> fit_randomized_map(const Posterior& posterior, const RandomizedMapParams& params,
                                          std::uint64_t seed, const Mat& Xv, const Mat& Yv) {
  params.ensemble.validate();
  const auto* gaussian = dynamic_cast<const GaussianPrior*>(&posterior.prior());
  if (!gaussian)
    throw InputError("randomized MAP needs a Gaussian prior (--prior gaussian or fan-in): its anchors are drawn from it");
  const Likelihood& lik = posterior.likelihood();
  if (params.perturb_targets && !allows_perturbed_targets(lik))
    throw InputError("randomized MAP with perturbed targets needs a Gaussian likelihood with fixed noise (--noise)");
  const Index N = posterior.num_data(), P = posterior.model().num_params();
  const std::shared_ptr<const Model> training_model =
      params.ensemble.lockstep ? std::make_shared<LockstepModel>(posterior.model_ptr()) : posterior.model_ptr();
  std::function<MemberFit(Index)> member = [&](Index j) {
    Rng rng(seed, static_cast<std::uint64_t>(j));
    MemberFit fit;
    fit.rows = member_rows(N, params.ensemble, j, rng);
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
    auto member_posterior = std::make_shared<Posterior>(training_model, posterior.likelihood_ptr(), anchored, X, Y);
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
                                member_fit_from_bytes, params.ensemble.checkpoint, params.ensemble.lockstep);
}

}  // namespace uqnn
