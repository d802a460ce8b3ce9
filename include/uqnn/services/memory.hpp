#pragma once
/// @file What a fit will hold in memory at its peak, estimated from its configuration before
/// anything of the model's size is allocated, so that `--arch 100000,100000` or a dense proposal
/// over a million weights stops at once with a message saying what to change, instead of ending in
/// std::bad_alloc (or the kernel's OOM killer) after the data were read and the run has started.
///
/// The estimate is an upper bound of the large items (those that grow with the parameter count K,
/// the rows, or the draws kept) with small constant factors; everything else (code, small
/// buffers) is below a few tens of MB and left out.
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"
#include "uqnn/services/fit.hpp"

namespace uqnn {

struct MemoryItem {
  std::string what;    ///< e.g. "draws kept: 4 chains x 1000 draws x 1201 parameters"
  double bytes = 0.0;
  std::string remedy;  ///< which options make it smaller, as the user types them
};

struct MemoryEstimate {
  std::vector<MemoryItem> items;
  double total() const;
  const MemoryItem& largest() const;
};

/// The draws a fit keeps and the chains or members that produce them (MethodSpec::kept_draws).
struct KeptDraws {
  double kept = 1;
  double producers = 1;
  std::string what = "1 point estimate";
  std::string remedy;  ///< which options keep fewer, as the user types them
};
/// chains x ceil(draws / thin).
KeptDraws chain_draws(long chains, long draws, long thin, std::string remedy);
/// samples of an approximation, drawn from each of `members` (SWAG's) approximations.
KeptDraws approximation_draws(long samples, long members = 1);
/// One point per member (ens, rms).
KeptDraws member_draws(long members);

/// The sizes a fit's memory depends on (known once the data's header and the model are known).
struct FitSize {
  Index num_params = 0;     ///< K, the network's weights and biases (plus likelihood extras)
  Index train_rows = 0;
  Index all_rows = 0;
  Index inputs = 0;
  Index outputs = 0;        ///< the network's outputs
  Index layer_widths = 0;   ///< sum of the widths of every layer (inputs and outputs included)
  /// The most examples whose activations a model keeps at once (a CNN evaluates larger batches in
  /// chunks of this many); 0: no limit, a batch's activations are all kept.
  Index rows_per_pass = 0;
};

/// The large items of a fit of `config` at `size`: data, the draws kept (and their copy in the
/// output files), the predictions, each chain's / member's working vectors, the activations of a
/// batch, and the method's own structures (MethodSpec::memory: a Laplace covariance, a dense
/// Metropolis proposal, SWAG's deviation columns).
MemoryEstimate estimate_fit_memory(const FitConfig& config, const FitSize& size);

/// How many of `producers` chains or members run at once: at most --threads (0: the machine's cores).
double concurrent_producers(const FitConfig& config, double producers);

/// Installed physical memory in bytes (sysconf), or 0 when unknown.
double physical_memory_bytes();

/// The limit of `--max-memory-gb` in bytes: the given GiB, or 80% of physical memory when 0.
double memory_limit_bytes(double max_memory_gb);

/// Throws InputError when the estimate exceeds memory_limit_bytes(config.max_memory_gb): the
/// message gives the estimate, its largest item, the limit and what to change.
void check_fit_memory(const FitConfig& config, const FitSize& size);

/// "1.5 GiB", "320 TiB": bytes in binary units with 3 significant digits.
std::string format_bytes(double bytes);

}  // namespace uqnn
