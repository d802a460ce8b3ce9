#include "uqnn/run/run_chains.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <thread>

#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/state_archive.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/optim/epoch_checkpoint.hpp"
#include "uqnn/run/lockstep.hpp"

namespace uqnn {

std::filesystem::path CheckpointConfig::chain_file(int chain) const {
  return directory / fmt::format("chain-{}.state", chain);
}

void RunConfig::validate() const {
  require(num_chains >= 1, "num_chains", ">= 1");
  require(num_threads >= 0, "num_threads", ">= 0 (0 = one per chain up to the hardware threads)");
  require(num_warmup >= 0, "num_warmup", ">= 0");
  require(num_draws >= 0, "num_draws", ">= 0");
  require(thin >= 1, "thin", ">= 1");
  require(checkpoint.every_iterations >= 0, "checkpoint.every_iterations", ">= 0");
  require(checkpoint.every_seconds >= 0 && std::isfinite(checkpoint.every_seconds), "checkpoint.every_seconds", "finite and >= 0");
}

Index RunResult::min_draws() const {
  Index n = -1;
  for (int c = 0; c < num_chains(); ++c)
    if (in_part(c)) n = n < 0 ? draws[static_cast<std::size_t>(c)].rows() : std::min(n, draws[static_cast<std::size_t>(c)].rows());
  return std::max<Index>(n, 0);
}

namespace {
/// The chains of this part (all of them without --part).
std::vector<int> part_chains(const RunResult& r) {
  std::vector<int> out;
  for (int c = 0; c < r.num_chains(); ++c)
    if (r.in_part(c)) out.push_back(c);
  return out;
}
}  // namespace

Mat RunResult::coordinate(Index index) const {
  require(index >= 0 && index < dim(), "index", fmt::format("in [0, {})", dim()));
  const Index n = min_draws();
  const auto chains = part_chains(*this);
  Mat out(n, static_cast<Index>(chains.size()));
  for (std::size_t j = 0; j < chains.size(); ++j)
    out.col(static_cast<Index>(j)) = draws[static_cast<std::size_t>(chains[j])].col(index).head(n);
  return out;
}

Mat RunResult::statistic(const std::function<double(const DrawStats&)>& field) const {
  const Index n = min_draws();
  const auto chains = part_chains(*this);
  Mat out(n, static_cast<Index>(chains.size()));
  for (std::size_t j = 0; j < chains.size(); ++j)
    for (Index i = 0; i < n; ++i)
      out(i, static_cast<Index>(j)) = field(stats[static_cast<std::size_t>(chains[j])][static_cast<std::size_t>(i)]);
  return out;
}

Mat RunResult::pooled() const {
  const Index n = min_draws();
  const auto chains = part_chains(*this);
  Mat out(n * static_cast<Index>(chains.size()), dim());
  for (std::size_t j = 0; j < chains.size(); ++j)
    out.middleRows(static_cast<Index>(j) * n, n) = draws[static_cast<std::size_t>(chains[j])].topRows(n);
  return out;
}

long RunResult::num_divergent() const {
  long n = 0;
  for (const auto& chain : stats)
    for (const auto& s : chain) n += s.is_divergent ? 1 : 0;
  return n;
}

long RunResult::num_divergent_warmup() const {
  long n = 0;
  for (const auto& chain : warmup_stats)
    for (const auto& s : chain) n += s.is_divergent ? 1 : 0;
  return n;
}

namespace {

void put_stats(ByteWriter& w, const std::vector<DrawStats>& stats) {
  w.put(static_cast<std::int64_t>(stats.size()));
  for (const DrawStats& s : stats) {
    w.put(s.lp), w.put(s.accept_prob), w.put(s.step_size), w.put(static_cast<std::int64_t>(s.tree_depth));
    w.put(static_cast<std::int64_t>(s.n_leapfrog)), w.put(static_cast<std::int64_t>(s.is_divergent)), w.put(s.energy);
  }
}

std::vector<DrawStats> get_stats(ByteReader& r) {
  std::vector<DrawStats> stats(static_cast<std::size_t>(r.get_int()));
  for (DrawStats& s : stats) {
    s.lp = r.get_double(), s.accept_prob = r.get_double(), s.step_size = r.get_double();
    s.tree_depth = static_cast<int>(r.get_int()), s.n_leapfrog = static_cast<int>(r.get_int());
    s.is_divergent = r.get_int() != 0, s.energy = r.get_double();
  }
  return stats;
}

/// Chain c's part of a RunResult as bytes, for the exchange between MPI ranks.
std::string chain_bytes(const RunResult& r, std::size_t c) {
  ByteWriter w;
  const Mat& d = r.draws[c];
  w.put(static_cast<std::int64_t>(d.rows())), w.put(static_cast<std::int64_t>(d.cols()));
  w.put(std::vector<double>(d.data(), d.data() + d.size()));
  put_stats(w, r.stats[c]);
  put_stats(w, r.warmup_stats[c]);
  w.put(r.sampler_descriptions[c]);
  w.put(std::vector<double>(r.initial_points[c].data(), r.initial_points[c].data() + r.initial_points[c].size()));
  w.put(static_cast<std::int64_t>(r.chain_stopped[c]));
  return w.take();
}

void read_chain(const std::string& bytes, RunResult& r, std::size_t c) {
  ByteReader in(bytes);
  const Index rows = in.get_int(), cols = in.get_int();
  const std::vector<double> d = in.get_doubles();
  r.draws[c] = Eigen::Map<const Mat>(d.data(), rows, cols);
  r.stats[c] = get_stats(in);
  r.warmup_stats[c] = get_stats(in);
  r.sampler_descriptions[c] = in.get_string();
  const std::vector<double> x0 = in.get_doubles();
  r.initial_points[c] = Eigen::Map<const Vec>(x0.data(), static_cast<Index>(x0.size()));
  r.chain_stopped[c] = in.get_int() != 0;
}

/// What a chain's checkpoint holds besides its sampler's state.
struct ChainProgress {
  long next_iteration = 0;  ///< iterations done (warmup included)
  Vec initial_point;
  Mat draws;                ///< the kept draws so far
  std::vector<DrawStats> stats, warmup_stats;
  bool chain_stopped = false;
  /// With the chain's Rng, in the one order of the file.
  void archive(StateArchive& a, Rng& rng) {
    a.io(next_iteration), a.io(rng), a.io(initial_point), a.io(draws), a.io(stats), a.io(warmup_stats), a.io(chain_stopped);
  }
};

constexpr const char* kCheckpointFormat = "uqnn chain checkpoint 1";

/// Archives the run settings a checkpoint belongs to; loading checks that they are this run's.
void archive_identity(StateArchive& a, const RunConfig& config, int chain, Index dim, const std::string& file) {
  const std::int64_t expected[6] = {chain, config.num_warmup, config.num_draws, config.thin, dim, static_cast<std::int64_t>(config.seed)};
  std::int64_t values[6];
  std::copy(std::begin(expected), std::end(expected), std::begin(values));
  for (auto& v : values) a.io(v);  // loading overwrites them with the file's
  const char* names[6] = {"chain", "warmup", "draws", "thin", "parameters", "seed"};
  for (int i = 0; i < 6; ++i)
    if (values[i] != expected[i])
      throw InputError(fmt::format("{}: was written with {} {}, but this run has {} {} (resume with the settings of the run "
                                   "that wrote it)",
                                   file, names[i], values[i], names[i], expected[i]));
}

void save_checkpoint(const RunConfig& config, int chain, ChainSampler& sampler, Rng& rng, ChainProgress& progress) {
  const auto file = config.checkpoint.chain_file(chain);
  StateArchive a;
  a.section(kCheckpointFormat);
  archive_identity(a, config, chain, sampler.dim(), file.string());
  progress.archive(a, rng);
  sampler.archive(a);
  atomic_write_text(file, a.take());
}

/// Restores chain `chain` from its checkpoint: the sampler is init()ed at the saved initial point,
/// begins its warmup, then takes the saved state.
ChainProgress load_checkpoint(const RunConfig& config, int chain, ChainSampler& sampler, Rng& rng) {
  const Index dim = sampler.dim();
  const auto file = config.checkpoint.chain_file(chain);
  StateArchive a = StateArchive::read_file(file);
  a.section(kCheckpointFormat);
  archive_identity(a, config, chain, dim, file.string());
  ChainProgress progress;
  progress.archive(a, rng);
  const long total = config.num_warmup + config.num_draws;
  const long kept_expected = std::max(0L, (progress.next_iteration - config.num_warmup + config.thin - 1) / config.thin);
  if (progress.next_iteration < 0 || progress.next_iteration > total || progress.draws.rows() != kept_expected ||
      progress.draws.cols() != dim || static_cast<long>(progress.stats.size()) != kept_expected ||
      static_cast<long>(progress.warmup_stats.size()) != std::min(progress.next_iteration, config.num_warmup) ||
      progress.initial_point.size() != dim)
    throw InputError(fmt::format("{}: its iteration ({}) and its draws ({} x {}) do not agree (a corrupt checkpoint)", file.string(),
                                 progress.next_iteration, progress.draws.rows(), progress.draws.cols()));
  sampler.init(progress.initial_point);
  sampler.begin_warmup(config.num_warmup);
  sampler.archive(a);
  a.expect_end();
  return progress;
}

/// Shows observers that are functions of the kept draws (replays_gathered_chains) the first
/// `count` kept draws of chain c, as if they had been drawn here (chains gathered from other ranks,
/// chains restored from a checkpoint).
void replay_kept_draws(const std::vector<Observer*>& observers, const RunResult& result, const RunConfig& config, int c,
                       Index count) {
  const auto ci = static_cast<std::size_t>(c);
  for (Observer* o : observers)
    if (o->replays_gathered_chains())
      for (Index d = 0; d < count; ++d) {
        const Vec position = result.draws[ci].row(d).transpose();
        IterationEvent event;
        event.chain = c;
        event.iteration = config.num_warmup + d * config.thin;
        event.kept = true;
        event.draw_index = d;
        event.position = &position;
        event.stats = &result.stats[ci][static_cast<std::size_t>(d)];
        o->on_iteration(event);
      }
}

Vec initial_point_of(const InitialPoints& points, int chain, int num_chains, Rng& rng) {
  if (const auto* one = std::get_if<Vec>(&points)) return *one;
  if (const auto* each = std::get_if<std::vector<Vec>>(&points)) {
    require(static_cast<int>(each->size()) == num_chains, "initial_points",
            fmt::format("one vector per chain ({} given, num_chains {})", each->size(), num_chains));
    return (*each)[static_cast<std::size_t>(chain)];
  }
  const auto& fn = std::get<InitialPointFn>(points);
  require(static_cast<bool>(fn), "initial_points", "a non-empty callback");
  return fn(chain, rng);
}

/// One call of run_chains: the chains this process runs, their samplers, and what they drew.
class ChainRun {
 public:
  ChainRun(const RunConfig& config, const SamplerFactory& factory, const InitialPoints& initial_points,
           const std::vector<Observer*>& observers)
      : config_(config), initial_points_(initial_points), observers_(observers), start_(std::chrono::steady_clock::now()) {
    const int num_chains = config.num_chains;
    const auto chains = static_cast<std::size_t>(num_chains);
    kept_per_chain_ = (config.num_draws + config.thin - 1) / config.thin;
    result_.draws.resize(chains);
    result_.stats.resize(chains);
    result_.warmup_stats.resize(chains);
    result_.sampler_descriptions.resize(chains);
    result_.initial_points.resize(chains);
    result_.chain_stopped.assign(chains, false);
    const WorkLayout& layout = work_layout();
    distributed_ = layout.chains->size() > 1 || !layout.part.whole();
    result_.chain_in_part.resize(chains);
    for (int c = 0; c < num_chains; ++c) result_.chain_in_part[static_cast<std::size_t>(c)] = layout.part.owns(c);
    for (int c = 0; c < num_chains; ++c)
      if (!distributed_ || layout.runs_here(c)) here_.push_back(c);
    // Samplers are made on the calling thread (factories need not be thread safe).
    samplers_.resize(chains);
    for (auto& s : samplers_) {
      s = factory();
      require(s != nullptr, "factory", "returning a sampler");
    }
    errors_.resize(chains);
    result_.resumed_at.assign(chains, 0);
    if (config.checkpoint.enabled()) {
      std::error_code error;
      std::filesystem::create_directories(config.checkpoint.directory, error);
      if (error)
        throw InputError(fmt::format("{}: the checkpoint directory cannot be created ({})", config.checkpoint.directory.string(),
                                     error.message()));
    }
  }

  RunResult run() {
    for (Observer* o : observers_) o->on_begin(config_);
    run_on_threads();
    std::exception_ptr first_error;
    for (const auto& e : errors_)
      if (e && !first_error) first_error = e;
    if (distributed_) {
      try {
        gather_other_ranks(first_error);
      } catch (...) {
        for (Observer* o : observers_) o->on_end(result_);
        throw;
      }
    } else if (first_error) {
      for (Observer* o : observers_) o->on_end(result_);
      std::rethrow_exception(first_error);
    }
    note_interruption();
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    for (Observer* o : observers_) o->on_end(result_);
    return std::move(result_);
  }

 private:
  /// Chain c from its start (or its checkpoint) to its end, a stop, or an error (kept in errors_).
  void run_chain(int c) {
    const auto ci = static_cast<std::size_t>(c);
    Rng rng(config_.seed, static_cast<std::uint64_t>(c));
    ChainProgress restored;
    bool begins = true;
    try {
      begins = start_chain(c, rng, restored);
    } catch (...) {
      errors_[ci] = std::current_exception();
      stop_ = true;
      return;
    }
    sample_chain(c, rng, std::move(restored), begins);
  }

  /// Restores chain c from its checkpoint into `restored`, or initialises its sampler at its initial
  /// point; false when the chain must not begin (a start made after a stop).
  bool start_chain(int c, Rng& rng, ChainProgress& restored) {
    const auto ci = static_cast<std::size_t>(c);
    ChainSampler& sampler = *samplers_[ci];
    const CheckpointConfig& checkpoint = config_.checkpoint;
    if (checkpoint.enabled() && checkpoint.resume && std::filesystem::exists(checkpoint.chain_file(c))) {
      restored = load_checkpoint(config_, c, sampler, rng);
      result_.initial_points[ci] = restored.initial_point;
      return true;
    }
    Vec x0 = initial_point_of(initial_points_, c, config_.num_chains, rng);
    result_.initial_points[ci] = x0;
    try {
      sampler.init(x0);
      sampler.begin_warmup(config_.num_warmup);  // (adaptive Metropolis' curvature start may find a bad gradient)
    } catch (const InputError& e) {
      throw InputError(fmt::format("chain {}: {}", c, e.what()));
    }
    // A start made after a stop (a chain's own MAP fit cut short by the signal) is not the one an
    // uninterrupted run makes: such a chain does not begin and keeps no checkpoint, so that a
    // resumed run starts it afresh.
    return !stop_.load(std::memory_order_relaxed) && !stop_requested();
  }

  /// Chain c's transitions from `restored` on: its warmup, its kept draws, the observers' verdicts
  /// and its checkpoints.
  void sample_chain(int c, Rng& rng, ChainProgress restored, bool begins) {
    const auto ci = static_cast<std::size_t>(c);
    ChainSampler& sampler = *samplers_[ci];
    const CheckpointConfig& checkpoint = config_.checkpoint;
    Mat& draws = result_.draws[ci];
    auto& stats = result_.stats[ci];
    draws.resize(kept_per_chain_, sampler.position().size());
    const Index kept_before = restored.draws.rows();
    if (kept_before > 0) draws.topRows(kept_before) = restored.draws;  // (a fresh chain's is 0 x 0)
    long kept = static_cast<long>(kept_before);
    stats = std::move(restored.stats);
    stats.reserve(static_cast<std::size_t>(kept_per_chain_));
    result_.warmup_stats[ci] = std::move(restored.warmup_stats);
    result_.warmup_stats[ci].reserve(static_cast<std::size_t>(config_.num_warmup));
    result_.resumed_at[ci] = restored.next_iteration;
    replay_kept_draws(observers_, result_, config_, c, kept_before);
    const long total = config_.num_warmup + config_.num_draws;
    bool chain_stop = restored.chain_stopped;
    long it = restored.next_iteration;
    auto save = [&] {
      ChainProgress progress;
      progress.next_iteration = it;
      progress.initial_point = result_.initial_points[ci];
      progress.draws = draws.topRows(kept);
      progress.stats = stats;
      progress.warmup_stats = result_.warmup_stats[ci];
      progress.chain_stopped = chain_stop;
      save_checkpoint(config_, c, sampler, rng, progress);
    };
    try {
      SaveInterval interval(checkpoint.every_iterations, checkpoint.every_seconds);
      for (; begins && it < total && !chain_stop && !stop_.load(std::memory_order_relaxed);) {
        const bool warmup = it < config_.num_warmup;
        DrawStats s = sampler.transition(rng, warmup);
        IterationEvent event;
        event.chain = c;
        event.iteration = it;
        event.warmup = warmup;
        if (warmup) {
          result_.warmup_stats[ci].push_back(s);
        } else if ((it - config_.num_warmup) % config_.thin == 0) {
          draws.row(kept) = sampler.position().transpose();
          stats.push_back(s);
          event.kept = true;
          event.draw_index = kept;
          ++kept;
        }
        event.position = &sampler.position();
        event.stats = &s;
        for (Observer* o : observers_) {
          const ObserverAction action = o->on_iteration(event);
          if (action == ObserverAction::Stop) stop_ = true;
          if (action == ObserverAction::StopChain) chain_stop = true;
        }
        ++it;
        if (checkpoint.enabled() && it < total && interval.due(it)) {
          save();
          interval.saved();
        }
      }
      result_.chain_stopped[ci] = chain_stop;
      // A chain that stopped before its end keeps its state, so that a resumed run continues it.
      if (checkpoint.enabled() && begins && (it < total || chain_stop || checkpoint.at_chain_end)) save();
    } catch (...) {
      errors_[ci] = std::current_exception();
      stop_ = true;
    }
    draws.conservativeResize(kept, draws.cols());
    result_.sampler_descriptions[ci] = sampler.describe();
  }

  /// This process's chains on up to num_threads threads: each takes the next chain, or with lockstep
  /// runs a contiguous group of chains as fibers.
  void run_on_threads() {
    int num_threads = config_.num_threads;
    if (num_threads == 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    num_threads = std::min(num_threads, static_cast<int>(here_.size()));
    auto worker = [&](int thread) {
      if (config_.lockstep) {
        // Thread t runs the t-th of num_threads contiguous groups of chains, as fibers in lockstep.
        const std::size_t count = here_.size(), threads = static_cast<std::size_t>(num_threads);
        const std::size_t t = static_cast<std::size_t>(thread);
        if (count == 0) return;
        std::vector<std::function<void()>> group;
        for (std::size_t i = t * count / threads; i < (t + 1) * count / threads; ++i)
          group.push_back([this, c = here_[i]] { run_chain(c); });
        run_in_lockstep(group);  // run_chain keeps its errors in errors_
        return;
      }
      for (std::size_t i = next_chain_++; i < here_.size(); i = next_chain_++) run_chain(here_[i]);
    };
    if (num_threads <= 1) {
      worker(0);
      return;
    }
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(num_threads));
    for (int t = 0; t < num_threads; ++t) pool.emplace_back(worker, t);
    for (auto& t : pool) t.join();
  }

  /// Every rank gets every chain of the part (or every rank rethrows the lowest failing rank's error).
  void gather_other_ranks(const std::exception_ptr& first_error) {
    const int num_chains = config_.num_chains;
    std::vector<std::string> local(static_cast<std::size_t>(num_chains));
    if (!first_error)
      for (const int c : here_) local[static_cast<std::size_t>(c)] = chain_bytes(result_, static_cast<std::size_t>(c));
    const std::vector<std::string> all = exchange_items(num_chains, local, first_error);
    for (int c = 0; c < num_chains; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      if (!result_.chain_in_part[ci] || std::find(here_.begin(), here_.end(), c) != here_.end()) continue;
      read_chain(all[ci], result_, ci);
      // Observers that are functions of the kept draws see the other ranks' chains as if run here.
      replay_kept_draws(observers_, result_, config_, c, result_.draws[ci].rows());
    }
  }

  /// Marks the run interrupted when a chain of the part kept fewer draws than asked without having
  /// been stopped by an observer.
  void note_interruption() {
    const std::size_t chains = result_.draws.size();
    for (std::size_t c = 0; c < chains; ++c)
      if (result_.in_part(static_cast<int>(c)) && result_.draws[c].rows() < kept_per_chain_ && !result_.chain_stopped[c])
        result_.interrupted = true;
    // With fewer threads than chains, chains run in turn: a stop can come before some start. Those
    // are left out (not of this part), so that what the others drew is kept rather than cut to 0.
    if (result_.interrupted && result_.min_draws() == 0)
      for (std::size_t c = 0; c < chains; ++c)
        if (result_.in_part(static_cast<int>(c)) && result_.draws[c].rows() == 0 &&
            std::any_of(result_.draws.begin(), result_.draws.end(), [](const Mat& d) { return d.rows() > 0; }))
          result_.chain_in_part[c] = false;
  }

  const RunConfig& config_;
  const InitialPoints& initial_points_;
  const std::vector<Observer*>& observers_;
  std::chrono::steady_clock::time_point start_;
  long kept_per_chain_ = 0;
  bool distributed_ = false;
  std::vector<int> here_;  ///< the chains this process runs (all of them in one process without --part)
  std::vector<std::unique_ptr<ChainSampler>> samplers_;
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> next_chain_{0};
  std::vector<std::exception_ptr> errors_;
  RunResult result_;
};

}  // namespace

RunResult run_chains(const RunConfig& config, const SamplerFactory& factory, const InitialPoints& initial_points,
                     const std::vector<Observer*>& observers) {
  config.validate();
  require(static_cast<bool>(factory), "factory", "a non-empty SamplerFactory");
  if (const auto* each = std::get_if<std::vector<Vec>>(&initial_points))
    require(static_cast<int>(each->size()) == config.num_chains, "initial_points",
            fmt::format("one vector per chain ({} given, num_chains {})", each->size(), config.num_chains));
  return ChainRun(config, factory, initial_points, observers).run();
}

}  // namespace uqnn
