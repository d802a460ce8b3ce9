// `uqnn merge`: the parts of a --part k/n run joined into one run directory (see merge.hpp).
#include "uqnn/services/merge.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>

#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/io/netcdf_inference_data.hpp"
#include "uqnn/services/fit_output.hpp"

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

PartRun read_part(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw InputError(fmt::format("{}: is not a directory", dir.string()));
  PartRun p;
  p.dir = dir;
  const nlohmann::json model = read_json(dir / "model.json");
  if (model.value("format", "") != "uqnn-fit" || !model.contains("settings") || !model["settings"].contains("settings"))
    throw InputError(fmt::format("{}: is not the model.json of a uqnn fit (no format uqnn-fit with settings)", (dir / "model.json").string()));
  p.settings = model["settings"]["settings"];
  p.info = read_json(dir / "metrics.json").value("info", nlohmann::json::object());
  p.part = Part::parse(p.settings.value("part", std::string("1/1")), (dir / "model.json").string() + ": settings.part");
  return p;
}

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
  std::map<Index, std::pair<std::vector<Vec>, std::vector<DrawStats>>> chains;
  bool have_stats = false;
  for (const PartRun& p : parts) {
    std::vector<Index> chain_of_draw;
    const std::vector<Vec> draws = read_draws_csv_as_vectors(p.dir / "draws.csv", posterior.layout(), &chain_of_draw);
    std::vector<std::vector<DrawStats>> stats;
    if (std::filesystem::exists(p.dir / "posterior.nc")) {
      const InferenceData idata = read_inference_data(p.dir / "posterior.nc");
      if (idata.sample_stats) stats = read_sample_stats_group(*idata.sample_stats, (p.dir / "posterior.nc").string());
    }
    have_stats = have_stats || !stats.empty();
    // posterior.nc numbers the part's chains 0.. in increasing chain id.
    std::map<Index, std::size_t> position, next;
    for (const Index c : chain_of_draw) position.emplace(c, 0);
    std::size_t i = 0;
    for (auto& [c, pos] : position) pos = i++;
    for (std::size_t s = 0; s < draws.size(); ++s) {
      const Index c = chain_of_draw[s];
      if (!p.part.owns(c))
        throw InputError(fmt::format("{}: chain {} does not belong to part {}", (p.dir / "draws.csv").string(), c, p.part.text()));
      auto& chain = chains[c];
      chain.first.push_back(draws[s]);
      if (!stats.empty()) {
        const auto& cs = stats.at(position[c]);
        const std::size_t d = next[c]++;
        if (d >= cs.size())
          throw InputError(fmt::format("{}: chain {} has more draws than posterior.nc", (p.dir / "draws.csv").string(), c));
        chain.second.push_back(cs[d]);
      }
    }
  }
  std::size_t common = SIZE_MAX;
  for (const auto& [c, chain] : chains) common = std::min(common, chain.first.size());
  MethodResult r;
  for (const auto& [c, chain] : chains)
    for (std::size_t d = 0; d < common; ++d) {
      r.draws.push_back(chain.first[d]);
      r.chain_of_draw.push_back(c);
      if (have_stats) r.stats.push_back(chain.second.at(d));
    }
  return r;
}

/// metrics.json's info: the first part's, with the counts over all parts and every chain's tuning.
nlohmann::json merged_info(const std::vector<PartRun>& parts, const MethodResult& r) {
  nlohmann::json info = parts.front().info;
  const std::set<Index> chains(r.chain_of_draw.begin(), r.chain_of_draw.end());
  for (const char* key : {"chains", "members"})
    if (info.contains(key)) info[key] = chains.size();
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
  if (!r.stats.empty() && info.contains("mean_accept_stat")) {
    double sum = 0;
    for (const DrawStats& s : r.stats) sum += s.accept_prob;
    info["mean_accept_stat"] = sum / static_cast<double>(r.stats.size());
  }
  nlohmann::json from = nlohmann::json::array();
  for (const PartRun& p : parts) from.push_back(p.dir.string());
  info["merged_from"] = from;
  return info;
}

}  // namespace

FitReport run_merge(const MergeConfig& config) {
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
