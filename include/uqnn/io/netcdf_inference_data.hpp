#pragma once
/// @file ArviZ InferenceData as a NetCDF-4 file: one NetCDF group per InferenceData group
/// ("posterior", "sample_stats", "posterior_predictive", "observed_data", "log_likelihood"), exactly as
/// `arviz.InferenceData.to_netcdf` lays it out, so `arviz.from_netcdf(path)` and
/// `xarray.open_dataset(path, group="posterior")` read it.
///
/// Layout written (what xarray's netCDF4 backend writes for the same Dataset):
/// - every group has its own dimensions; coordinate variables share the dimension's name
///   (`chain`, `draw` as int64 0..n-1; a string coordinate such as `param` as NC_STRING);
/// - data variables in C (row-major) order with dims (chain, draw, ...) in posterior and
///   sample_stats; doubles as NC_DOUBLE, integers as NC_INT64, booleans as NC_BYTE (int8) with
///   attribute dtype = "bool" (xarray's boolean encoding, decoded back to bool on reading);
/// - group attributes (as ArviZ puts on every group) created_at (ISO 8601 UTC),
///   inference_library = "uqnn", inference_library_version, method, plus the caller's attributes;
///   the same attributes on the root group.
/// The file is written atomically: to `<path>.tmp.<pid>`, fsync'ed, renamed over `path`.
/// References: ArviZ `InferenceData.to_netcdf` / `from_netcdf` and its schema
/// (https://python.arviz.org/en/stable/schema/schema.html); xarray `Dataset.to_netcdf`
/// (bool -> int8 + dtype attribute); Stan -> ArviZ sample_stats names (lp__ -> lp,
/// accept_stat__ -> acceptance_rate, stepsize__ -> step_size, treedepth__ -> tree_depth,
/// n_leapfrog__ -> n_steps, divergent__ -> diverging, energy__ -> energy).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "uqnn/core/param_layout.hpp"
#include "uqnn/core/draw_stats.hpp"
#include "uqnn/core/draws.hpp"

namespace uqnn {

/// One data variable (or coordinate) of a group: values in C order over `dims`.
struct NetcdfVariable {
  using Values = std::variant<std::vector<double>, std::vector<std::int64_t>, std::vector<bool>,
                              std::vector<std::string>>;
  std::string name;
  std::vector<std::string> dims;
  std::vector<Index> shape;  ///< one size per dim; product = number of values
  Values values;
  std::map<std::string, std::string> attributes;

  std::size_t size() const;
};

/// One InferenceData group (an xarray Dataset): coordinates, data variables and attributes.
/// Dimensions are taken from the variables; a dim without a coordinate gets none (as in xarray).
struct InferenceGroup {
  std::vector<NetcdfVariable> coordinates;  ///< 1-D, each named after its dim
  std::vector<NetcdfVariable> variables;
  std::map<std::string, std::string> attributes;

  /// The variable or coordinate called `name`, or nullptr.
  const NetcdfVariable* find(const std::string& name) const;
  /// Throws std::invalid_argument for inconsistent shapes, dims of different sizes, bad coords.
  void validate(const std::string& group_name) const;
};

/// The groups ArviZ knows; absent optional groups are not written.
struct InferenceData {
  std::optional<InferenceGroup> posterior;
  std::optional<InferenceGroup> sample_stats;
  std::optional<InferenceGroup> posterior_predictive;
  std::optional<InferenceGroup> observed_data;
  std::optional<InferenceGroup> log_likelihood;  ///< pointwise log p(y_i | theta), (chain, draw, obs)
  std::string method;                       ///< e.g. "sgld", "nuts" (attribute "method")
  std::string created_at;                   ///< empty: the current UTC time, ISO 8601
  std::map<std::string, std::string> attributes;  ///< extra attributes on every group
};

/// `chain_draws[c]` is [draws, dim] for chain c (all chains the same size). With `flat`, one
/// variable "theta" (chain, draw, param) and a string coordinate "param" of layout.names();
/// otherwise one variable per layout block named after it: (chain, draw, rows, cols) for a matrix
/// block with dims "<name>_dim_0", "<name>_dim_1", (chain, draw, size) for a vector block (ArviZ's
/// default dim naming). Coordinates chain = 0..C-1, draw = 0..D-1.
InferenceGroup make_posterior_group(const std::vector<Mat>& chain_draws, const ParamLayout& layout, bool flat);
/// The posterior group's chains of `draws`: their own chains when those are comparable
/// (Draws::comparable_chains: MCMC), else one chain of every draw (ensemble members, an
/// approximation's samples). Every group made from `draws` has these chains; draw d of chain c is
/// draw c * D + d of `draws`.
Index posterior_chains(const Draws& draws);
/// The posterior group of `draws` (flat or by block as above), in posterior_chains(draws) chains.
InferenceGroup make_posterior_group(const Draws& draws, const ParamLayout& layout, bool flat);
/// sample_stats of `draws` (which must have statistics), in posterior_chains(draws) chains.
InferenceGroup make_sample_stats_group(const Draws& draws);
/// Per chain of posterior_chains(draws), [draws, n] with row d of chain c = row_of_draw(c * D + d):
/// a per-draw quantity (pointwise log likelihood, predictive draws) for make_array_group.
std::vector<Mat> rows_by_chain(const Draws& draws, const std::function<Vec(Index draw)>& row_of_draw);

/// sample_stats from per-chain DrawStats (all chains the same length), ArviZ names: lp,
/// acceptance_rate, step_size, tree_depth (int64), n_steps (int64), diverging (bool), energy.
InferenceGroup make_sample_stats_group(const std::vector<std::vector<DrawStats>>& chain_stats);

/// The inverse of make_sample_stats_group: per-chain DrawStats from a sample_stats group (a
/// variable that is absent keeps DrawStats' default). Throws InputError naming `source` when lp is
/// missing or a variable is not (chain, draw).
std::vector<std::vector<DrawStats>> read_sample_stats_group(const InferenceGroup& group, const std::string& source);

/// A group of one variable with dims (chain, draw, <name>_dim_0) from [draws, n] per chain
/// (posterior_predictive) -- or, with chain_draws of size 1 and `no_chain_draw`, a (<name>_dim_0)
/// variable (observed_data).
InferenceGroup make_array_group(const std::string& name, const std::vector<Mat>& chain_draws, bool no_chain_draw = false);

/// Writes `data` to `path` (NetCDF-4) atomically. Throws InputError when the file cannot be
/// written (message names the path) and std::invalid_argument for an inconsistent InferenceData.
void write_inference_data(const std::filesystem::path& path, const InferenceData& data);

/// Reads a file in this layout (any NetCDF-4 file whose groups hold double / int64 / int8 /
/// string variables); the groups present are filled, dtype="bool" int8 variables become bool.
/// Throws InputError naming the path when it cannot be read.
InferenceData read_inference_data(const std::filesystem::path& path);

}  // namespace uqnn
