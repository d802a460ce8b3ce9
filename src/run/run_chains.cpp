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

}  // namespace

RunResult run_chains(const RunConfig& config, const SamplerFactory& factory, const InitialPoints& initial_points,
                     const std::vector<Observer*>& observers) {
  config.validate();
  require(static_cast<bool>(factory), "factory", "a non-empty SamplerFactory");
  if (const auto* each = std::get_if<std::vector<Vec>>(&initial_points))
    require(static_cast<int>(each->size()) == config.num_chains, "initial_points",
            fmt::format("one vector per chain ({} given, num_chains {})", each->size(), config.num_chains));
  const auto start = std::chrono::steady_clock::now();
  const int num_chains = config.num_chains;
  const auto chains = static_cast<std::size_t>(num_chains);
  const long kept_per_chain = (config.num_draws + config.thin - 1) / config.thin;

  RunResult result;
  result.draws.resize(chains);
  result.stats.resize(chains);
  result.warmup_stats.resize(chains);
  result.sampler_descriptions.resize(chains);
  result.initial_points.resize(chains);
  result.chain_stopped.assign(chains, false);
  const WorkLayout& layout = work_layout();
  const bool distributed = layout.chains->size() > 1 || !layout.part.whole();
  result.chain_in_part.resize(chains);
  for (int c = 0; c < num_chains; ++c) result.chain_in_part[static_cast<std::size_t>(c)] = layout.part.owns(c);
  // The chains this process runs (all of them in one process without --part).
  std::vector<int> here;
  for (int c = 0; c < num_chains; ++c)
    if (!distributed || layout.runs_here(c)) here.push_back(c);

  // Samplers are made on the calling thread (factories need not be thread safe).
  std::vector<std::unique_ptr<ChainSampler>> samplers(chains);
  for (auto& s : samplers) {
    s = factory();
    require(s != nullptr, "factory", "returning a sampler");
  }

  std::atomic<bool> stop{false};
  std::atomic<std::size_t> next_chain{0};
  std::vector<std::exception_ptr> errors(chains);
  bool began = false;

  result.resumed_at.assign(chains, 0);
  const CheckpointConfig& checkpoint = config.checkpoint;
  if (checkpoint.enabled()) {
    std::error_code error;
    std::filesystem::create_directories(checkpoint.directory, error);
    if (error)
      throw InputError(fmt::format("{}: the checkpoint directory cannot be created ({})", checkpoint.directory.string(), error.message()));
  }

  auto run_one = [&](int c) {
    const auto ci = static_cast<std::size_t>(c);
    Rng rng(config.seed, static_cast<std::uint64_t>(c));
    ChainSampler& sampler = *samplers[ci];
    ChainProgress restored;
    bool begins = true;
    try {
      if (checkpoint.enabled() && checkpoint.resume && std::filesystem::exists(checkpoint.chain_file(c))) {
        restored = load_checkpoint(config, c, sampler, rng);
        result.initial_points[ci] = restored.initial_point;
      } else {
        Vec x0 = initial_point_of(initial_points, c, num_chains, rng);
        result.initial_points[ci] = x0;
        try {
          sampler.init(x0);
          sampler.begin_warmup(config.num_warmup);  // (adaptive Metropolis' curvature start may find a bad gradient)
        } catch (const InputError& e) {
          throw InputError(fmt::format("chain {}: {}", c, e.what()));
        }
        // A start made after a stop (a chain's own MAP fit cut short by the signal) is not the one an
        // uninterrupted run makes: such a chain does not begin and keeps no checkpoint, so that a
        // resumed run starts it afresh.
        begins = !stop.load(std::memory_order_relaxed) && !stop_requested();
      }
    } catch (...) {
      errors[ci] = std::current_exception();
      stop = true;
      return;
    }
    Mat& draws = result.draws[ci];
    auto& stats = result.stats[ci];
    draws.resize(kept_per_chain, sampler.position().size());
    const Index kept_before = restored.draws.rows();
    if (kept_before > 0) draws.topRows(kept_before) = restored.draws;  // (a fresh chain's is 0 x 0)
    long kept = static_cast<long>(kept_before);
    stats = std::move(restored.stats);
    stats.reserve(static_cast<std::size_t>(kept_per_chain));
    result.warmup_stats[ci] = std::move(restored.warmup_stats);
    result.warmup_stats[ci].reserve(static_cast<std::size_t>(config.num_warmup));
    result.resumed_at[ci] = restored.next_iteration;
    replay_kept_draws(observers, result, config, c, kept_before);
    const long total = config.num_warmup + config.num_draws;
    bool chain_stop = restored.chain_stopped;
    long it = restored.next_iteration;
    auto save = [&] {
      ChainProgress progress;
      progress.next_iteration = it;
      progress.initial_point = result.initial_points[ci];
      progress.draws = draws.topRows(kept);
      progress.stats = stats;
      progress.warmup_stats = result.warmup_stats[ci];
      progress.chain_stopped = chain_stop;
      save_checkpoint(config, c, sampler, rng, progress);
    };
    try {
      SaveInterval interval(checkpoint.every_iterations, checkpoint.every_seconds);
      for (; begins && it < total && !chain_stop && !stop.load(std::memory_order_relaxed);) {
        const bool warmup = it < config.num_warmup;
        DrawStats s = sampler.transition(rng, warmup);
        IterationEvent event;
        event.chain = c;
        event.iteration = it;
        event.warmup = warmup;
        if (warmup) {
          result.warmup_stats[ci].push_back(s);
        } else if ((it - config.num_warmup) % config.thin == 0) {
          draws.row(kept) = sampler.position().transpose();
          stats.push_back(s);
          event.kept = true;
          event.draw_index = kept;
          ++kept;
        }
        event.position = &sampler.position();
        event.stats = &s;
        for (Observer* o : observers) {
          const ObserverAction action = o->on_iteration(event);
          if (action == ObserverAction::Stop) stop = true;
          if (action == ObserverAction::StopChain) chain_stop = true;
        }
        ++it;
        if (checkpoint.enabled() && it < total && interval.due(it)) {
          save();
          interval.saved();
        }
      }
      result.chain_stopped[ci] = chain_stop;
      // A chain that stopped before its end keeps its state, so that a resumed run continues it.
      if (checkpoint.enabled() && begins && (it < total || chain_stop || checkpoint.at_chain_end)) save();
    } catch (...) {
      errors[ci] = std::current_exception();
      stop = true;
    }
    draws.conservativeResize(kept, draws.cols());
    result.sampler_descriptions[ci] = sampler.describe();
  };

  for (Observer* o : observers) o->on_begin(config);
  began = true;
  int num_threads = config.num_threads;
  if (num_threads == 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads = std::min(num_threads, static_cast<int>(here.size()));
  auto worker = [&](int thread) {
    if (config.lockstep) {
      // Thread t runs the t-th of num_threads contiguous groups of chains, as fibers in lockstep.
      const std::size_t count = here.size(), threads = static_cast<std::size_t>(num_threads);
      const std::size_t t = static_cast<std::size_t>(thread);
      if (count == 0) return;
      std::vector<std::function<void()>> group;
      for (std::size_t i = t * count / threads; i < (t + 1) * count / threads; ++i) group.push_back([&run_one, c = here[i]] { run_one(c); });
      run_in_lockstep(group);  // run_one keeps its errors in `errors`
      return;
    }
    for (std::size_t i = next_chain++; i < here.size(); i = next_chain++) run_one(here[i]);
  };
  if (num_threads <= 1) {
    worker(0);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(num_threads));
    for (int t = 0; t < num_threads; ++t) pool.emplace_back(worker, t);
    for (auto& t : pool) t.join();
  }
  std::exception_ptr first_error;
  for (const auto& e : errors)
    if (e && !first_error) first_error = e;
  if (distributed) {
    // Every rank gets every chain of the part (or every rank rethrows the lowest failing rank's error).
    std::vector<std::string> local(chains);
    if (!first_error)
      for (const int c : here) local[static_cast<std::size_t>(c)] = chain_bytes(result, static_cast<std::size_t>(c));
    std::vector<std::string> all;
    try {
      all = exchange_items(num_chains, local, first_error);
    } catch (...) {
      if (began)
        for (Observer* o : observers) o->on_end(result);
      throw;
    }
    for (int c = 0; c < num_chains; ++c) {
      const auto ci = static_cast<std::size_t>(c);
      if (!result.chain_in_part[ci] || std::find(here.begin(), here.end(), c) != here.end()) continue;
      read_chain(all[ci], result, ci);
      // Observers that are functions of the kept draws see the other ranks' chains as if run here.
      replay_kept_draws(observers, result, config, c, result.draws[ci].rows());
    }
  } else if (first_error) {
    if (began)
      for (Observer* o : observers) o->on_end(result);
    std::rethrow_exception(first_error);
  }
  for (std::size_t c = 0; c < chains; ++c)
    if (result.in_part(static_cast<int>(c)) && result.draws[c].rows() < kept_per_chain && !result.chain_stopped[c])
      result.interrupted = true;
  // With fewer threads than chains, chains run in turn: a stop can come before some start. Those
  // are left out (not of this part), so that what the others drew is kept rather than cut to 0.
  if (result.interrupted && result.min_draws() == 0)
    for (std::size_t c = 0; c < chains; ++c)
      if (result.in_part(static_cast<int>(c)) && result.draws[c].rows() == 0 &&
          std::any_of(result.draws.begin(), result.draws.end(), [](const Mat& d) { return d.rows() > 0; }))
        result.chain_in_part[c] = false;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (Observer* o : observers) o->on_end(result);
  return result;
}

}  // namespace uqnn
