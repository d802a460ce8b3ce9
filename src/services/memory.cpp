// The memory estimate of a fit (services/memory.hpp). Each item is counted in doubles with the
// number of copies the code keeps; the factors are measured upper bounds, not guesses of the
// allocator's behaviour: they only need to be right within a factor of about 2, since their job is
// to stop a run that would need 10x the machine, not to pack memory tightly.
#include "uqnn/services/memory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "uqnn/core/error.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn {

namespace {

constexpr double kDouble = 8.0;
/// Vectors of length K one chain or member keeps while it runs: position, gradient, momentum,
/// metric and its Welford estimator, Adam's moments, the best point so far (measured: about 6 for
/// an ensemble member; NUTS' trees add their own, detail::nuts_tree_memory).
constexpr double kWorkingVectorsPerChain = 12.0;
/// L-BFGS's own K-vectors: LBFGSpp's default history of m = 6 (s, y) pairs, and its current and
/// previous point and gradient (measured: an ensemble of 2 members at K = 161k grew by 36 MiB
/// under lbfgs, above the 35 MiB the other items give).
constexpr double kLbfgsVectors = 2 * 6 + 4;
/// Copies of the draws at the peak: as the method returns them and as posterior.nc's arrays (the
/// writers read the draws in place; measured in the FitMemoryCli test).
constexpr double kDrawCopies = 2.0;
/// Activations of one pass per row and unit: pre-activations, outputs and back-propagated
/// deltas, with a float32 copy.
constexpr double kActivationCopies = 4.0;
/// Copies of the data: the file's table, the original-units dataset, the standardised training
/// and validation sets, the posterior's own.
constexpr double kDataCopies = 5.0;

}  // namespace

KeptDraws chain_draws(long chains, long draws, long thin, std::string remedy) {
  const long per_chain = (draws + thin - 1) / std::max(1L, thin);
  return {.kept = static_cast<double>(chains) * static_cast<double>(per_chain),
          .producers = static_cast<double>(chains),
          .what = fmt::format("{} chains x {} draws", chains, per_chain),
          .remedy = std::move(remedy)};
}

KeptDraws approximation_draws(long samples, long members) {
  return {.kept = static_cast<double>(samples) * static_cast<double>(members),
          .producers = static_cast<double>(members),
          .what = members > 1 ? fmt::format("{} members x {} samples", members, samples) : fmt::format("{} samples", samples),
          .remedy = "fewer --num-samples"};
}

KeptDraws member_draws(long members) {
  return {.kept = static_cast<double>(members),
          .producers = static_cast<double>(members),
          .what = fmt::format("{} members", members),
          .remedy = "fewer --ens-members"};
}

double MemoryEstimate::total() const {
  double sum = 0.0;
  for (const auto& item : items) sum += item.bytes;
  return sum;
}

const MemoryItem& MemoryEstimate::largest() const {
  require(!items.empty(), "memory estimate", "at least one item");
  return *std::max_element(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
}

double concurrent_producers(const FitConfig& config, double producers) {
  const double hardware = std::max(1u, std::thread::hardware_concurrency());
  return std::min(producers, config.threads > 0 ? static_cast<double>(config.threads) : hardware);
}

MemoryEstimate estimate_fit_memory(const FitConfig& config, const FitSize& size) {
  const double K = static_cast<double>(size.num_params);
  const MethodSpec& method = find_method(config.method);
  const KeptDraws draws = method.kept_draws ? method.kept_draws(config.method_settings) : KeptDraws{};
  const double parallel = concurrent_producers(config, draws.producers);
  double batch_rows = config.training.batch_size > 0
                          ? std::min<double>(static_cast<double>(config.training.batch_size), size.train_rows)
                          : static_cast<double>(size.train_rows);
  if (size.rows_per_pass > 0) batch_rows = std::min<double>(batch_rows, static_cast<double>(size.rows_per_pass));
  const std::string network = "a smaller --arch";

  MemoryEstimate e;
  e.items.push_back({fmt::format("data: {} rows x {} columns", size.all_rows, size.inputs + size.outputs),
                     kDataCopies * kDouble * static_cast<double>(size.all_rows) * static_cast<double>(size.inputs + size.outputs),
                     "fewer rows or --inputs"});
  e.items.push_back({fmt::format("draws kept: {} x {:.0f} parameters", draws.what, K), kDrawCopies * kDouble * draws.kept * K,
                     draws.remedy.empty() ? network : draws.remedy + ", or " + network});
  e.items.push_back({fmt::format("predictions: {} x {} rows x {} outputs", draws.what, size.all_rows, size.outputs),
                     kDouble * draws.kept * static_cast<double>(size.all_rows) * static_cast<double>(size.outputs),
                     draws.remedy.empty() ? "fewer rows" : draws.remedy});
  e.items.push_back({fmt::format("working vectors: {:.0f} {} at a time x {:.0f} parameters", parallel,
                                 parallel > 1 ? "chains or members" : "chain or member", K),
                     kWorkingVectorsPerChain * kDouble * parallel * K, parallel > 1 ? network + ", or fewer --threads" : network});
  e.items.push_back({fmt::format("activations: {:.0f} rows x {} units, {:.0f} at a time", batch_rows, size.layer_widths, parallel),
                     kActivationCopies * kDouble * parallel * batch_rows * static_cast<double>(size.layer_widths),
                     "--batch-size, or " + network});
  // --optimizer lbfgs, and auto's choice for a posterior mode on full batches (map, rms, laplace,
  // swag's pre-training, the chains' MAP starts).
  if (config.training.optimizer.name == "lbfgs" || config.training.optimizer.name == "auto")
    e.items.push_back({fmt::format("L-BFGS history: {:.0f} {} at a time x {:.0f} vectors of {:.0f}", parallel,
                                   parallel > 1 ? "members or chains" : "member or chain", kLbfgsVectors, K),
                       kLbfgsVectors * kDouble * parallel * K, "--optimizer adam, or " + network});
  if (method.memory)
    for (auto& item : method.memory(config, size.num_params)) e.items.push_back(std::move(item));
  return e;
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<double>(pages) * static_cast<double>(page_size) : 0.0;
}

double memory_limit_bytes(double max_memory_gb) {
  if (max_memory_gb > 0) return max_memory_gb * 1073741824.0;
  const double physical = physical_memory_bytes();
  return physical > 0 ? 0.8 * physical : std::numeric_limits<double>::infinity();
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  return fmt::format("{:.3g} {}", bytes, units[u]);
}

void check_fit_memory(const FitConfig& config, const FitSize& size) {
  const MemoryEstimate e = estimate_fit_memory(config, size);
  const double limit = memory_limit_bytes(config.max_memory_gb);
  if (!(e.total() > limit)) return;
  const MemoryItem& big = e.largest();
  throw InputError(fmt::format(
      "the fit would need about {} of memory, above the limit of {} ({}): the largest part is {} ({}). Use {}; "
      "or raise --max-memory-gb if the machine has the memory",
      format_bytes(e.total()), format_bytes(limit),
      config.max_memory_gb > 0 ? fmt::format("--max-memory-gb {}", config.max_memory_gb)
                               : std::string("--max-memory-gb's default, 80% of physical memory"),
      big.what, format_bytes(big.bytes), big.remedy));
}

}  // namespace uqnn
