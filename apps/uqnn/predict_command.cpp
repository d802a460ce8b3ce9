#include <iostream>

#include "commands.hpp"

namespace uqnn::cli {

Command add_predict(CLI::App& app) {
  auto* c = app.add_subcommand("predict", "predict with a fitted model (a `uqnn fit` output directory) on new inputs");
  auto cfg = std::make_shared<PredictConfig>();
  c->add_option("--model", cfg->model_dir, "directory written by `uqnn fit`")->required()->check(CLI::ExistingDirectory);
  c->add_option("--data", cfg->data, "CSV with the model's input columns (targets optional), or images (IDX, .npy, .npz) of the model's shape")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_option("--labels", cfg->labels, "labels (IDX or .npy) of an IDX or .npy --data (optional: then no accuracy)")->check(CLI::ExistingFile);
  c->add_option("--ood-data", cfg->ood_data,
                "out-of-distribution inputs (CSV or images): adds AUROC, AUPR and FPR at 95% TPR of the predictive entropy, "
                "mutual information and max probability, --data's rows against these")
      ->check(CLI::ExistingFile);
  c->add_option("--out", cfg->out, "output CSV (default: MODEL/predictions_<data>.csv)");
  c->add_option("--seed", cfg->seed, "seed for interval sampling")->capture_default_str();
  return [cfg]() {
    const FitReport report = run_predict(*cfg);
    std::cout << report.metrics.dump(2) << "\nwrote " << report.files.front().string() << '\n';
    if (report.metrics.contains("warnings"))
      for (const auto& w : report.metrics.at("warnings")) std::cerr << "warning: " << w.at("message").get<std::string>() << '\n';
    return 0;
  };
}

}  // namespace uqnn::cli
