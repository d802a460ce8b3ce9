#include "uqnn/run/run_chains.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <thread>

#include "uqnn/core/error.hpp"

namespace uqnn {

void RunConfig::validate() const {
  require(num_chains >= 1, "num_chains", ">= 1");
  require(num_threads >= 0, "num_threads", ">= 0 (0 = one per chain up to the hardware threads)");
  require(num_warmup >= 0, "num_warmup", ">= 0");
  require(num_draws >= 0, "num_draws", ">= 0");
  require(thin >= 1, "thin", ">= 1");
}

Index RunResult::min_draws() const {
  if (draws.empty()) return 0;
  Index n = draws.front().rows();
  for (const auto& d : draws) n = std::min(n, d.rows());
  return n;
}

Mat RunResult::coordinate(Index index) const {
  require(index >= 0 && index < dim(), "index", fmt::format("in [0, {})", dim()));
  const Index n = min_draws();
  Mat out(n, num_chains());
  for (int c = 0; c < num_chains(); ++c) out.col(c) = draws[static_cast<std::size_t>(c)].col(index).head(n);
  return out;
}

Mat RunResult::statistic(const std::function<double(const DrawStats&)>& field) const {
  const Index n = min_draws();
  Mat out(n, num_chains());
  for (int c = 0; c < num_chains(); ++c)
    for (Index i = 0; i < n; ++i) out(i, c) = field(stats[static_cast<std::size_t>(c)][static_cast<std::size_t>(i)]);
  return out;
}

Mat RunResult::pooled() const {
  const Index n = min_draws();
  Mat out(n * num_chains(), dim());
  for (int c = 0; c < num_chains(); ++c) out.middleRows(c * n, n) = draws[static_cast<std::size_t>(c)].topRows(n);
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

  // Samplers are made on the calling thread (factories need not be thread safe).
  std::vector<std::unique_ptr<ChainSampler>> samplers(chains);
  for (auto& s : samplers) {
    s = factory();
    require(s != nullptr, "factory", "returning a sampler");
  }

  std::atomic<bool> stop{false};
  std::atomic<int> next_chain{0};
  std::vector<std::exception_ptr> errors(chains);
  bool began = false;

  auto run_one = [&](int c) {
    const auto ci = static_cast<std::size_t>(c);
    Rng rng(config.seed, static_cast<std::uint64_t>(c));
    ChainSampler& sampler = *samplers[ci];
    try {
      Vec x0 = initial_point_of(initial_points, c, num_chains, rng);
      result.initial_points[ci] = x0;
      try {
        sampler.init(x0);
      } catch (const InputError& e) {
        throw InputError(fmt::format("chain {}: {}", c, e.what()));
      }
    } catch (...) {
      errors[ci] = std::current_exception();
      stop = true;
      return;
    }
    Mat& draws = result.draws[ci];
    auto& stats = result.stats[ci];
    draws.resize(kept_per_chain, sampler.position().size());
    stats.reserve(static_cast<std::size_t>(kept_per_chain));
    result.warmup_stats[ci].reserve(static_cast<std::size_t>(config.num_warmup));
    long kept = 0;
    try {
      sampler.begin_warmup(config.num_warmup);
      const long total = config.num_warmup + config.num_draws;
      bool chain_stop = false;
      for (long it = 0; it < total && !chain_stop && !stop.load(std::memory_order_relaxed); ++it) {
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
      }
      result.chain_stopped[ci] = chain_stop;
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
  num_threads = std::min(num_threads, num_chains);
  auto worker = [&] {
    for (int c = next_chain++; c < num_chains; c = next_chain++) run_one(c);
  };
  if (num_threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(static_cast<std::size_t>(num_threads));
    for (int t = 0; t < num_threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  for (const auto& e : errors)
    if (e) {
      if (began)
        for (Observer* o : observers) o->on_end(result);
      std::rethrow_exception(e);
    }
  for (std::size_t c = 0; c < chains; ++c)
    if (result.draws[c].rows() < kept_per_chain && !result.chain_stopped[c]) result.interrupted = true;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (Observer* o : observers) o->on_end(result);
  return result;
}

}  // namespace uqnn
