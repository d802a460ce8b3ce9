#include "uqnn/services/fit_output.hpp"

#include <fmt/format.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <numeric>
#include <optional>
#include <limits>
#include <sstream>

#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/io/csv.hpp"
#include "uqnn/io/npy_row_writer.hpp"
#include "uqnn/data/image_arrays.hpp"
#include <fstream>
#include <bit>
#include <fmt/ranges.h>
#include "uqnn/plot/figure.hpp"
#include "uqnn/plot/plots.hpp"
#include "uqnn/io/netcdf_inference_data.hpp"
#include "uqnn/predictive/predictive.hpp"
#include "uqnn/predictive/scores.hpp"
#include "uqnn/services/conformal.hpp"
#include "uqnn/services/fitted_model.hpp"
#include "uqnn/services/methods.hpp"
#include "uqnn/services/ood_metrics.hpp"
#include "uqnn/services/run_summary.hpp"

namespace uqnn {

namespace {

const std::vector<double> kLevels{0.5, 0.9, 0.95};

struct SplitPrediction {
  std::string name;
  IndexVec rows;
  PredictiveSummary summary;  // original units
  RegressionMetrics metrics;
  std::optional<ClassificationMetrics> classification;  // bernoulli / categorical fits
};

void write_json(const std::filesystem::path& path, const nlohmann::json& j) { atomic_write_text(path, j.dump(2) + "\n"); }

/// Draws one figure; a figure that fails (gnuplot missing or failing) is a warning of the report,
/// never the end of a run whose data files are written.
void draw_figure(FitReport& report, const std::filesystem::path& path, const std::function<void()>& draw) {
  try {
    draw();
    report.files.push_back(path);
  } catch (const std::exception& e) {
    report.figure_warnings.push_back(path.filename().string() + " not written: " + e.what());
  }
}

/// Probe inputs for function-space diagnostics: 5 training rows spread over the sorted first input.
Mat probe_inputs(const Dataset& data, const IndexVec& train) {
  IndexVec rows = train;
  std::sort(rows.begin(), rows.end(), [&](Index a, Index b) { return data.inputs(0, a) < data.inputs(0, b); });
  const Index k = std::min<Index>(5, static_cast<Index>(rows.size()));
  Mat probes(data.input_dim(), k);
  for (Index i = 0; i < k; ++i)
    probes.col(i) = data.inputs.col(rows[static_cast<std::size_t>(k == 1 ? 0 : i * (static_cast<Index>(rows.size()) - 1) / (k - 1))]);
  return probes;
}

/// posterior.nc (ArviZ InferenceData) for every method. posterior: chains as in draws.csv when
/// they are equally long with more than one draw (MCMC chains), else one chain (ensemble members);
/// sample_stats for MCMC. On the training rows, in the data's units: observed_data,
/// log_likelihood (pointwise) and posterior_predictive (one y per weight draw), computed from the
/// model.json + draws.csv just written, as `uqnn predict` and the Python module read them (the
/// two single-target groups only for one target). --idata-extras bounds their size.
void write_posterior_nc(const FitOutput& o, FitReport& report) {
  const auto& dir = o.config.out_dir;
  const auto& r = o.result;
  const Posterior& post = *o.posterior;
  const Draws& draws = r.draws;
  InferenceData idata;
  // Draws in draws.npy (a large model): posterior.nc does not hold them a second time, in memory
  // while it is written (a copy of every draw) and on disk; numpy.load maps draws.npy.
  if (draws_file_name(o.config.draws_format, post.dim()) == "draws.npy")
    report.notes.push_back("posterior.nc: no posterior group, the draws are in draws.npy (numpy.load(path, mmap_mode=\"r\"))");
  else
    idata.posterior = make_posterior_group(draws, post.layout(), false);
  if (draws.has_stats()) idata.sample_stats = make_sample_stats_group(draws);
  idata.method = o.config.method;

  const Dataset train = o.data.subset(o.split.train);
  const double values = static_cast<double>(draws.size()) * static_cast<double>(train.size());
  constexpr double kAutoMaxValues = 5e6;
  const bool extras = o.config.train_predictions != "never" &&
                      (o.config.idata_extras == "always" || (o.config.idata_extras == "auto" && values <= kAutoMaxValues));
  if (extras && train.size() > 0) {
    const FittedModel fitted = FittedModel::load_with_draws(dir, draws);
    // Row s of the log likelihood is draw s; posterior.nc takes them in the posterior group's chains.
    const Mat ll = fitted.pointwise_log_likelihood(train.inputs, train.targets);
    idata.log_likelihood = make_array_group("y", rows_by_chain(draws, [&](Index s) { return Vec(ll.row(s).transpose()); }));
    if (train.target_dim() == 1) {
      idata.observed_data = make_array_group("y", {train.targets}, true);
      std::vector<Index> all(static_cast<std::size_t>(draws.size()));
      std::iota(all.begin(), all.end(), Index{0});
      Rng rng(o.config.seed, 0x99d);
      const std::vector<Mat> y = fitted.sample_predictive(train.inputs, all, rng);
      idata.posterior_predictive =
          make_array_group("y", rows_by_chain(draws, [&](Index s) { return Vec(y[static_cast<std::size_t>(s)].row(0).transpose()); }));
    }
  } else if (!extras && o.config.idata_extras != "never" && o.config.train_predictions == "never") {
    report.notes.push_back("posterior.nc: no observed_data / log_likelihood / posterior_predictive (--train-predictions never)");
  } else if (!extras && o.config.idata_extras == "auto") {
    report.notes.push_back(fmt::format("posterior.nc: no observed_data / log_likelihood / posterior_predictive ({:.3g} values "
                                       "each; --idata-extras always writes them)", values));
  }
  write_inference_data(dir / "posterior.nc", idata);
  report.files.push_back(dir / "posterior.nc");
}

/// Writes diagnostics.{json,txt} and the trace figure of an MCMC run; returns the convergence
/// warnings and notes (diagnostics/warnings.hpp) for metrics.json.
diagnostics::ModeAwareConvergence write_mcmc_outputs(const FitOutput& o, FitReport& report) {
  const auto& dir = o.config.out_dir;
  const auto& r = o.result;
  const Posterior& post = *o.posterior;
  const MethodSpec& method = find_method(o.config.method);
  const SamplerTraits traits = method.sampler_traits ? method.sampler_traits(o.config.method_settings) : SamplerTraits{};
  const RunSummary summary = summarize_run(post, r.draws, probe_inputs(o.data, o.split.train), o.standardizer, 5,
                                           traits.max_tree_depth, traits.divergence_advice);
  write_json(dir / "diagnostics.json", summary.to_json());
  std::string notes;
  for (const auto& n : summary.notes) notes += "note: " + n.message + "\n";
  atomic_write_text(dir / "diagnostics.txt", summary.format() + notes + diagnostics::format_warnings(summary.warnings));
  report.files.push_back(dir / "diagnostics.json");
  report.summary_text = summary.format();

  if (o.config.figure_format != "none") {
    // Traces: lp__, the function-space rows and the worst weights, one line per chain.
    std::vector<std::pair<std::string, Mat>> quantities;
    const std::vector<double> lp = r.draws.stat_values([](const DrawStats& s) { return s.lp; });
    quantities.emplace_back("lp__", r.draws.by_chain(lp).transpose().eval());  // [chain, draw]
    // A trace with no finite value (lp__ of minibatch samplers between exact evaluations, or a
    // diverged chain) cannot be drawn; the summary table reports it instead.
    const auto drawable = [](const Mat& m) { return (m.array() == m.array()).any() && m.array().isFinite().any(); };
    if (!drawable(quantities.back().second)) quantities.pop_back();
    for (const auto& row : summary.rows) {
      if (row.name == "lp__" || row.name == "log_lik" || row.name.rfind("f(", 0) == 0) continue;
      Index k = 0;
      while (k < post.dim() && post.layout().name_of(k) != row.name) ++k;
      if (k < post.dim()) {
        quantities.emplace_back(row.name, r.draws.parameter_by_chain(k).transpose().eval());
        if (!drawable(quantities.back().second)) quantities.pop_back();
      }
      if (quantities.size() >= 4) break;
    }
    plot::TraceOptions options;
    options.title = o.config.method + ": traces (lp__ and the weights with the worst R-hat)";
    const auto path = dir / ("traces." + o.config.figure_format);
    if (!quantities.empty()) draw_figure(report, path, [&] { plot::plot_traces(path, quantities, options); });
  }
  return {summary.warnings, summary.notes};
}

}  // namespace

namespace {

/// draws.csv, or (`with_parameters` false) the statistics file beside a draws.npy.
void write_draws_table(const std::filesystem::path& path, const ParamLayout* layout, const Draws& draws) {
  // The statistics as CmdStan writes them, each column only where the sampler has it (as CmdStan's
  // samplers do): a column with a non-finite value (MALA's energy, adaptive Metropolis' step size)
  // is left out, so the file stays readable by strict CSV readers.
  const std::vector<std::string> stat_names = draw_stat_names();
  const auto stat_value = [](const DrawStats& st, std::size_t k) -> double {
    switch (k) {
      case 0: return st.lp;
      case 1: return st.accept_prob;
      case 2: return st.step_size;
      case 3: return st.tree_depth;
      case 4: return st.n_leapfrog;
      case 5: return st.is_divergent ? 1.0 : 0.0;
      default: return st.energy;
    }
  };
  std::vector<std::size_t> stat_columns;
  for (std::size_t k = 0; k < stat_names.size() && draws.has_stats(); ++k)
    if (std::all_of(draws.chains().begin(), draws.chains().end(), [&](const DrawChain& chain) {
          return std::all_of(chain.stats.begin(), chain.stats.end(), [&](const DrawStats& st) { return std::isfinite(stat_value(st, k)); });
        }))
      stat_columns.push_back(k);
  atomic_write(path, [&](std::ostream& out) {
    out << "chain,draw";
    for (std::size_t k : stat_columns) out << ',' << stat_names[k];
    if (layout)
      for (const auto& name : layout->names()) out << ',' << quote_csv_field(name);
    out << '\n';
    // One buffer per row: a network's draws are millions of numbers, each formatted without a string of its own.
    fmt::memory_buffer row;
    const auto append = [&row](double value) { fmt::format_to(std::back_inserter(row), ",{}", value); };
    for (const DrawChain& chain : draws.chains())
      for (Index d = 0; d < chain.size(); ++d) {
        row.clear();
        fmt::format_to(std::back_inserter(row), "{},{}", chain.id, d);
        for (std::size_t k : stat_columns) append(stat_value(chain.stats[static_cast<std::size_t>(d)], k));
        if (layout)
          for (Index k = 0; k < chain.values.cols(); ++k) append(chain.values(d, k));
        row.push_back('\n');
        out.write(row.data(), static_cast<std::streamsize>(row.size()));
      }
  });
}

}  // namespace

void write_draws_csv(const std::filesystem::path& path, const ParamLayout& layout, const Draws& draws) {
  write_draws_table(path, &layout, draws);
}

const Registry<DrawsFormatKind>& draws_format_kinds() {
  static const Registry<DrawsFormatKind> kinds(
      "--draws-format",
      {{.name = "auto", .summary = fmt::format("npy above {} parameters, else csv", kNpyDrawsAboveK)},
       {.name = "csv", .summary = "draws.csv: chain, draw, the sampler's statistics and one column per parameter"},
       {.name = "npy", .summary = "draws.npy (float64 [draws, K], numpy.load(path, mmap_mode=\"r\")) and draws_stats.csv"}});
  return kinds;
}

std::string draws_file_name(const std::string& format, Index num_parameters) {
  const std::string& name = draws_format_kinds().find(format).name;
  const bool npy = name == "npy" || (name == "auto" && num_parameters > kNpyDrawsAboveK);
  return npy ? "draws.npy" : "draws.csv";
}

std::filesystem::path draws_stats_path(const std::filesystem::path& npy_path) {
  return npy_path.parent_path() / (npy_path.stem().string() + "_stats.csv");
}

void write_draws_npy(const std::filesystem::path& path, const Draws& draws) {
  // The statistics first: a draws.npy is only ever beside the statistics of its own rows.
  write_draws_table(draws_stats_path(path), nullptr, draws);
  NpyRowWriter writer(path, draws.dim());
  Vec row(draws.dim());
  for (const DrawChain& chain : draws.chains())
    for (Index d = 0; d < chain.size(); ++d) {
      row = chain.values.row(d).transpose();  // the chain's matrix is column-major: one row, contiguous
      writer.append(row.data());
    }
  writer.finish();
}

Draws read_draws_npy(const std::filesystem::path& path, const ParamLayout& layout) {
  const std::string source = path.string();
  const std::filesystem::path stats_path = draws_stats_path(path);
  if (!std::filesystem::exists(stats_path))
    throw InputError(fmt::format("{}: its chains file {} is missing (a draws.npy is written with it)", source, stats_path.string()));
  const CsvTable stats = read_csv(stats_path);
  if (stats.num_columns() < 2 || stats.column_names[0] != "chain" || stats.column_names[1] != "draw")
    throw InputError(fmt::format("{}: the header must begin with chain,draw", stats_path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open file", source));
  const auto file_bytes = static_cast<std::uint64_t>(std::filesystem::file_size(path));
  std::string leading(static_cast<std::size_t>(std::min<std::uint64_t>(file_bytes, 1 << 16)), '\0');
  in.read(leading.data(), static_cast<std::streamsize>(leading.size()));
  const NpyHeader h = parse_npy_header(leading, source);
  if (h.kind != 'f' || h.width != 8 || h.big_endian != (std::endian::native == std::endian::big))
    throw InputError(fmt::format("{}: the draws must be float64 in this machine's byte order (a draws.npy as uqnn writes it)", source));
  if (h.fortran_order) throw InputError(fmt::format("{}: the draws must be in C order (fortran_order False)", source));
  const Index K = static_cast<Index>(layout.size());
  if (h.shape.size() != 2 || h.shape[1] != K)
    throw InputError(fmt::format("{}: shape ({}) is not [draws, {}] (one row per draw of the model's {} parameters)", source,
                                 fmt::join(h.shape, ", "), K, K));
  const Index rows = h.shape[0];
  const std::uint64_t needed = h.data_offset + static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(K) * 8;
  if (file_bytes != needed)
    throw InputError(fmt::format("{}: {}: the header's shape ({}, {}) needs {} bytes, the file has {}", source,
                                 file_bytes < needed ? "truncated" : "damaged", rows, K, needed, file_bytes));
  if (stats.num_rows() != rows)
    throw InputError(fmt::format("{}: {} draws, its chains file {} has {} rows", source, rows, stats_path.string(), stats.num_rows()));
  std::map<Index, Index> draws_of_chain;
  std::vector<std::pair<Index, Index>> place(static_cast<std::size_t>(rows));  // row -> (chain, draw within it)
  for (Index r = 0; r < rows; ++r) {
    const double chain = stats.values(r, 0);
    if (!(chain >= 0 && chain < 1e15 && chain == std::floor(chain)))
      throw InputError(fmt::format("{}: row {}: chain '{}' is not a chain number (0, 1, ...)", stats_path.string(), r + 2, chain));
    Index& count = draws_of_chain[static_cast<Index>(chain)];
    place[static_cast<std::size_t>(r)] = {static_cast<Index>(chain), count++};
  }
  std::map<Index, Mat> values;
  for (const auto& [chain, count] : draws_of_chain) values[chain].resize(count, K);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  Vec row(K);
  for (Index r = 0; r < rows; ++r) {
    in.read(reinterpret_cast<char*>(row.data()), static_cast<std::streamsize>(K * 8));
    if (!in) throw InputError(fmt::format("{}: cannot read row {} of {}", source, r, rows));
    const auto& at = place[static_cast<std::size_t>(r)];
    values[at.first].row(at.second) = row.transpose();
  }
  Draws draws;
  for (auto& entry : values) draws.add_chain(entry.first, std::move(entry.second));
  return draws;
}

Draws read_draws_file(const std::filesystem::path& path, const ParamLayout& layout) {
  return path.extension() == ".npy" ? read_draws_npy(path, layout) : read_draws_csv(path, layout);
}

std::filesystem::path run_draws_path(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "draws.npy") ? dir / "draws.npy" : dir / "draws.csv";
}

Draws read_draws_csv(const std::filesystem::path& path, const ParamLayout& layout) {
  const CsvTable table = read_csv(path);
  const auto names = layout.names();
  // chain, draw, the sampler's statistics (lp__, accept_stat__, ...; MCMC runs), then the parameters.
  std::size_t first = 2;
  while (first < table.column_names.size() && table.column_names[first].size() > 2 &&
         table.column_names[first].compare(table.column_names[first].size() - 2, 2, "__") == 0)
    ++first;
  if (table.num_columns() != static_cast<Index>(names.size() + first))
    throw InputError(fmt::format("{}: expected {} columns (chain, draw, {} sampler statistics and {} parameters), found {}",
                                 path.string(), names.size() + first, first - 2, names.size(), table.num_columns()));
  for (std::size_t k = 0; k < names.size(); ++k)
    if (table.column_names[k + first] != names[k])
      throw InputError(fmt::format("{}: column {} is '{}', the model's parameter is '{}'", path.string(), k + first + 1,
                                   table.column_names[k + first], names[k]));
  // Each chain's rows in file order, chains in increasing id (uqnn writes them so; another order is read the same way).
  std::map<Index, std::vector<Index>> rows_of_chain;
  for (Index r = 0; r < table.num_rows(); ++r) {
    const double chain = table.values(r, 0);
    if (!(chain >= 0 && chain < 1e15 && chain == std::floor(chain)))
      throw InputError(fmt::format("{}: row {}: chain '{}' is not a chain number (0, 1, ...)", path.string(), r + 2, chain));
    rows_of_chain[static_cast<Index>(chain)].push_back(r);
  }
  Draws draws;
  const Index K = static_cast<Index>(names.size());
  for (const auto& [id, rows] : rows_of_chain) {
    Mat values(static_cast<Index>(rows.size()), K);
    for (std::size_t d = 0; d < rows.size(); ++d) values.row(static_cast<Index>(d)) = table.values.row(rows[d]).tail(K);
    draws.add_chain(id, std::move(values));
  }
  return draws;
}

namespace {

/// A warning when draws or predictions hold NaN or infinity (a diverged optimiser or an SG-MCMC
/// step size far too large): such a run must not pass for a result.
std::optional<diagnostics::Warning> not_finite_warning(const Draws& draws, const std::vector<SplitPrediction>& parts) {
  Index bad_draws = 0;
  for (const DrawChain& chain : draws.chains())
    for (Index d = 0; d < chain.size(); ++d) bad_draws += chain.values.row(d).allFinite() ? 0 : 1;
  Index bad_predictions = 0;
  for (const auto& p : parts)
    for (Index c = 0; c < p.summary.mean.cols(); ++c)
      if (!p.summary.mean.col(c).allFinite() || !p.summary.sd.col(c).allFinite()) ++bad_predictions;
  if (bad_draws == 0 && bad_predictions == 0) return std::nullopt;
  return diagnostics::Warning{
      "not_finite", fmt::format("{} of {} draws and {} predicted rows hold NaN or infinity: the run diverged (for SG-MCMC "
                                "and training, lower --step-size or --lr), so its metrics and predictions are not a result",
                                bad_draws, draws.size(), bad_predictions)};
}

}  // namespace

Mat predictive_figure_grid(const Mat& inputs) {
  const double lo = inputs.minCoeff(), hi = inputs.maxCoeff(), pad = 0.25 * (hi - lo);
  const Index n = 300;
  Mat grid(1, n);
  for (Index i = 0; i < n; ++i) grid(0, i) = lo - pad + (hi - lo + 2 * pad) * static_cast<double>(i) / static_cast<double>(n - 1);
  return grid;
}

std::optional<diagnostics::Warning> constant_inputs_warning(const Standardizer& standardizer) {
  const auto& names = standardizer.constant_inputs();
  if (names.empty()) return std::nullopt;
  const std::size_t shown = std::min<std::size_t>(names.size(), 5);
  std::string list;
  for (std::size_t i = 0; i < shown; ++i) list += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > shown) list += fmt::format(" and {} more", names.size() - shown);
  return diagnostics::Warning{"constant_inputs",
                              fmt::format("{} input column{} constant in the training rows ({}): kept with scale 1, "
                                          "they carry no information to the network",
                                          names.size(), names.size() == 1 ? " is" : "s are", list)};
}

namespace {

/// Per input, the smallest and largest value in the training rows (original units): `uqnn predict`
/// warns about inputs outside it.
nlohmann::json training_input_range(const Dataset& data, const IndexVec& train) {
  const Mat inputs = data.subset(train).inputs;
  std::vector<double> lo(static_cast<std::size_t>(inputs.rows())), hi(lo.size());
  for (Index i = 0; i < inputs.rows(); ++i) {
    lo[static_cast<std::size_t>(i)] = inputs.row(i).minCoeff();
    hi[static_cast<std::size_t>(i)] = inputs.row(i).maxCoeff();
  }
  return {{"min", lo}, {"max", hi}};
}

/// What every step of writing a run directory reads.
struct OutputContext {
  const FitOutput& o;
  const FitConfig& cfg;
  const std::filesystem::path& dir;
  const Model& model;  // the predictive model (a method's own, else the posterior's)
  const Likelihood& lik;
  bool regression, categorical;
  /// cv+ and jackknife+ calibrate on the training rows with each member's means (member k was
  /// trained without fold k).
  bool out_of_fold;
};

/// The predictions on every split present (train, calibration, validation, test, in that order),
/// in original units, and, for out-of-fold conformal, each split's per-member means.
struct SplitPredictions {
  std::vector<SplitPrediction> parts;
  std::vector<std::vector<Mat>> member_means;  // [part][member], empty unless out_of_fold
};

SplitPredictions predict_splits(const OutputContext& c, Rng& rng) {
  const FitOutput& o = c.o;
  std::vector<double> levels = c.regression ? kLevels : std::vector<double>{};
  if (c.cfg.conformal.enabled())
    for (double l : conformal_summary_levels(c.cfg.conformal.method, c.cfg.conformal.confidence_level))
      if (std::find(levels.begin(), levels.end(), l) == levels.end()) levels.push_back(l);
  SplitPredictions out;
  for (const auto& [name, rows] : {std::pair<std::string, const IndexVec*>{"train", &o.split.train},
                                   {"calibration", &o.split.calibration}, {"validation", &o.split.validation},
                                   {"test", &o.split.test}}) {
    if (rows->empty() || (name == "train" && c.cfg.train_predictions == "never")) continue;
    const Dataset part = o.data.subset(*rows);
    const Dataset part_std = o.standardizer.transform(part);
    const PredictiveDraws draws = predict_draws(c.model, c.lik, o.result.draws, part_std.inputs);
    if (c.out_of_fold) out.member_means.push_back(member_means(draws, o.standardizer.target_mean(), o.standardizer.target_scale()));
    SplitPrediction p{name, *rows, summarize_predictive(draws, levels, rng), {}, std::nullopt};
    if (c.regression) {
      rescale_summary(p.summary, o.standardizer.target_mean(), o.standardizer.target_scale());
      const double log_scale = o.standardizer.target_scale().array().log().sum();
      p.metrics = regression_metrics(draws, p.summary, part_std.targets, part.targets, log_scale);
    } else {
      p.classification = classification_metrics(p.summary.mean, part.targets, c.categorical);
    }
    out.parts.push_back(std::move(p));
  }
  return out;
}

/// --conformal: calibrated on the calibration rows (out-of-fold kinds: the training rows), applied
/// to every split.
struct ConformalResult {
  ConformalCalibration calibration;
  std::vector<ConformalPrediction> per_part;
};

std::optional<ConformalResult> conformalize(const OutputContext& c, const SplitPredictions& predictions, FitReport& report) {
  const ConformalConfig& conformal = c.cfg.conformal;
  if (!conformal.enabled()) return std::nullopt;
  if (c.out_of_fold && !Part::parse(c.cfg.part, "--part").whole()) {
    // A part holds only some members: calibrating on them would pair rows with members that did
    // not leave those rows out. `uqnn merge` calibrates on every member.
    report.notes.push_back("--conformal " + conformal.method + " with --part " + c.cfg.part +
                           ": calibrated when the parts are joined by `uqnn merge` (a part holds only some of the members)");
    return std::nullopt;
  }
  const auto& parts = predictions.parts;
  const char* calibrated_on = c.out_of_fold ? "train" : "calibration";
  const auto cal = std::find_if(parts.begin(), parts.end(), [&](const SplitPrediction& p) { return p.name == calibrated_on; });
  if (cal == parts.end()) throw InputError("--conformal " + conformal.method + ": there are no " + calibrated_on + " rows");
  const Mat cal_targets = c.o.data.subset(cal->rows).targets;
  ConformalResult result;
  if (c.out_of_fold) {
    // The members' folds, as the method drew them (approx_common.hpp's ensemble_params).
    const auto& train_means = predictions.member_means[static_cast<std::size_t>(cal - parts.begin())];
    const IndexVec folds = out_of_fold_assignment(conformal.method, static_cast<Index>(cal->rows.size()),
                                                  static_cast<Index>(train_means.size()), c.cfg.seed);
    result.calibration = calibrate_out_of_fold(conformal, train_means, cal_targets, folds);
  } else {
    result.calibration = calibrate_conformal(conformal, cal->summary, cal_targets, c.categorical);
  }
  for (std::size_t pi = 0; pi < parts.size(); ++pi)
    result.per_part.push_back(apply_conformal(result.calibration, parts[pi].summary,
                                              c.out_of_fold ? predictions.member_means[pi] : std::vector<Mat>{}));
  return result;
}

/// predictions.csv: every row of the data (its inputs, or its index for images), its targets, the
/// predictive mean and sd per output (regression: the 95% interval), the conformal columns, its split.
std::filesystem::path write_predictions_csv(const OutputContext& c, const std::vector<SplitPrediction>& parts,
                                            const std::optional<ConformalResult>& conformal) {
  const Dataset& data = c.o.data;
  const Index num_outputs = parts.front().summary.mean.rows();
  std::vector<std::string> output_names;
  for (Index k = 0; k < num_outputs; ++k)
    output_names.push_back(k < static_cast<Index>(data.target_names.size()) && num_outputs == data.target_dim()
                               ? data.target_names[static_cast<std::size_t>(k)] : fmt::format("output{}", k));
  std::vector<std::vector<std::pair<std::string, Vec>>> conformal_cols;
  if (conformal)
    for (const auto& p : conformal->per_part) conformal_cols.push_back(conformal_columns(conformal->calibration, p, output_names));
  const std::filesystem::path path = c.dir / "predictions.csv";
  atomic_write(path, [&](std::ostream& out) {
    if (c.o.inputs_in_predictions)
      for (const auto& n : data.input_names) out << quote_csv_field(n) << ',';
    else
      out << "row,";
    for (const auto& n : data.target_names) out << quote_csv_field(n) << ',';
    for (const std::string& n : output_names) {
      out << n << "_mean," << n << "_sd,";
      if (c.regression) out << n << "_lower95," << n << "_upper95,";
    }
    if (!conformal_cols.empty())
      for (const auto& [name, values] : conformal_cols.front()) out << quote_csv_field(name) << ',';
    out << "split\n";
    for (std::size_t pi = 0; pi < parts.size(); ++pi)
      for (std::size_t j = 0; j < parts[pi].rows.size(); ++j) {
        const auto& p = parts[pi];
        const Index r = p.rows[j], col = static_cast<Index>(j);
        if (c.o.inputs_in_predictions)
          for (Index i = 0; i < data.input_dim(); ++i) out << format_double(data.inputs(i, r)) << ',';
        else
          out << r << ',';
        for (Index i = 0; i < data.target_dim(); ++i) out << format_double(data.targets(i, r)) << ',';
        for (Index k = 0; k < num_outputs; ++k) {
          out << format_double(p.summary.mean(k, col)) << ',' << format_double(p.summary.sd(k, col)) << ',';
          if (c.regression)
            out << format_double(p.summary.intervals.at(0.95).first(k, col)) << ','
                << format_double(p.summary.intervals.at(0.95).second(k, col)) << ',';
        }
        if (!conformal_cols.empty())
          for (const auto& [name, values] : conformal_cols[pi]) out << format_double(values(col)) << ',';
        out << p.name << '\n';
      }
  });
  return path;
}

/// model.json + draws.csv: everything `uqnn predict` needs.
void write_model_files(const OutputContext& c, const std::optional<ConformalResult>& conformal, FitReport& report) {
  const FitOutput& o = c.o;
  const Posterior& post = *o.posterior;
  const std::string draws_name = draws_file_name(c.cfg.draws_format, post.dim());
  const std::filesystem::path draws_path = c.dir / draws_name;
  if (draws_name == "draws.npy")
    write_draws_npy(draws_path, o.result.draws);
  else
    write_draws_csv(draws_path, post.layout(), o.result.draws);
  nlohmann::json model_json{{"format", "uqnn-fit"},
                            {"version", 1},
                            {"method", c.cfg.method},
                            {"model", c.model.to_json()},
                            {"likelihood", c.lik.to_json()},
                            {"prior", post.prior().to_json()},
                            {"standardizer", o.standardizer.to_json()},
                            {"input_names", o.data.input_names},
                            {"input_range", training_input_range(o.data, o.split.train)},
                            {"target_names", o.data.target_names},
                            {"num_draws", o.result.draws.size()},
                            {"draws_file", draws_name},
                            {"seed", c.cfg.seed},
                            {"settings", c.cfg.record}};
  if (conformal) model_json["conformal"] = conformal->calibration.to_json();
  write_json(c.dir / "model.json", model_json);
  report.files.push_back(c.dir / "model.json");
  report.files.push_back(draws_path);
  if (draws_name == "draws.npy") report.files.push_back(draws_stats_path(draws_path));
}

/// The run's warnings, most serious first (not finite, then the MCMC convergence judgement, constant
/// inputs, the method's own), and its notes. For MCMC runs this writes the diagnostics files and traces.
diagnostics::ModeAwareConvergence judge_run(const OutputContext& c, const std::vector<SplitPrediction>& parts, FitReport& report) {
  diagnostics::ModeAwareConvergence judgement;
  if (c.o.result.draws.has_stats()) {
    judgement = write_mcmc_outputs(c.o, report);
    for (const auto& n : judgement.notes) report.notes.push_back(n.message);
  }
  auto& warnings = judgement.warnings;
  if (const auto w = not_finite_warning(c.o.result.draws, parts)) {
    warnings.insert(warnings.begin(), *w);
    report.not_finite = true;
  }
  if (const auto w = constant_inputs_warning(c.o.standardizer)) warnings.push_back(*w);
  warnings.insert(warnings.end(), c.o.result.warnings.begin(), c.o.result.warnings.end());
  return judgement;
}

/// metrics.json's scores of one split: regression's rmse, nll, lppd and coverages, or a classifier's
/// accuracy, nll, lppd, Brier and ECE, and the conformal scores.
nlohmann::json split_metrics(const OutputContext& c, const SplitPrediction& p, const std::optional<ConformalResult>& conformal,
                             const ConformalPrediction* conformal_part) {
  nlohmann::json m{{"n", p.rows.size()}};
  if (c.regression) {
    m["rmse"] = p.metrics.rmse;
    m["nll"] = p.metrics.nll;
    m["lppd"] = p.metrics.lppd;
    for (const auto& [level, coverage] : p.metrics.coverage) m[fmt::format("coverage_{:.0f}", 100 * level)] = coverage;
  } else if (p.classification) {
    m["accuracy"] = p.classification->accuracy;
    m["nll"] = p.classification->nll;
    m["lppd"] = -p.classification->nll;
    m["brier"] = p.classification->brier;
    m["ece"] = p.classification->ece;
  }
  if (conformal)
    m["conformal"] = conformal_scores(conformal->calibration, *conformal_part, c.o.data.subset(p.rows).targets, c.categorical);
  return m;
}

/// The figure of the fit: the predictive band over a grid for one input and one target, a parity
/// plot for other regressions, the reliability diagram for classifiers.
void draw_fit_figure(const OutputContext& c, const std::vector<SplitPrediction>& parts, const std::string& title, Rng& rng,
                     FitReport& report) {
  const FitOutput& o = c.o;
  const auto path = c.dir / ("fit." + c.cfg.figure_format);
  const auto& shown = parts.back();  // test if there is one, else the last split present
  if (c.regression && o.data.input_dim() == 1 && o.data.target_dim() == 1) {
    const Dataset train = o.data.subset(parts.front().rows);
    const Vec x_train = train.inputs.row(0).transpose(), y_train = train.targets.row(0).transpose();
    const Mat grid = predictive_figure_grid(o.data.inputs);
    PredictiveSummary s = summarize_predictive(predict_draws(c.model, c.lik, o.result.draws, o.standardizer.transform_inputs(grid)), {}, rng);
    rescale_summary(s, o.standardizer.target_mean(), o.standardizer.target_scale());
    draw_figure(report, path, [&] {
      plot::plot_predictive_1d(path, x_train, y_train, grid.row(0).transpose(), s.mean.row(0).transpose(), s.sd.row(0).transpose(),
                               std::nullopt, title);
    });
  } else if (c.regression) {
    const Dataset part = o.data.subset(shown.rows);
    draw_figure(report, path, [&] {
      plot::plot_parity(path, part.targets.row(0).transpose(), shown.summary.mean.row(0).transpose(),
                        shown.summary.sd.row(0).transpose(), title + " (" + shown.name + " data)");
    });
  } else if (shown.classification) {
    draw_figure(report, path, [&] { plot::plot_classification(path, *shown.classification, title + " (" + shown.name + " data)"); });
  }
}

/// ood.png: the predictive entropy and mutual information of the in-distribution rows and of the
/// OOD rows, as densities, with their AUROC.
void draw_ood_figure(const OutputContext& c, const nlohmann::json& ood, const std::pair<UncertaintyScores, UncertaintyScores>& scores,
                     const std::string& title, FitReport& report) {
  const auto path = c.dir / ("ood." + c.cfg.figure_format);
  draw_figure(report, path, [&] {
    plot::Figure fig(1, 2);
    fig.title(title + ": out-of-distribution inputs");
    const std::pair<const char*, const char*> detectors[] = {{"predictive_entropy", "predictive entropy (nats)"},
                                                             {"mutual_information", "mutual information (nats)"}};
    for (int k = 0; k < 2; ++k) {
      const Vec& a = k == 0 ? scores.first.predictive_entropy : scores.first.mutual_information;
      const Vec& b = k == 0 ? scores.second.predictive_entropy : scores.second.mutual_information;
      plot::Panel& panel = fig.panel(0, k);
      panel.title(fmt::format("AUROC {:.3f}", ood.at(detectors[k].first).at("auroc").get<double>()))
          .x_label(detectors[k].second)
          .y_label("density");
      panel.histogram(a, 30, fmt::format("{} ({} rows)", ood.at("in_distribution").get<std::string>(), a.size()),
                      plot::Style{.colour = plot::kPalette[0]}, true);
      panel.histogram(b, 30, fmt::format("OOD ({} rows)", b.size()), plot::Style{.colour = plot::kPalette[1]}, true);
    }
    fig.save(path, 1100, 480);
  });
}

/// history.png: the training curve(s) of an optimisation-based method.
void draw_history_figure(const OutputContext& c, FitReport& report) {
  const MethodResult& r = c.o.result;
  plot::HistoryOptions options;
  options.title = c.cfg.method + ": " + r.history_label;
  options.x_label = "epoch";
  options.y_label = r.history_label;
  // Losses span orders of magnitude: a log axis when every value is positive; otherwise (NLLs
  // below zero) a linear one, whose range plot_history fits to the curve after the first epochs.
  double lowest = std::numeric_limits<double>::infinity();
  for (const auto& [name, values] : r.history)
    for (double v : values)
      if (std::isfinite(v)) lowest = std::min(lowest, v);
  options.log_y = lowest > 0;
  const auto path = c.dir / ("history." + c.cfg.figure_format);
  draw_figure(report, path, [&] { plot::plot_history(path, r.history, options); });
}

}  // namespace

FitReport write_fit_output(const FitOutput& o) {
  const FitConfig& cfg = o.config;
  std::filesystem::create_directories(cfg.out_dir);
  const Likelihood& lik = o.posterior->likelihood();
  const OutputContext c{.o = o,
                        .cfg = cfg,
                        .dir = cfg.out_dir,
                        .model = o.result.predictive_model ? *o.result.predictive_model : o.posterior->model(),
                        .lik = lik,
                        .regression = !is_classification(cfg.probability.likelihood),
                        .categorical = lik.kind() == "categorical",
                        .out_of_fold = cfg.conformal.enabled() && conformal_kinds().find(cfg.conformal.method).out_of_fold};
  FitReport report;
  Rng rng(cfg.seed, 0x9ed);  // the predictive draws of the splits, then of the figure's grid
  const SplitPredictions predictions = predict_splits(c, rng);
  const auto& parts = predictions.parts;
  const std::optional<ConformalResult> conformal = conformalize(c, predictions, report);
  if (parts.empty())
    report.notes.push_back("no predictions.csv: --train-predictions never and no test, validation or calibration rows to predict");
  else
    report.files.push_back(write_predictions_csv(c, parts, conformal));
  write_model_files(c, conformal, report);
  write_posterior_nc(o, report);
  const diagnostics::ModeAwareConvergence judgement = judge_run(c, parts, report);

  nlohmann::json metrics{{"method", cfg.method},
                         {"num_params", o.posterior->dim()},
                         {"num_draws", o.result.draws.size()},
                         {"seconds", o.seconds},
                         {"data", o.data.source},
                         {"standardized", !o.standardizer.is_identity()},
                         {"info", o.result.info},
                         {"warnings", diagnostics::to_json(judgement.warnings)},
                         {"notes", diagnostics::to_json(judgement.notes)}};
  for (std::size_t pi = 0; pi < parts.size(); ++pi)
    metrics["splits"][parts[pi].name] = split_metrics(c, parts[pi], conformal, conformal ? &conformal->per_part[pi] : nullptr);
  if (conformal) metrics["conformal"] = conformal->calibration.to_json();
  std::pair<UncertaintyScores, UncertaintyScores> ood_scores;
  if (o.ood_inputs && parts.empty()) {
    report.notes.push_back("--ood-data: not scored (no rows predicted to hold against it: --train-predictions never, no test rows)");
  } else if (o.ood_inputs) {
    // The test rows (else the last split present) against the OOD rows.
    const auto& in = parts.back();
    metrics["ood"] = ood_metrics(c.model, lik, o.result.draws, o.standardizer.transform_inputs(o.data.subset(in.rows).inputs),
                                 o.standardizer.transform_inputs(*o.ood_inputs), in.name, &ood_scores);
  }
  write_json(c.dir / "metrics.json", metrics);
  report.files.push_back(c.dir / "metrics.json");
  report.metrics = metrics;

  if (cfg.figure_format != "none") {
    const std::string title = fmt::format("uqnn {}: {} draw{}", cfg.method, o.result.draws.size(), o.result.draws.size() == 1 ? "" : "s");
    if (!parts.empty()) draw_fit_figure(c, parts, title, rng, report);
    if (metrics.contains("ood")) draw_ood_figure(c, metrics.at("ood"), ood_scores, title, report);
    if (!o.result.history.empty()) draw_history_figure(c, report);
  }
  return report;
}

// The "ood" section (services/ood_metrics.hpp), compiled here so that the unity build's batches of
// sources stay as they are.
nlohmann::json ood_metrics(const Model& model, const Likelihood& likelihood, const Draws& draws, const Mat& in_distribution_std,
                           const Mat& ood_std, const std::string& in_name, std::pair<UncertaintyScores, UncertaintyScores>* scores) {
  if (likelihood.kind() != "categorical" && likelihood.kind() != "bernoulli")
    throw InputError(fmt::format("--ood-data: the detection scores are of class probabilities (entropy, mutual information); "
                                 "this fit's likelihood is {} (uqnn evaluate --ood-data scores a regression's predictive sd)",
                                 likelihood.kind()));
  if (in_distribution_std.cols() == 0 || ood_std.cols() == 0)
    throw InputError(fmt::format("--ood-data: {} in-distribution rows and {} OOD rows: both sets need rows", in_distribution_std.cols(),
                                 ood_std.cols()));
  // Each draw's class probabilities (the likelihood's mean: softmax or sigmoid of the outputs).
  const PredictiveDraws in = predict_draws(model, likelihood, draws, in_distribution_std);
  const PredictiveDraws out = predict_draws(model, likelihood, draws, ood_std);
  nlohmann::json j = {{"in_distribution", in_name},
                      {"in_distribution_rows", in_distribution_std.cols()},
                      {"ood_rows", ood_std.cols()},
                      {"positive_class", "out-of-distribution"}};
  UncertaintyScores in_scores = uncertainty_scores(in.means), out_scores = uncertainty_scores(out.means);
  for (const auto& [name, d] : ood_detection(in_scores, out_scores))
    j[name] = {{"auroc", d.auroc}, {"aupr", d.aupr}, {"fpr_at_95_tpr", d.fpr_at_95_tpr}};
  if (scores) *scores = {std::move(in_scores), std::move(out_scores)};
  if (draws.size() <= 1) j["note"] = "one draw: the mutual information is 0 for every row";
  return j;
}

}  // namespace uqnn
