#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "fit_flags.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn::cli {

int print_fit_report(const FitConfig& cfg, const FitReport& report) {
  const auto& m = report.metrics;
  if (m.is_null()) return 0;  // an MPI rank other than 0: rank 0 writes and reports
  std::cout << fmt::format("uqnn {}: {} parameters, {} draw(s), {:.2f} s\n", cfg.method, m.at("num_params").get<Index>(),
                           m.at("num_draws").get<Index>(), m.at("seconds").get<double>());
  if (m.contains("splits"))
    for (const auto& [split, s] : m.at("splits").items()) {
      std::cout << fmt::format("  {:<10} n={:<6}", split, s.at("n").get<Index>());
      for (const char* key : {"rmse", "accuracy", "nll", "lppd", "coverage_95", "brier", "ece"})
        if (s.contains(key)) std::cout << fmt::format(" {}={:.4g}", key, s.at(key).get<double>());
      std::cout << '\n';
    }
  if (!report.summary_text.empty()) std::cout << report.summary_text;
  std::cout << "  wrote:";
  for (const auto& f : report.files) std::cout << ' ' << f.string();
  std::cout << '\n';
  for (const auto& note : report.notes) std::cout << "  note: " << note << '\n';
  // Last, so they are what a user sees: reasons not to trust the result (metrics.json "warnings").
  for (const auto& w : report.figure_warnings) std::cerr << "warning: " << w << '\n';
  if (m.contains("warnings"))
    for (const auto& w : m.at("warnings")) std::cerr << "warning: " << w.at("message").get<std::string>() << '\n';
  // Stopped by a signal after writing what was drawn: 128 + the signal, as if it had killed us.
  if (const int signal_number = stop_signal(); signal_number != 0) return 128 + signal_number;
  return report.not_finite ? 3 : 0;  // files written, but NaN or infinity is not a result
}

Command add_fit(CLI::App& app) {
  auto* c = app.add_subcommand("fit", "fit a network to a CSV data set with a UQ method and write predictions, metrics, draws and figures");
  const auto flags = FitFlags::add(*c);
  auto resume = std::make_shared<std::string>();
  c->add_option("--resume", *resume,
                "DIR: continue the stopped run whose --out is DIR from its chains' checkpoint, bitwise as if it had not "
                "stopped (only --threads, --quiet and --checkpoint-every may be given with it)")
      ->group("Run and output");
  return [c, flags, resume]() {
    if (flags->help_requested()) {
      flags->print_help(std::cout, *c);
      return 0;
    }
    if (!resume->empty()) {
      const FitConfig cfg = resume_fit_config(*resume, flags->request());
      return print_fit_report(cfg, run_fit(cfg));
    }
    const FitConfig cfg = make_fit_config(flags->request());
    if (cfg.data.path.empty()) throw InputError("--data is required: a CSV file with a header row");
    return print_fit_report(cfg, run_fit(cfg));
  };
}

}  // namespace uqnn::cli
