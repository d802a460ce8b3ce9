#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn::cli {

void add_fit_options(CLI::App& c, FitConfig& cfg, std::string& arch, std::string& noise) {
  std::string methods;
  for (const auto& m : method_names()) methods += (methods.empty() ? "" : "|") + m;
  c.add_option("--method", cfg.method, "inference method: " + methods)->capture_default_str();
  c.add_option("--seed", cfg.seed, "random seed (same seed, same result, whatever the thread count)")->capture_default_str();
  c.add_option("--out", cfg.out_dir, "output directory")->capture_default_str();
  c.add_option("--figure", cfg.figure_format, "figure format")->check(CLI::IsMember({"png", "svg", "none"}))->capture_default_str();
  // Model.
  c.add_option("--model", cfg.model.kind, "network: mlp | rnet (QUiNN's residual net)")->capture_default_str();
  c.add_option("--arch", arch, "hidden widths, comma separated; empty (--arch '') gives the Linear model")->capture_default_str();
  c.add_option("--activation", cfg.model.activation, "tanh | relu | silu | sigmoid | sine | identity")->capture_default_str();
  c.add_option("--init", cfg.model.init, "glorot | he | torch (default: glorot for tanh-like, he for relu-like)");
  c.add_option("--rnet-width", cfg.model.rnet_width, "rnet: state width")->capture_default_str();
  c.add_option("--rnet-layers", cfg.model.rnet_layers, "rnet: number of layers L (L + 1 residual updates)")->capture_default_str();
  c.add_option("--precision", cfg.model.precision,
               "arithmetic of the network's forward and reverse passes: float64 | float32 (JAX/NumPyro's default; "
               "about 1.8x faster gradients, the sampler stays double)")
      ->check(CLI::IsMember({"float64", "float32"}))
      ->capture_default_str();
  c.add_option("--rnet-order", cfg.model.rnet_weight_order, "rnet: polynomial order of the weights over depth; -1 = one matrix per layer")->capture_default_str();
  // Probability.
  c.add_option("--likelihood", cfg.probability.likelihood, "gaussian | heteroscedastic | bernoulli | categorical")->capture_default_str();
  c.add_option("--noise", noise, "Gaussian noise sd in the target's units (default: learned, with log sigma ~ N(0, 3^2) in standardised units)");
  c.add_option("--classes", cfg.probability.num_classes, "number of classes (categorical)")->capture_default_str();
  c.add_option("--prior", cfg.probability.prior, "gaussian | fan-in (sigma / sqrt(fan_in) per layer) | mixture | laplace")->capture_default_str();
  c.add_option("--prior-sigma", cfg.probability.prior_sigma, "prior sd (gaussian), scale (fan-in, laplace)")->capture_default_str();
  c.add_option("--mixture-pi", cfg.probability.mixture_pi, "scale-mixture weight pi")->capture_default_str();
  c.add_option("--mixture-sigma1", cfg.probability.mixture_sigma1, "scale-mixture sigma1")->capture_default_str();
  c.add_option("--mixture-sigma2", cfg.probability.mixture_sigma2, "scale-mixture sigma2")->capture_default_str();
  // Training.
  auto& t = cfg.training;
  c.add_option("--optimizer", t.optimizer.name, "adam | sgd")->capture_default_str();
  c.add_option("--lr", t.optimizer.learning_rate, "learning rate")->capture_default_str();
  c.add_option("--weight-decay", t.optimizer.weight_decay, "L2 weight decay added to the gradient")->capture_default_str();
  c.add_option("--momentum", t.optimizer.momentum, "sgd momentum")->capture_default_str();
  c.add_option("--epochs", t.epochs, "training epochs")->capture_default_str();
  c.add_option("--batch-size", t.batch_size, "minibatch size; 0 = full batch")->capture_default_str();
  c.add_option("--lr-schedule", t.schedule.name, "constant | step | exponential | plateau")->capture_default_str();
  c.add_option("--lr-step-every", t.schedule.step_every, "step schedule: epochs between reductions")->capture_default_str();
  c.add_option("--lr-gamma", t.schedule.gamma, "step / exponential factor")->capture_default_str();
  c.add_option("--lr-factor", t.schedule.factor, "plateau reduction factor")->capture_default_str();
  c.add_option("--lr-patience", t.schedule.patience, "plateau patience (epochs)")->capture_default_str();
  c.add_option("--early-stopping", t.early_stopping_patience, "stop after this many epochs without validation improvement; 0 = off")->capture_default_str();
  add_approx_options(c, cfg);
  add_functional_options(c, cfg);
  add_vi_hmc_options(c, cfg);
  // MCMC (amcmc, hmc, mala, nuts, sgld, sghmc, psgld).
  auto& m = cfg.mcmc;
  c.add_option("--chains", m.chains, "MCMC chains")->capture_default_str();
  c.add_option_function<int>(
       "--threads",
       [&cfg](const int& n) {
         cfg.mcmc.threads = n;
         cfg.method_options["threads"] = n;  // ensemble members (approx_options)
       },
       "threads for chains and ensemble members (0 = automatic); results do not depend on it")
      ->default_str("0");
  c.add_option("--warmup", m.warmup, "warmup (adaptation) or burn-in iterations per chain")->capture_default_str();
  c.add_option("--draws", m.draws, "sampling iterations per chain")->capture_default_str();
  c.add_option("--thin", m.thin, "keep every thin-th draw")->capture_default_str();
  c.add_option("--chain-init", m.init, "chain starts: map (own MAP fit per chain) | random | prior")->capture_default_str();
  c.add_option("--step-size", m.step_size, "initial (adapted) or fixed step size; 0 = automatic")->capture_default_str();
  c.add_option("--num-steps", m.num_steps, "hmc leapfrog steps L")->capture_default_str();
  c.add_option("--max-depth", m.max_depth, "nuts maximum tree depth")->capture_default_str();
  c.add_option("--target-accept", m.target_accept, "warmup target acceptance (hmc, nuts)")->capture_default_str();
  c.add_option("--metric", m.metric, "diag | dense | unit (hmc, nuts)")->capture_default_str();
  c.add_flag("!--no-adapt", m.adapt, "no warmup adaptation (fixed --step-size and unit metric)");
  c.add_option("--jitter", m.jitter, "step-size jitter fraction in [0, 1)")->capture_default_str();
  c.add_option("--am-gamma", m.am_gamma, "adaptive Metropolis gamma")->capture_default_str();
  c.add_option("--am-t0", m.am_t0, "adaptive Metropolis: first adaptation")->capture_default_str();
  c.add_option("--am-t-adapt", m.am_t_adapt, "adaptive Metropolis: adaptation period")->capture_default_str();
  c.add_option("--sg-batch-size", m.batch_size, "sgld/sghmc/psgld/fsgld/fsghmc minibatch size; 0 = full batch")->capture_default_str();
  c.add_option("--schedule", m.schedule, "sg step size: constant | polynomial a(b+t)^-gamma | step (decay every k)")->capture_default_str();
  c.add_option("--schedule-b", m.schedule_b, "polynomial schedule b")->capture_default_str();
  c.add_option("--schedule-gamma", m.schedule_gamma, "polynomial schedule gamma")->capture_default_str();
  c.add_option("--decay", m.decay, "step schedule: factor")->capture_default_str();
  c.add_option("--decay-every", m.decay_every, "step schedule: iterations between decays")->capture_default_str();
  c.add_option("--friction", m.friction, "sghmc friction C")->capture_default_str();
  c.add_option("--sghmc-steps", m.sghmc_steps, "sghmc/fsghmc: gradient steps per draw (m of seed 002 Alg. 2)")->capture_default_str();
  c.add_flag("--resample-momentum", m.resample_momentum, "sghmc/fsghmc: redraw the momentum before each draw's steps (seed 002 Alg. 2)");
  c.add_option("--psgld-alpha", m.psgld_alpha, "psgld RMSprop decay alpha")->capture_default_str();
  c.add_option("--psgld-lambda", m.psgld_lambda, "psgld regulariser lambda")->capture_default_str();
  c.add_flag("--quiet", [&cfg](std::int64_t) { cfg.progress = false; }, "no progress messages on stderr");
  add_dei_options(c, cfg);
}

void finish_fit_config(FitConfig& cfg, const std::string& arch, const std::string& noise) {
  cfg.model.hidden.clear();
  std::stringstream ss(arch);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      std::size_t used = 0;
      const long width = std::stol(item, &used);
      if (used != item.size() || width < 1) throw std::invalid_argument("");
      cfg.model.hidden.push_back(width);
    } catch (const std::exception&) {
      throw InputError("--arch '" + arch + "': '" + item + "' is not a positive integer width (example: --arch 10,10)");
    }
  }
  if (!noise.empty()) {
    try {
      std::size_t used = 0;
      cfg.probability.noise = std::stod(noise, &used);
      if (used != noise.size()) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw InputError("--noise '" + noise + "' is not a number");
    }
  }
}

void print_fit_report(const FitConfig& cfg, const FitReport& report) {
  const auto& m = report.metrics;
  std::cout << fmt::format("uqnn {}: {} parameters, {} draw(s), {:.2f} s\n", cfg.method, m.at("num_params").get<Index>(),
                           m.at("num_draws").get<Index>(), m.at("seconds").get<double>());
  if (m.contains("splits"))
    for (const auto& [split, s] : m.at("splits").items()) {
      std::cout << fmt::format("  {:<10} n={:<6}", split, s.at("n").get<Index>());
      for (const char* key : {"rmse", "nll", "lppd", "coverage_95"})
        if (s.contains(key)) std::cout << fmt::format(" {}={:.4g}", key, s.at(key).get<double>());
      std::cout << '\n';
    }
  if (!report.summary_text.empty()) std::cout << report.summary_text;
  std::cout << "  wrote:";
  for (const auto& f : report.files) std::cout << ' ' << f.string();
  std::cout << '\n';
}

Command add_fit(CLI::App& app) {
  auto* c = app.add_subcommand("fit", "fit a network to a CSV data set with a UQ method and write predictions, metrics, draws and figures");
  c->set_config("--config", "", "TOML file with any of these options (keys = long option names without --)");
  auto cfg = std::make_shared<FitConfig>();
  auto arch = std::make_shared<std::string>("10,10");
  auto noise = std::make_shared<std::string>();
  auto targets = std::make_shared<std::vector<std::string>>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  cfg->progress = true;
  c->add_option("--data", cfg->data.path, "CSV file with a header row")->required()->check(CLI::ExistingFile);
  c->add_option("--target", *targets, "target column(s) (default: the last column)");
  c->add_option("--inputs", *inputs, "input columns (default: all but the targets)")->delimiter(',');
  c->add_flag("!--no-standardize", cfg->data.standardize, "do not standardise inputs and targets (priors are then in the data's units)");
  c->add_option("--valid-fraction", cfg->data.validation_fraction, "fraction of rows held out for validation (model selection)")->capture_default_str();
  c->add_option("--valid", cfg->data.validation_path, "held-out CSV (same columns) used as validation data (dei-nuts: LPPD monitoring)")->check(CLI::ExistingFile);
  c->add_option("--test-fraction", cfg->data.test_fraction, "fraction of rows held out for testing")->capture_default_str();
  c->add_option("--split-seed", cfg->data.split_seed, "seed of the random split")->capture_default_str();
  c->add_option("--train-indices", cfg->data.train_indices, "file of 0-based training row indices (one per line)")->check(CLI::ExistingFile);
  c->add_option("--test-indices", cfg->data.test_indices, "file of 0-based test row indices")->check(CLI::ExistingFile);
  add_fit_options(*c, *cfg, *arch, *noise);
  return [cfg, arch, noise, targets, inputs]() {
    finish_fit_config(*cfg, *arch, *noise);
    cfg->data.targets = *targets;
    cfg->data.inputs = *inputs;
    print_fit_report(*cfg, run_fit(*cfg));
    return 0;
  };
}

}  // namespace uqnn::cli
