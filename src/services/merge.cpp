// `uqnn merge`: the parts of a --part k/n run joined into one run directory (see merge.hpp).
#include "uqnn/services/merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/io/netcdf_inference_data.hpp"
#include "uqnn/services/fit_output.hpp"
#include "chain_run.hpp"

namespace uqnn {

namespace {

/// Settings that may differ between parts: where each part wrote, how it ran.
const std::set<std::string> kPerPart{"part", "out", "threads", "quiet", "shards"};

struct PartRun {
  std::filesystem::path dir;
  nlohmann::json settings;  ///< model.json: settings.settings
  nlohmann::json info;      ///< metrics.json: info
  Part part;
};

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot be read (is it the --out directory of a uqnn fit --part run?)", path.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON ({})", path.string(), e.what()));
  }
}

/// The settings a fit recorded in DIR/model.json.
nlohmann::json saved_settings(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw InputError(fmt::format("{}: is not a directory", dir.string()));
  const nlohmann::json model = read_json(dir / "model.json");
  if (model.value("format", "") != "uqnn-fit" || !model.contains("settings") || !model["settings"].contains("settings"))
    throw InputError(fmt::format("{}: is not the model.json of a uqnn fit (no format uqnn-fit with settings)", (dir / "model.json").string()));
  return model["settings"]["settings"];
}

Part saved_part(const nlohmann::json& settings, const std::filesystem::path& dir) {
  return Part::parse(settings.value("part", std::string("1/1")), (dir / "model.json").string() + ": settings.part");
}

PartRun read_part(const std::filesystem::path& dir) {
  PartRun p;
  p.dir = dir;
  p.settings = saved_settings(dir);
  p.info = read_json(dir / "metrics.json").value("info", nlohmann::json::object());
  p.part = saved_part(p.settings, dir);
  return p;
}

}  // namespace

bool is_part_directory(const std::filesystem::path& dir) {
  try {
    return saved_part(saved_settings(dir), dir).n > 1;
  } catch (const std::exception&) {
    return false;
  }
}

namespace {

/// The parts in k order after checking they are 1..n of one run.
std::vector<PartRun> check_parts(std::vector<PartRun> parts) {
  if (parts.empty()) throw InputError("uqnn merge: give at least one part directory");
  std::sort(parts.begin(), parts.end(), [](const PartRun& a, const PartRun& b) { return a.part.k < b.part.k; });
  const int n = parts.front().part.n;
  std::map<int, std::string> seen;
  for (const PartRun& p : parts) {
    if (p.part.n != n)
      throw InputError(fmt::format("{}: is part {}, but {} is part {} (all parts must be k/{} of one run)", p.dir.string(),
                                   p.part.text(), parts.front().dir.string(), parts.front().part.text(), n));
    if (!seen.emplace(p.part.k, p.dir.string()).second)
      throw InputError(fmt::format("{}: part {} is given twice (also {})", p.dir.string(), p.part.text(), seen[p.part.k]));
    for (const auto& [name, value] : parts.front().settings.items()) {
      if (kPerPart.count(name)) continue;
      if (!p.settings.contains(name) || p.settings[name] != value)
        throw InputError(fmt::format("{}: setting {} is {}, but {} in {} (the parts of one run share every setting but "
                                     "part, out, threads, quiet, shards)",
                                     (p.dir / "model.json").string(), name, p.settings.value(name, nlohmann::json()).dump(),
                                     value.dump(), (parts.front().dir / "model.json").string()));
    }
  }
  std::string missing;
  for (int k = 1; k <= n; ++k)
    if (!seen.count(k)) missing += fmt::format("{}{}/{}", missing.empty() ? "" : ", ", k, n);
  if (!missing.empty()) throw InputError(fmt::format("uqnn merge: part(s) {} missing", missing));
  return parts;
}

/// Every part's draws and statistics by chain, in chain order, cut to the shortest chain as the
/// multi-chain driver does for one run.
MethodResult merged_draws(const std::vector<PartRun>& parts, const Posterior& posterior) {
  std::map<Index, DrawChain> chains;  // by id: the parts' chains interleave
  for (const PartRun& p : parts) {
    const auto draws_path = run_draws_path(p.dir);
    const auto draws_file = draws_path.string();
    const Draws draws = read_draws_file(draws_path, posterior.layout());
    std::vector<std::vector<DrawStats>> stats;
    if (std::filesystem::exists(p.dir / "posterior.nc")) {
      const InferenceData idata = read_inference_data(p.dir / "posterior.nc");
      if (idata.sample_stats) stats = read_sample_stats_group(*idata.sample_stats, (p.dir / "posterior.nc").string());
    }
    // posterior.nc numbers the part's chains 0.. in increasing chain id, as draws.csv holds them.
    if (!stats.empty() && static_cast<Index>(stats.size()) != draws.num_chains())
      throw InputError(fmt::format("{}: {} chains, posterior.nc {}", draws_file, draws.num_chains(), stats.size()));
    for (Index c = 0; c < draws.num_chains(); ++c) {
      DrawChain chain = draws.chain(c);
      if (!p.part.owns(chain.id))
        throw InputError(fmt::format("{}: chain {} does not belong to part {}", draws_file, chain.id, p.part.text()));
      if (!stats.empty()) {
        const auto& cs = stats[static_cast<std::size_t>(c)];
        if (chain.size() > static_cast<Index>(cs.size()))
          throw InputError(fmt::format("{}: chain {} has more draws than posterior.nc", draws_file, chain.id));
        chain.stats.assign(cs.begin(), cs.begin() + chain.size());
      }
      chains[chain.id] = std::move(chain);
    }
  }
  Index common = std::numeric_limits<Index>::max();
  for (const auto& [id, chain] : chains) common = std::min(common, chain.size());
  const bool have_stats = std::any_of(chains.begin(), chains.end(), [](const auto& c) { return !c.second.stats.empty(); });
  MethodResult r;
  for (auto& [id, chain] : chains) {
    if (have_stats && chain.stats.empty())
      throw InputError(fmt::format("chain {}: its part has no posterior.nc with sampler statistics, the other parts do", id));
    if (chain.stats.size() > static_cast<std::size_t>(common)) chain.stats.resize(static_cast<std::size_t>(common));
    r.draws.add_chain(id, chain.values.topRows(common), std::move(chain.stats));
  }
  return r;
}

/// metrics.json's info: the first part's, with the counts over all parts and every chain's tuning.
nlohmann::json merged_info(const std::vector<PartRun>& parts, const MethodResult& r) {
  nlohmann::json info = parts.front().info;
  for (const char* key : {"chains", "members"})
    if (info.contains(key)) info[key] = r.draws.num_chains();
  for (const char* key : {"divergences", "divergences_warmup"})
    if (info.contains(key)) {
      long sum = 0;
      for (const PartRun& p : parts) sum += p.info.value(key, 0L);
      info[key] = sum;
    }
  if (info.contains("sampling_seconds")) {
    double slowest = 0;
    for (const PartRun& p : parts) slowest = std::max(slowest, p.info.value("sampling_seconds", 0.0));
    info["sampling_seconds"] = slowest;  // the parts ran in parallel
  }
  if (info.contains("tuned") && info["tuned"].is_array()) {
    nlohmann::json tuned = nlohmann::json::array();
    for (std::size_t c = 0; c < info["tuned"].size(); ++c) {
      nlohmann::json entry = "";
      for (const PartRun& p : parts)
        if (p.part.owns(static_cast<std::int64_t>(c)) && p.info.contains("tuned") && c < p.info["tuned"].size()) entry = p.info["tuned"][c];
      tuned.push_back(entry);
    }
    info["tuned"] = tuned;
  }
  if (r.draws.has_stats() && info.contains("mean_accept_stat")) info["mean_accept_stat"] = detail::mean_accept_prob(r.draws);
  nlohmann::json from = nlohmann::json::array();
  for (const PartRun& p : parts) from.push_back(p.dir.string());
  info["merged_from"] = from;
  return info;
}

}  // namespace

FitReport run_merge(const MergeConfig& config) {
  // The merged run replaces its directory's files: a part there would be lost (`uqnn merge p1 p1 p2`).
  for (const auto& dir : config.part_dirs) {
    std::error_code ec;
    const bool same = std::filesystem::equivalent(config.out_dir, dir, ec) ||
                      std::filesystem::weakly_canonical(config.out_dir, ec) == std::filesystem::weakly_canonical(dir, ec);
    if (same)
      throw InputError(fmt::format("uqnn merge: the output directory {} is also a part ({}): the merge would replace the part; "
                                   "choose another --out",
                                   config.out_dir.string(), dir.string()));
  }
  std::vector<PartRun> parts;
  for (const auto& dir : config.part_dirs) parts.push_back(read_part(dir));
  parts = check_parts(std::move(parts));

  // The run's settings as one run: the first part's, whole, into the merged directory.
  FitRequest request =
      request_from_settings(parts.front().settings, (parts.front().dir / "model.json").string(), {"part", "out", "shards"});
  request.given.push_back({"out", config.out_dir.string(), "uqnn merge OUT"});
  request.given.push_back({"quiet", config.quiet, "uqnn merge --quiet"});
  nlohmann::json from = nlohmann::json::array();
  for (const PartRun& p : parts) from.push_back(p.dir.string());
  request.invocation = {{"merge", from}};
  const FitConfig cfg = make_fit_config(request);

  return run_fit(cfg, [&](const FitContext& context) {
    context.log(fmt::format("uqnn merge: {} part(s) of a {} run", parts.size(), cfg.method));
    MethodResult r = merged_draws(parts, *context.posterior);
    r.info = merged_info(parts, r);
    return r;
  });
}

}  // namespace uqnn
