#pragma once
/// @file Deep ensembles and randomized MAP sampling (seed 001, "Deep Ensemble (NN_Ens)" and
/// "Randomized MAP Sampling (NN_RMS)"), with members trained in parallel threads.
///
/// Reproducibility: member j uses only the stream Rng(seed, j) (its data subset, initialisation,
/// anchor and minibatches, in that order), so results do not depend on the thread count.
/// Unlike QUiNN, every member has its own random initialisation (QUiNN defect 4).
#include <atomic>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "uqnn/approx/approximate_posterior.hpp"
#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/lockstep_tasks.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/optim/trainer.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

/// Checkpoints of independent members (issue 17): run_members writes each member that finished
/// (not one a stop signal cut short) to `directory`/member-<j>.state, atomically; with `resume` a
/// member whose file exists is read instead of trained again. Members are independent streams
/// Rng(seed, j), so a resumed run gives bitwise the members of an uninterrupted one.
///
/// A member's training loops keep their own epoch checkpoints meanwhile (progress(j, phase):
/// `directory`/member-<j>-<phase>.state, every `every_epochs` or `every_seconds` and at a stop
/// signal), so a member cut short goes on from its last epoch; run_members removes them once the
/// member's own file is written.
struct MemberCheckpoint {
  std::filesystem::path directory;  ///< empty: no checkpoints
  bool resume = false;
  Index every_epochs = 0;      ///< the members' epoch checkpoints (0: only at a stop signal)
  double every_seconds = 0.0;  ///< (0: not by time)
  bool enabled() const { return !directory.empty(); }
  /// The epoch checkpoint of member j's training loop `phase` (e.g. "training"); none when disabled.
  EpochCheckpoint progress(Index j, const std::string& phase) const;
};
/// The stored bytes of member j, if its file exists (resume); throws InputError for a file that is
/// not member j's of a run of `count` members.
std::optional<std::string> read_member_checkpoint(const MemberCheckpoint& checkpoint, Index j, Index count);
/// Writes member j's file, then removes the member's epoch checkpoints (progress()), which it supersedes.
void write_member_checkpoint(const MemberCheckpoint& checkpoint, Index j, Index count, const std::string& bytes);

struct EnsembleParams {
  Index members = 10;          ///< J (QUiNN's nens; its app uses 13, its examples 3)
  double data_fraction = 1.0;  ///< delta in (0, 1]: each member trains on floor(delta N) random rows
  Index threads = 0;           ///< worker threads; 0 = std::thread::hardware_concurrency()
  TrainParams training;        ///< optimiser, epochs, batch size of every member
  /// "mse" (seed 001) or "nll": the likelihood's mean negative log-likelihood, extras (learned or
  /// heteroscedastic sigma) trained jointly; seed 003 App. D's "Gaussian NLL" members.
  std::string loss = "mse";
  /// With a learned Gaussian noise sd, the fraction of rows held out to estimate it (0: each member's
  /// training residuals alone, which make an overfitting member's intervals too narrow: 5 x 50 relu
  /// members cover 0.870 of concrete's test points). How it is used, noise_refit says. rms ignores it
  /// (its sigma is a parameter of the posterior it optimises).
  double noise_holdout = 0.1;
  /// true (the default): the fraction noise_holdout of all rows is held out, a twin of each member (its
  /// rows and initialisation) trains without them, and sigma^2 is the maximum-likelihood variance of the
  /// twins' mixture (1/J) sum_j N(y; f_j(x), sigma^2) on the held-out rows: a proper score of the
  /// predictive the ensemble makes, its spread included (held_out_noise_variance). Then the members
  /// train on all their rows and take that sigma, floored at their training residuals' variance
  /// (below sigma^2 + b^2 in expectation: for a linear smoother with d effective parameters on n rows
  /// it is sigma^2 (1 - d/n) + b^2, b^2 the squared bias), because ~10% of a small set estimates it
  /// noisily. The members keep every row: their accuracy and spread are the training residuals'
  /// ensemble's. Twice the training; every process trains every twin. 95% coverage on the small UCI
  /// sets: docs/calibration.md.
  ///
  /// false: each member holds out noise_holdout of its own rows and its sigma^2 is the average of its
  /// mean squared residuals on the rows it trained on and on the held-out rows (the linear smoother's
  /// sigma^2 (1 - d/n) + b^2 and about sigma^2 (1 + d/n) + b^2). Its members lose those rows: on yacht
  /// the test RMSE rose from 0.41 to 0.49, and the wider spread over-covers (0.981).
  bool noise_refit = true;
  /// Train the members that share a thread in lockstep, their gradients one batched pass through the
  /// model's lane kernel (nn/lockstep_model.hpp). A speed setting: a member's fit depends only on its
  /// own stream, not on the thread count or which members share its pass; it differs to rounding from
  /// a fit without lockstep. It pays for small networks (docs/performance.md).
  bool lockstep = false;
  /// CV+ and jackknife+ (services/conformal.hpp): the fold in [0, members) of each training row;
  /// member j never trains on the rows of fold j (nor does its noise twin), so its predictions there
  /// are out of fold. Empty: every member may take every row. The members then differ from an
  /// ensemble trained on all rows: each lacks its fold.
  IndexVec fold_of_row;
  MemberCheckpoint checkpoint;
  void validate() const;
};

/// Randomized MAP (anchored ensembles, Pearce et al. 2020).
struct RandomizedMapParams {
  EnsembleParams ensemble;
  /// Seed 001 randomises only the anchor w0 ~ N(prior mean, prior sd^2). With this flag each member
  /// also perturbs its targets, y_i + sigma eps_i ("randomize-then-optimize"), which makes the
  /// members exact posterior draws for a linear-Gaussian model; anchors alone give the right mean
  /// but the covariance A^-1 Sigma_prior^-1 A^-1 (smaller than A^-1). Needs a fixed-sigma Gaussian.
  bool perturb_targets = false;
};

/// Whether a likelihood allows perturbed targets (randomize-then-optimize): a Gaussian with a fixed
/// noise sd, whose y + sigma eps is a draw of the model's own noise.
bool allows_perturbed_targets(const Likelihood& likelihood);

/// One trained member: its parameters (network parameters followed by likelihood extras), the
/// rows of the training data it saw, and its training curve.
struct MemberFit {
  Vec theta;
  IndexVec rows;
  TrainHistory history;
  ConvergenceReport convergence;
  Vec anchor;  ///< randomized MAP only
};

/// Runs fn(j) for j = 0..count-1 on up to `threads` std::threads (0 = hardware concurrency); the
/// result vector is in j order whatever the scheduling. The first exception (by j) is rethrown.
///
/// With `encode` / `decode` (a member's result as bytes and back) the members are spread over the
/// MPI ranks and parts of work_layout() as run_chains spreads chains (core/communicator.hpp): member
/// j runs on one rank, every rank returns every member of the part, and members of other parts
/// (--part k/n) stay default-constructed. Without them every process runs every member. After a stop
/// signal (core/stop_signal.hpp) members not yet begun are not run and stay default-constructed.
///
/// With `lockstep`, each thread runs a contiguous group of the members as tasks in lockstep
/// (core/lockstep_tasks.hpp): fn's requests to a LockstepModel are then evaluated together.
template <typename T>
std::vector<T> run_members(Index count, Index threads, const std::function<T(Index)>& fn,
                           const std::function<std::string(const T&)>& encode = {},
                           const std::function<T(const std::string&)>& decode = {},
                           const MemberCheckpoint& checkpoint = {}, bool lockstep = false) {
  const bool checkpoints = checkpoint.enabled() && encode && decode;
  if (checkpoints) std::filesystem::create_directories(checkpoint.directory);
  const WorkLayout& layout = work_layout();
  const bool distributed = encode && decode && (layout.chains->size() > 1 || !layout.part.whole());
  std::vector<Index> here;
  for (Index j = 0; j < count; ++j)
    if (!distributed || layout.runs_here(j)) here.push_back(j);
  std::vector<T> results(static_cast<std::size_t>(count));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
  Index workers = threads > 0 ? threads : static_cast<Index>(std::max(1u, std::thread::hardware_concurrency()));
  workers = std::max<Index>(1, std::min(workers, static_cast<Index>(here.size())));
  // Member here[i], its checkpoint read or written; its exception kept in `errors`.
  const auto run_one = [&](std::size_t i) {
    const Index j = here[i];
    if (stop_requested()) return;  // stopped by a signal: members not begun stay default-constructed
    try {
      if (checkpoints && checkpoint.resume)
        if (const auto stored = read_member_checkpoint(checkpoint, j, count)) {
          try {
            results[static_cast<std::size_t>(j)] = decode(*stored);
          } catch (const std::exception& e) {
            throw InputError(checkpoint.directory.string() + ": member " + std::to_string(j) +
                             "'s checkpoint cannot be read (" + e.what() + ")");
          }
          return;
        }
      results[static_cast<std::size_t>(j)] = fn(j);
      // A member a stop signal cut short is not finished: a resumed run trains it again.
      if (checkpoints && !stop_requested()) write_member_checkpoint(checkpoint, j, count, encode(results[static_cast<std::size_t>(j)]));
    } catch (...) {
      errors[static_cast<std::size_t>(j)] = std::current_exception();
    }
  };
  std::atomic<std::size_t> next{0};
  const auto work = [&](Index worker) {
    if (!lockstep) {
      for (std::size_t i = next++; i < here.size(); i = next++) run_one(i);
      return;
    }
    // Worker w trains the w-th of `workers` contiguous groups of members, as fibers in lockstep.
    const std::size_t n = here.size(), w = static_cast<std::size_t>(worker), all = static_cast<std::size_t>(workers);
    std::vector<std::function<void()>> group;
    for (std::size_t i = w * n / all; i < (w + 1) * n / all; ++i) group.push_back([&run_one, i] { run_one(i); });
    run_in_lockstep(group);  // run_one keeps its errors in `errors`
  };
  if (workers == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (Index w = 0; w < workers; ++w) pool.emplace_back(work, w);
    for (auto& t : pool) t.join();
  }
  std::exception_ptr first;
  for (const auto& e : errors)
    if (e && !first) first = e;
  if (!distributed) {
    if (first) std::rethrow_exception(first);
    return results;
  }
  std::vector<std::string> local(static_cast<std::size_t>(count));
  if (!first)
    for (const Index j : here) local[static_cast<std::size_t>(j)] = encode(results[static_cast<std::size_t>(j)]);
  const std::vector<std::string> all = exchange_items(count, local, first);
  for (Index j = 0; j < count; ++j)
    if (layout.part.owns(j) && !layout.runs_here(j)) results[static_cast<std::size_t>(j)] = decode(all[static_cast<std::size_t>(j)]);
  return results;
}

/// A trained member as bytes (theta, rows, history, anchor) for run_members' exchange, and back.
std::string member_fit_bytes(const MemberFit& fit);
MemberFit member_fit_from_bytes(const std::string& bytes);

/// floor(delta N) distinct rows drawn from `rng` (all rows, in order, when delta = 1).
IndexVec member_subset(Index num_data, double data_fraction, Rng& rng);
/// Member j's rows: member_subset's, less those of fold j when params.fold_of_row is given.
IndexVec member_rows(Index num_data, const EnsembleParams& params, Index j, Rng& rng);
/// Moves max(1, floor(fraction n)) random rows of `rows` (n of them) out and returns them, both parts
/// sorted; throws InputError when none would be left.
IndexVec split_off_held_out(IndexVec& rows, double fraction, Rng& rng);
/// The maximum-likelihood common variance sigma^2 of the mixture (1/J) sum_j N(y_i; f_j(x_i), sigma^2 I)
/// of the twins' networks on the held-out columns (inputs, targets), by EM; per output
/// (EnsembleParams::noise_refit).
double held_out_noise_variance(const Model& model, const std::vector<MemberFit>& twins, const Mat& inputs, const Mat& targets);

/// Deep ensemble: with loss "nll" member j minimises -(1/|D_j|) sum log p(y_i | f(x_i; w_j)) over
/// network parameters and likelihood extras (any likelihood; selection by validation mean NLL).
/// With loss "mse", member j minimises (1/|D_j|) sum_{i in D_j} ||y_i - f(x_i; w_j)||^2 (seed 001)
/// from its own initialisation. `posterior` supplies model and (standardised) training data; the
/// returned theta carry the likelihood's extras as well: for a learned-sigma Gaussian the
/// maximum-likelihood log sigma of the member's fit (log of its root mean squared residual),
/// otherwise the likelihood's initial extras. Selection: when validation data are given (columns
/// > 0), the best-validation-MSE snapshot; otherwise the best training loss.
std::vector<MemberFit> fit_deep_ensemble(const Posterior& posterior, const EnsembleParams& params, std::uint64_t seed,
                                         const Mat& validation_inputs = Mat(), const Mat& validation_targets = Mat());

/// Randomized MAP: member j minimises seed 001's anchored loss
///   -sum_{i in D_j} log p(y_i | w) + (|D_j| / N) (1 / 2) sum_k (w_k - w0_k)^2 / sd_k^2
/// (for a fixed-sigma Gaussian the data term is (1/2 sigma^2) sum ||y_i - f||^2 plus a constant)
/// with its own anchor w0 ~ N(prior mean, diag(sd^2)). The posterior's prior must be a
/// GaussianPrior (isotropic sigma_prior in seed 001; per-layer / fan-in sds are allowed).
/// Selection as fit_deep_ensemble, with the validation mean negative log-likelihood.
std::vector<MemberFit> fit_randomized_map(const Posterior& posterior, const RandomizedMapParams& params,
                                          std::uint64_t seed, const Mat& validation_inputs = Mat(),
                                          const Mat& validation_targets = Mat());

}  // namespace uqnn
