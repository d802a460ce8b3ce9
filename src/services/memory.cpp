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
/// Copies of the draws at the peak: as the method returns them and as posterior.nc's arrays (the
/// writers read the draws in place; measured in the FitMemoryCli test).
constexpr double kDrawCopies = 2.0;
/// Activations of one pass per row and unit: pre-activations, outputs and back-propagated
/// deltas, with a float32 copy.
constexpr double kActivationCopies = 4.0;
/// Copies of the data: the file's table, the original-units dataset, the standardised training
/// and validation sets, the posterior's own.
constexpr double kDataCopies = 5.0;

long setting(const nlohmann::json& settings, const char* name, long fallback) {
  const auto it = settings.find(name);
  return it != settings.end() && it->is_number() ? it->get<long>() : fallback;
}

/// Draws a fit keeps, and the chains / members that produce them.
struct DrawCount {
  double kept = 1;
  double producers = 1;
  std::string what, remedy;
};

DrawCount draws_kept(const FitConfig& config) {
  const auto& s = config.method_settings;
  DrawCount c;
  if (s.contains("draws")) {  // MCMC: chains (dei-nuts, mile: members, 12 unless given) x draws / thin
    const long chains = setting(s, "chains", setting(s, "members", 12));
    const long per_chain = (setting(s, "draws", 1) + setting(s, "thin", 1) - 1) / std::max(1L, setting(s, "thin", 1));
    c.kept = static_cast<double>(chains) * static_cast<double>(per_chain);
    c.producers = static_cast<double>(chains);
    c.what = fmt::format("{} chains x {} draws", chains, per_chain);
    c.remedy = s.contains("thin") ? "fewer --draws or --chains, or --thin" : "fewer --draws or --members";
  } else if (s.contains("num_samples")) {  // approximations: samples (x SWAG's members)
    const long members = setting(s, "swag_members", 1);
    c.kept = static_cast<double>(setting(s, "num_samples", 1)) * static_cast<double>(members);
    c.producers = static_cast<double>(members);
    c.what = members > 1 ? fmt::format("{} members x {} samples", members, setting(s, "num_samples", 1))
                         : fmt::format("{} samples", setting(s, "num_samples", 1));
    c.remedy = "fewer --num-samples";
  } else if (s.contains("ens_members")) {
    c.kept = c.producers = static_cast<double>(setting(s, "ens_members", 1));
    c.what = fmt::format("{} members", setting(s, "ens_members", 1));
    c.remedy = "fewer --ens-members";
  } else {
    c.what = "1 point estimate";
  }
  return c;
}

}  // namespace

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
  const DrawCount draws = draws_kept(config);
  const double parallel = concurrent_producers(config, draws.producers);
  const double batch_rows = config.training.batch_size > 0
                                ? std::min<double>(static_cast<double>(config.training.batch_size), size.train_rows)
                                : static_cast<double>(size.train_rows);
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
  const MethodSpec& method = find_method(config.method);
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
