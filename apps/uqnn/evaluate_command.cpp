#include <iostream>

#include "commands.hpp"
#include "uqnn/services/evaluate.hpp"

namespace uqnn::cli {

Command add_evaluate(CLI::App& app) {
  auto* c = app.add_subcommand("evaluate",
                               "score a fit (a `uqnn fit` directory) or another tool's predictions on labelled rows: RMSE, NLL, "
                               "CRPS, interval coverage and the calibration curve; accuracy, Brier, ECE/MCE, AURC; OOD detection; "
                               "conformal recalibration");
  auto cfg = std::make_shared<EvaluateConfig>();
  c->add_option("--model", cfg->model_dir, "directory written by `uqnn fit`")->check(CLI::ExistingDirectory);
  c->add_option("--predictions", cfg->predictions,
                "CSV of another tool's predictions, one row per labelled row: columns mean and sd, or sample_* columns, or prob_0, "
                "prob_1, ...")
      ->check(CLI::ExistingFile);
  c->add_option("--data", cfg->data, "labelled rows: the model's input and target columns (with --predictions: the target column)")
      ->check(CLI::ExistingFile);
  c->add_option("--target", cfg->target, "target column of --data for --predictions")->capture_default_str();
  c->add_option("--ood-data", cfg->ood_data, "out-of-distribution rows (the model's inputs): AUROC, AUPR and FPR at 95% TPR")
      ->check(CLI::ExistingFile);
  c->add_option("--ood-predictions", cfg->ood_predictions, "class probabilities (prob_* columns) of out-of-distribution rows, with --predictions")
      ->check(CLI::ExistingFile);
  c->add_option("--out", cfg->out, "output directory (default: MODEL/evaluation_<data>, or uqnn-evaluate)");
  c->add_option("--levels", cfg->levels, "nominal levels of the central intervals and conformal sets")->delimiter(',')->capture_default_str();
  c->add_option("--bins", cfg->bins, "calibration bins (equal-width and equal-mass)")->capture_default_str();
  c->add_option("--conformal", cfg->conformal,
                "recalibrate on held-out rows: split (normalised by the predictive sd; Lei et al. 2018), cqr (Romano et al. 2019), "
                "aps (Romano et al. 2020), raps (Angelopoulos et al. 2021), temperature (Guo et al. 2017)");
  c->add_option("--calibration-fraction", cfg->calibration_fraction, "share of the --data rows held out for --conformal");
  c->add_option("--calibration-data", cfg->calibration_data, "labelled rows for --conformal (with --predictions: a predictions CSV with the target)")
      ->check(CLI::ExistingFile);
  c->add_option("--raps-lambda", cfg->raps_lambda, "RAPS penalty per class beyond --raps-k-reg")->capture_default_str();
  c->add_option("--raps-k-reg", cfg->raps_k_reg, "classes free of the RAPS penalty")->capture_default_str();
  c->add_option("--seed", cfg->seed, "seed of the calibration split and of randomised sets")->capture_default_str();
  auto no_figures = std::make_shared<bool>(false);
  c->add_flag("--no-figures", *no_figures, "write metrics.json only");
  return [cfg, no_figures]() {
    cfg->figures = !*no_figures;
    const EvaluateReport report = run_evaluate(*cfg);
    std::cout << report.metrics.dump(2) << "\nwrote:";
    for (const auto& f : report.files) std::cout << ' ' << f.string();
    std::cout << '\n';
    for (const auto& w : report.figure_warnings) std::cerr << "warning: " << w << '\n';
    return 0;
  };
}

}  // namespace uqnn::cli
