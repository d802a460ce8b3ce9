#include "uqnn/io/netcdf_inference_data.hpp"

#include <fmt/format.h>

#include <chrono>
#include <iterator>
#include <ctime>
#include <netcdf>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"

namespace uqnn {
namespace {

// The library version (project(uqnn VERSION ...) in CMakeLists.txt).
constexpr const char* kUqnnVersion = "0.1.0";

constexpr const char* kGroupNames[] = {"posterior", "sample_stats", "posterior_predictive", "observed_data", "log_likelihood"};
constexpr std::size_t kNumGroups = std::size(kGroupNames);

std::string utc_now_iso8601() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}Z", buffer, micros);  // ArviZ: datetime.utcnow().isoformat() (+ "Z")
}

std::size_t product(const std::vector<Index>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1},
                         [](std::size_t a, Index b) { return a * static_cast<std::size_t>(b); });
}

NetcdfVariable int_coordinate(const std::string& name, Index n) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(n));
  std::iota(values.begin(), values.end(), std::int64_t{0});
  return {name, {name}, {n}, values, {}};
}

void write_variable(netCDF::NcGroup& group, const NetcdfVariable& v, std::map<std::string, netCDF::NcDim>& dims) {
  std::vector<netCDF::NcDim> nc_dims;
  for (std::size_t i = 0; i < v.dims.size(); ++i) {
    auto it = dims.find(v.dims[i]);
    if (it == dims.end())
      it = dims.emplace(v.dims[i], group.addDim(v.dims[i], static_cast<std::size_t>(v.shape[i]))).first;
    nc_dims.push_back(it->second);
  }
  netCDF::NcVar var;
  std::visit(
      [&](const auto& values) {
        using T = std::decay_t<decltype(values)>;
        if constexpr (std::is_same_v<T, std::vector<double>>) {
          var = group.addVar(v.name, netCDF::ncDouble, nc_dims);
          var.putAtt("_FillValue", netCDF::ncDouble, std::numeric_limits<double>::quiet_NaN());  // as xarray
          if (!values.empty()) var.putVar(values.data());
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          var = group.addVar(v.name, netCDF::ncInt64, nc_dims);
          if (!values.empty()) var.putVar(reinterpret_cast<const long long*>(values.data()));
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          // xarray's encoding of bool: int8 with attribute dtype = "bool".
          var = group.addVar(v.name, netCDF::ncByte, nc_dims);
          std::vector<signed char> bytes(values.begin(), values.end());
          if (!bytes.empty()) var.putVar(bytes.data());
          var.putAtt("dtype", "bool");
        } else {
          var = group.addVar(v.name, netCDF::ncString, nc_dims);
          std::vector<const char*> pointers;
          for (const auto& s : values) pointers.push_back(s.c_str());
          if (!pointers.empty()) var.putVar(pointers.data());
        }
      },
      v.values);
  for (const auto& [key, value] : v.attributes) var.putAtt(key, value);
}

void write_group(netCDF::NcGroup group, const InferenceGroup& g, const std::map<std::string, std::string>& attributes) {
  std::map<std::string, netCDF::NcDim> dims;
  for (const auto& c : g.coordinates) write_variable(group, c, dims);
  for (const auto& v : g.variables) write_variable(group, v, dims);
  for (const auto& [key, value] : attributes) group.putAtt(key, value);
  for (const auto& [key, value] : g.attributes) group.putAtt(key, value);
}

NetcdfVariable read_variable(const netCDF::NcVar& var) {
  NetcdfVariable v;
  v.name = var.getName();
  for (const auto& d : var.getDims()) {
    v.dims.push_back(d.getName());
    v.shape.push_back(static_cast<Index>(d.getSize()));
  }
  const std::size_t n = product(v.shape);
  for (const auto& [key, att] : var.getAtts()) {
    if (att.getType() == netCDF::ncChar) {
      std::string value;
      att.getValues(value);
      v.attributes[key] = value;
    }
  }
  const auto type = var.getType();
  if (type == netCDF::ncDouble || type == netCDF::ncFloat) {
    std::vector<double> values(n);
    if (n) var.getVar(values.data());
    v.values = std::move(values);
  } else if (type == netCDF::ncInt64 || type == netCDF::ncInt || type == netCDF::ncShort) {
    std::vector<long long> values(n);
    if (n) var.getVar(values.data());
    v.values = std::vector<std::int64_t>(values.begin(), values.end());
  } else if (type == netCDF::ncByte && v.attributes.count("dtype") && v.attributes["dtype"] == "bool") {
    std::vector<signed char> values(n);
    if (n) var.getVar(values.data());
    std::vector<bool> b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = values[i] != 0;
    v.values = std::move(b);
    v.attributes.erase("dtype");
  } else if (type == netCDF::ncByte) {
    std::vector<signed char> values(n);
    if (n) var.getVar(values.data());
    v.values = std::vector<std::int64_t>(values.begin(), values.end());
  } else if (type == netCDF::ncString) {
    std::vector<char*> pointers(n, nullptr);
    if (n) var.getVar(pointers.data());
    std::vector<std::string> s(n);
    for (std::size_t i = 0; i < n; ++i) s[i] = pointers[i] ? pointers[i] : "";
    if (n) nc_free_string(n, pointers.data());
    v.values = std::move(s);
  } else {
    throw std::runtime_error(fmt::format("variable '{}' has an unsupported NetCDF type", v.name));
  }
  return v;
}

}  // namespace

std::size_t NetcdfVariable::size() const {
  return std::visit([](const auto& values) { return values.size(); }, values);
}

const NetcdfVariable* InferenceGroup::find(const std::string& name) const {
  for (const auto& c : coordinates)
    if (c.name == name) return &c;
  for (const auto& v : variables)
    if (v.name == name) return &v;
  return nullptr;
}

void InferenceGroup::validate(const std::string& group_name) const {
  std::map<std::string, Index> dims;
  std::map<std::string, int> names;
  auto check = [&](const NetcdfVariable& v, bool coordinate) {
    const std::string where = fmt::format("inference data group '{}', variable '{}'", group_name, v.name);
    if (v.name.empty()) throw std::invalid_argument(fmt::format("inference data group '{}': empty variable name", group_name));
    if (++names[v.name] > 1) throw std::invalid_argument(where + ": name used twice");
    if (v.dims.size() != v.shape.size()) throw std::invalid_argument(where + ": dims and shape differ in length");
    if (coordinate && (v.dims.size() != 1 || v.dims[0] != v.name))
      throw std::invalid_argument(where + ": a coordinate must be 1-D over the dim of its own name");
    for (std::size_t i = 0; i < v.dims.size(); ++i) {
      if (v.shape[i] < 0) throw std::invalid_argument(where + ": negative dimension size");
      const auto [it, inserted] = dims.emplace(v.dims[i], v.shape[i]);
      if (!inserted && it->second != v.shape[i])
        throw std::invalid_argument(fmt::format("{}: dim '{}' has size {} here and {} elsewhere", where, v.dims[i],
                                                v.shape[i], it->second));
    }
    if (v.size() != product(v.shape))
      throw std::invalid_argument(fmt::format("{}: {} values for shape of {} entries", where, v.size(), product(v.shape)));
  };
  for (const auto& c : coordinates) check(c, true);
  for (const auto& v : variables) check(v, false);
}

namespace {

/// Fills `row` with draw d of chain c (layout.size() values).
using RowOf = std::function<void(Index chain, Index draw, Vec& row)>;

InferenceGroup posterior_group(Index C, Index D, const RowOf& row_of, const ParamLayout& layout, bool flat) {
  const Index P = layout.size();
  InferenceGroup g;
  g.coordinates = {int_coordinate("chain", C), int_coordinate("draw", D)};
  Vec row(P);
  auto gather = [&](Index offset, Index size) {  // C order: chain, draw, entry
    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(C * D * size));
    for (Index c = 0; c < C; ++c)
      for (Index d = 0; d < D; ++d) {
        row_of(c, d, row);
        values.insert(values.end(), row.data() + offset, row.data() + offset + size);
      }
    return values;
  };
  if (flat) {
    g.coordinates.push_back({"param", {"param"}, {P}, layout.names(), {}});
    g.variables.push_back({"theta", {"chain", "draw", "param"}, {C, D, P}, gather(0, P), {}});
    return g;
  }
  for (const auto& b : layout.blocks()) {
    // Blocks are row-major inside theta, which is C order over (rows, cols).
    if (b.matrix)
      g.variables.push_back({b.name, {"chain", "draw", b.name + "_dim_0", b.name + "_dim_1"}, {C, D, b.rows, b.cols},
                             gather(b.offset, b.size()), {}});
    else
      g.variables.push_back({b.name, {"chain", "draw", b.name + "_dim_0"}, {C, D, b.size()}, gather(b.offset, b.size()), {}});
  }
  return g;
}

/// The groups' chains of `draws` (see posterior_chains): (C, D) and where the groups' draw c * D + d
/// (which is draw c * D + d of `draws`, chain-major) lies in `draws`: (chain, row).
struct GroupChains {
  Index chains = 0, draws = 0;
  std::vector<std::pair<Index, Index>> position;
};
GroupChains group_chains(const Draws& draws) {
  if (draws.empty()) throw std::invalid_argument("InferenceData: no draws");
  GroupChains g;
  g.chains = posterior_chains(draws);
  g.draws = draws.size() / g.chains;
  for (Index c = 0; c < draws.num_chains(); ++c)
    for (Index d = 0; d < draws.chain(c).size(); ++d) g.position.emplace_back(c, d);
  return g;
}

}  // namespace

Index posterior_chains(const Draws& draws) { return draws.comparable_chains() ? draws.num_chains() : 1; }

InferenceGroup make_posterior_group(const Draws& draws, const ParamLayout& layout, bool flat) {
  if (draws.dim() != layout.size())
    throw std::invalid_argument(fmt::format("make_posterior_group: draws of {} values, the layout {}", draws.dim(), layout.size()));
  const GroupChains g = group_chains(draws);
  return posterior_group(
      g.chains, g.draws,
      [&](Index c, Index d, Vec& row) {
        const auto [chain, r] = g.position[static_cast<std::size_t>(c * g.draws + d)];
        row = draws.chain(chain).values.row(r).transpose();
      },
      layout, flat);
}

InferenceGroup make_posterior_group(const std::vector<Mat>& chain_draws, const ParamLayout& layout, bool flat) {
  if (chain_draws.empty()) throw std::invalid_argument("make_posterior_group: no chains");
  const Index D = chain_draws[0].rows();
  for (const auto& m : chain_draws)
    if (m.rows() != D || m.cols() != layout.size())
      throw std::invalid_argument(fmt::format("make_posterior_group: every chain must be [{} draws, {} parameters]", D, layout.size()));
  return posterior_group(
      static_cast<Index>(chain_draws.size()), D,
      [&](Index c, Index d, Vec& row) { row = chain_draws[static_cast<std::size_t>(c)].row(d).transpose(); }, layout, flat);
}

InferenceGroup make_sample_stats_group(const Draws& draws) {
  if (!draws.has_stats()) throw std::invalid_argument("make_sample_stats_group: the draws have no sampler statistics");
  const GroupChains g = group_chains(draws);
  std::vector<std::vector<DrawStats>> chains(static_cast<std::size_t>(g.chains));
  for (std::size_t s = 0; s < g.position.size(); ++s) {
    const auto [chain, r] = g.position[s];
    chains[s / static_cast<std::size_t>(g.draws)].push_back(draws.chain(chain).stats[static_cast<std::size_t>(r)]);
  }
  return make_sample_stats_group(chains);
}

std::vector<Mat> rows_by_chain(const Draws& draws, const std::function<Vec(Index draw)>& row_of_draw) {
  const GroupChains g = group_chains(draws);
  std::vector<Mat> out;
  for (Index c = 0; c < g.chains; ++c)
    for (Index d = 0; d < g.draws; ++d) {
      const Vec row = row_of_draw(c * g.draws + d);
      if (d == 0) out.emplace_back(g.draws, row.size());
      out.back().row(d) = row.transpose();
    }
  return out;
}

InferenceGroup make_sample_stats_group(const std::vector<std::vector<DrawStats>>& chain_stats) {
  if (chain_stats.empty()) throw std::invalid_argument("make_sample_stats_group: no chains");
  const Index C = static_cast<Index>(chain_stats.size()), D = static_cast<Index>(chain_stats[0].size());
  for (const auto& s : chain_stats)
    if (static_cast<Index>(s.size()) != D) throw std::invalid_argument("make_sample_stats_group: chains differ in length");
  std::vector<double> lp, acceptance_rate, step_size, energy;
  std::vector<std::int64_t> tree_depth, n_steps;
  std::vector<bool> diverging;
  for (const auto& chain : chain_stats)
    for (const auto& s : chain) {
      lp.push_back(s.lp);
      acceptance_rate.push_back(s.accept_prob);
      step_size.push_back(s.step_size);
      tree_depth.push_back(s.tree_depth);
      n_steps.push_back(s.n_leapfrog);
      diverging.push_back(s.is_divergent);
      energy.push_back(s.energy);
    }
  InferenceGroup g;
  g.coordinates = {int_coordinate("chain", C), int_coordinate("draw", D)};
  const std::vector<std::string> dims{"chain", "draw"};
  const std::vector<Index> shape{C, D};
  g.variables = {{"lp", dims, shape, lp, {}},
                 {"acceptance_rate", dims, shape, acceptance_rate, {}},
                 {"step_size", dims, shape, step_size, {}},
                 {"tree_depth", dims, shape, tree_depth, {}},
                 {"n_steps", dims, shape, n_steps, {}},
                 {"diverging", dims, shape, diverging, {}},
                 {"energy", dims, shape, energy, {}}};
  return g;
}

std::vector<std::vector<DrawStats>> read_sample_stats_group(const InferenceGroup& g, const std::string& source) {
  const NetcdfVariable* lp = g.find("lp");
  if (!lp || lp->shape.size() != 2)
    throw InputError(fmt::format("{}: sample_stats has no (chain, draw) variable lp", source));
  const Index C = lp->shape[0], D = lp->shape[1];
  std::vector<std::vector<DrawStats>> out(static_cast<std::size_t>(C), std::vector<DrawStats>(static_cast<std::size_t>(D)));
  const auto each = [&](const std::string& name, const auto& assign) {
    const NetcdfVariable* v = g.find(name);
    if (!v) return;
    if (v->shape != lp->shape) throw InputError(fmt::format("{}: sample_stats {} is not (chain, draw) like lp", source, name));
    std::visit(
        [&](const auto& values) {
          using T = typename std::decay_t<decltype(values)>::value_type;
          if constexpr (!std::is_same_v<T, std::string>)
            for (Index c = 0; c < C; ++c)
              for (Index d = 0; d < D; ++d)
                assign(out[static_cast<std::size_t>(c)][static_cast<std::size_t>(d)],
                       static_cast<double>(values[static_cast<std::size_t>(c * D + d)]));
        },
        v->values);
  };
  each("lp", [](DrawStats& s, double x) { s.lp = x; });
  each("acceptance_rate", [](DrawStats& s, double x) { s.accept_prob = x; });
  each("step_size", [](DrawStats& s, double x) { s.step_size = x; });
  each("tree_depth", [](DrawStats& s, double x) { s.tree_depth = static_cast<int>(x); });
  each("n_steps", [](DrawStats& s, double x) { s.n_leapfrog = static_cast<int>(x); });
  each("diverging", [](DrawStats& s, double x) { s.is_divergent = x != 0; });
  each("energy", [](DrawStats& s, double x) { s.energy = x; });
  return out;
}

InferenceGroup make_array_group(const std::string& name, const std::vector<Mat>& chain_draws, bool no_chain_draw) {
  if (chain_draws.empty()) throw std::invalid_argument("make_array_group: no chains");
  const Index C = static_cast<Index>(chain_draws.size()), D = chain_draws[0].rows(), n = chain_draws[0].cols();
  std::vector<double> values;
  for (const auto& m : chain_draws) {
    if (m.rows() != D || m.cols() != n) throw std::invalid_argument("make_array_group: chains differ in shape");
    for (Index d = 0; d < D; ++d)
      for (Index k = 0; k < n; ++k) values.push_back(m(d, k));
  }
  InferenceGroup g;
  const std::string dim = name + "_dim_0";
  if (no_chain_draw) {
    if (C != 1 || D != 1) throw std::invalid_argument("make_array_group: without chain/draw give one [1, n] matrix");
    g.variables.push_back({name, {dim}, {n}, values, {}});
    return g;
  }
  g.coordinates = {int_coordinate("chain", C), int_coordinate("draw", D)};
  g.variables.push_back({name, {"chain", "draw", dim}, {C, D, n}, values, {}});
  return g;
}

void write_inference_data(const std::filesystem::path& path, const InferenceData& data) {
  const std::optional<InferenceGroup>* groups[] = {&data.posterior, &data.sample_stats, &data.posterior_predictive,
                                                   &data.observed_data, &data.log_likelihood};
  for (std::size_t i = 0; i < kNumGroups; ++i)
    if (groups[i]->has_value()) (*groups[i])->validate(kGroupNames[i]);
  std::map<std::string, std::string> attributes = data.attributes;
  attributes["created_at"] = data.created_at.empty() ? utc_now_iso8601() : data.created_at;
  attributes["inference_library"] = "uqnn";
  attributes["inference_library_version"] = kUqnnVersion;
  if (!data.method.empty()) attributes["method"] = data.method;

  const std::filesystem::path temp = atomic_temp_path(path);
  try {
    {
      netCDF::NcFile file(temp.string(), netCDF::NcFile::replace, netCDF::NcFile::nc4);
      for (std::size_t i = 0; i < kNumGroups; ++i)
        if (groups[i]->has_value()) write_group(file.addGroup(kGroupNames[i]), **groups[i], attributes);
      for (const auto& [key, value] : attributes) file.putAtt(key, value);
    }  // closes the file
  } catch (const netCDF::exceptions::NcException& e) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw InputError(fmt::format("cannot write NetCDF file '{}': {} (check that the directory exists and is writable)",
                                 path.string(), e.what()));
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw;
  }
  sync_file(temp);
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) {
    std::filesystem::remove(temp, error);
    throw InputError(fmt::format("cannot rename '{}' to '{}'", temp.string(), path.string()));
  }
}

InferenceData read_inference_data(const std::filesystem::path& path) {
  InferenceData data;
  try {
    netCDF::NcFile file(path.string(), netCDF::NcFile::read);
    std::optional<InferenceGroup>* groups[] = {&data.posterior, &data.sample_stats, &data.posterior_predictive,
                                               &data.observed_data, &data.log_likelihood};
    const auto children = file.getGroups();
    for (std::size_t i = 0; i < kNumGroups; ++i) {
      const auto it = children.find(kGroupNames[i]);
      if (it == children.end()) continue;
      InferenceGroup g;
      const netCDF::NcGroup& group = it->second;
      const auto dims = group.getDims();
      for (const auto& [name, var] : group.getVars()) {
        NetcdfVariable v = read_variable(var);
        if (v.dims.size() == 1 && v.dims[0] == v.name && dims.count(v.name)) g.coordinates.push_back(std::move(v));
        else g.variables.push_back(std::move(v));
      }
      for (const auto& [key, att] : group.getAtts()) {
        if (att.getType() != netCDF::ncChar) continue;
        std::string value;
        att.getValues(value);
        g.attributes[key] = value;
      }
      *groups[i] = std::move(g);
    }
    for (const auto& [key, att] : file.getAtts()) {
      if (att.getType() != netCDF::ncChar) continue;
      std::string value;
      att.getValues(value);
      if (key == "created_at") data.created_at = value;
      else if (key == "method") data.method = value;
      else data.attributes[key] = value;
    }
  } catch (const netCDF::exceptions::NcException& e) {
    throw InputError(fmt::format("cannot read NetCDF file '{}': {}", path.string(), e.what()));
  } catch (const std::runtime_error& e) {
    throw InputError(fmt::format("cannot read NetCDF file '{}': {}", path.string(), e.what()));
  }
  return data;
}

}  // namespace uqnn
