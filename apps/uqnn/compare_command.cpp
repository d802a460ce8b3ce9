#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "fit_flags.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/services/compare.hpp"

namespace uqnn::cli {

namespace {

/// Every compared method's options checked (make_fit_config), as run_compare does before any fit.
bool run_compare_checks(const CompareConfig& cfg) {
  for (const auto& method : cfg.methods) {
    FitRequest r = cfg.request;
    r.given.push_back({"method", method, "--methods " + method});
    r.also_accept_methods = cfg.methods;
    (void)make_fit_config(r);
  }
  return true;
}

}  // namespace

Command add_compare(CLI::App& app) {
  auto* c = app.add_subcommand("compare", "fit several methods on one data set; write their bands side by side and a metrics table");
  auto methods = std::make_shared<std::vector<std::string>>();
  c->add_option("--methods", *methods, "methods to compare, comma separated (e.g. map,ens,vi,laplace,swag)")->delimiter(',');
  auto reference = std::make_shared<std::string>();
  c->add_option("--reference", *reference,
                "score every method's predictive against a reference on the test rows: nuts (fit NUTS with these options; "
                "give it a long run) or a `uqnn fit` run directory. Classification: top-1 agreement and total variation; "
                "regression: 1-Wasserstein distance per row and the ratio of predictive sds (Izmailov et al. 2021)");
  const auto flags = FitFlags::add(*c, {"method"});
  return [c, flags, methods, reference]() {
    if (flags->help_requested()) {
      flags->print_help(std::cout, *c);
      return 0;
    }
    if (methods->empty()) throw InputError("--methods is required: the methods to compare, e.g. --methods map,ens,vi");
    CompareConfig cfg;
    cfg.request = flags->request({{"out", "uqnn-compare"}});
    cfg.methods = *methods;
    cfg.reference = *reference;
    if (!cfg.reference.empty() && cfg.reference != "nuts" && !std::filesystem::is_directory(cfg.reference))
      throw InputError("--reference '" + cfg.reference + "' is neither nuts nor a `uqnn fit` run directory");
    // As `uqnn fit`: a file in --out's place is an error before any work (not a filesystem_error
    // after the options are checked, exit 1).
    std::filesystem::path out = "uqnn-compare";
    for (const GivenOption& g : cfg.request.given)
      if (g.name == "out" && g.value.is_string()) out = g.value.get<std::string>();
    if (std::error_code ec; std::filesystem::exists(out, ec) && !std::filesystem::is_directory(out, ec)) {
      (void)run_compare_checks(cfg);  // the options' own errors first, as `uqnn fit` gives them
      throw InputError("--out '" + out.string() + "' is a file, not a directory: choose another --out");
    }
    const CompareReport report = run_compare(cfg);
    std::cout << "uqnn compare:\n";
    for (const auto& [method, row] : report.table.items()) {
      if (row.contains("error")) continue;
      std::cout << "  " << method << ": " << row.at("num_draws") << " draws, " << row.at("seconds") << " s";
      if (row.contains("splits") && row.at("splits").contains("train")) {
        const auto& t = row.at("splits").at("train");
        std::cout << ", train rmse " << t.value("rmse", 0.0) << " nll " << t.value("nll", 0.0);
      }
      std::cout << '\n';
    }
    std::cout << "  wrote:";
    for (const auto& f : report.files) std::cout << ' ' << f.string();
    std::cout << '\n';
    // Last, so they are what a user sees; exit 3: the comparison is written, but not whole.
    for (const auto& method : report.failed)
      std::cerr << "error: " << method << " failed (the others are compared): " << report.table.at(method).at("error").get<std::string>() << '\n';
    return report.failed.empty() ? 0 : 3;
  };
}

}  // namespace uqnn::cli
