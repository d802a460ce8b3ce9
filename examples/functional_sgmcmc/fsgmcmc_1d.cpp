// Seed 002 sec. 5.1 / App. E / Fig. 1: 1-D extrapolation with fSGLD, fSGHMC, SGLD and SGHMC.
//
// y = sin(3 pi x) + 0.3 cos(9 pi x) + 0.5 sin(7 pi x) + N(0, 0.5^2); 10 inputs from U(-0.75, -0.25)
// and 10 from U(0.25, 0.75); a 1-100-100-1 tanh network (10401 weights); Gaussian likelihood with
// the known noise sd 0.5. Functional methods: RBF GP prior fitted to the 20 points (Adam, 100
// steps, marginal likelihood), measurement set = the 20 training inputs + 40 points from U(-1, 1)
// redrawn at every step. SGLD / SGHMC: weight prior N(0, 1 / fan_in) per layer (the NNGP-style
// prior; the paper does not state its weight prior). All: full batch (N = 20), 2000 burn-in +
// 8000 iterations keeping every 100th (80 samples), eps_t decayed by 0.9 every 5000 steps, start
// at the network's Glorot initialisation. eps_0 = 1e-3 for SGHMC / fSGHMC (friction C = 10, unit
// mass) and 1e-3 / N = 5e-5 for SGLD / fSGLD: in the seed-002 eq. 1 convention, eps = 1e-3 is
// beyond the stability limit eps lambda_max < 2 of this 10401-weight network (lambda_max ~ 1e4:
// fSGLD diverges, SGLD oscillates), while 1e-3 / N is the paper's value for a per-datum loss.
// Usage: build/examples/fsgmcmc_1d [OUT_DIR] [SEED] [CHAINS] [EPS_LANGEVIN] [PRIOR_NOISE 0|1] [FRICTION] [EPS_HAMILTONIAN] [WEIGHT_PRIOR fanin|iso]
//
// Writes OUT/fig1_extrapolation.png (2 x 2 panels: mean, +-1 and +-2 sd of f, truth, data),
// OUT/results.md (mean widths of the +-2 sd band per region and CPU seconds per iteration) and
// OUT/predictive.csv.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numbers>

#include "uqnn/optim/gaussian_process_fit.hpp"
#include "uqnn//io/atomic_file.hpp"
#include "uqnn/mcmc/sgmcmc/functional_sgmcmc.hpp"
#include "uqnn/prob/functional_posterior.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/plot/plots.hpp"
#include "uqnn/run/run_chains.hpp"

using namespace uqnn;

namespace {

double truth(double x) {
  const double pi = std::numbers::pi;
  return std::sin(3 * pi * x) + 0.3 * std::cos(9 * pi * x) + 0.5 * std::sin(7 * pi * x);
}

struct Outcome {
  std::string name;
  Mat paths;  // [draws, grid]
  double cpu_seconds_per_iteration = 0;
  long divergent = 0;
};

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path out = "fsgmcmc-1d";
  std::uint64_t seed = 1;
  int chains = 1;
  double step_size = 1e-3 / 20.0, hmc_step_size = 1e-3, friction = 10.0;
  std::string weight_prior = "fanin";
  int prior_noise = 1;
  // Positional, in this order (as earlier versions took them), each optional.
  CLI::App app("fsgmcmc_1d: the 1-D regression of Wu et al. 2024 (Fig. 1), SGLD/SGHMC against their functional "
               "versions");
  app.add_option("out", out, "output directory")->capture_default_str();
  app.add_option("seed", seed, "random seed")->capture_default_str();
  app.add_option("chains", chains, "chains per method")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("step_size", step_size, "SGLD step size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("prior_noise", prior_noise, "1: the GP prior's measurement noise on, 0: off")->check(CLI::Range(0, 1))->capture_default_str();
  app.add_option("friction", friction, "SGHMC friction")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("hmc_step_size", hmc_step_size, "SGHMC step size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("weight_prior", weight_prior, "fanin | iso (N(0, 1) on every weight)")->check(CLI::IsMember({"fanin", "iso"}))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::filesystem::create_directories(out);

  // Data.
  Rng data_rng(seed, 1000);
  const Index N = 20;
  Mat X(1, N), Y(1, N);
  for (Index i = 0; i < N; ++i) {
    X(0, i) = i < 10 ? data_rng.uniform(-0.75, -0.25) : data_rng.uniform(0.25, 0.75);
    Y(0, i) = truth(X(0, i)) + 0.5 * data_rng.normal();
  }
  auto model = std::make_shared<Mlp>(MlpSpec{1, {100, 100}, 1, Activation::Tanh, InitScheme::Glorot});
  auto likelihood = make_gaussian_likelihood(0.5);
  auto weight_posterior = std::make_shared<Posterior>(model, likelihood, 
                                                           weight_prior == "iso" ? GaussianPrior::isotropic(model->num_params(), 1.0)
                                                                                 : GaussianPrior::fan_in_scaled(model->layout(), 1.0),
                                                           X, Y);

  // The pre-trained GP prior and the functional posterior.
  GpFitParams fit;
  fit.kernel = GpKernel::Rbf;
  Rng gp_rng(seed, 2000);
  const GaussianProcess gp = fit_gaussian_process(X, Y.row(0).transpose(), fit, gp_rng);
  MeasurementParams mp;
  mp.num_data_points = 40;  // min(40, N) = all 20 training inputs (see measurement_sampler.hpp)
  mp.num_box_points = 40;
  mp.box_lower = Vec::Constant(1, -1.0);
  mp.box_upper = Vec::Constant(1, 1.0);
  auto functional = std::make_shared<FunctionalPosterior>(weight_posterior, FunctionalPrior(model, gp, 1e-4, prior_noise),
                                                          MeasurementSampler(X, mp), seed);
  std::cout << "GP prior: " << gp.describe() << "\n";

  const auto schedule = sgmcmc::StepSizeSchedule::step_decay(step_size, 0.9, 5000);
  sgmcmc::SgldParams sgld;
  sgld.schedule = schedule;
  sgmcmc::SghmcParams sghmc;
  sghmc.schedule = sgmcmc::StepSizeSchedule::step_decay(hmc_step_size, 0.9, 5000);
  sghmc.friction = friction;

  RunConfig run;
  run.num_chains = chains;
  run.num_threads = 1;
  run.num_warmup = 2000;
  run.num_draws = 8000;
  run.thin = 100;
  run.seed = seed;
  const InitialPointFn init = [&](int, Rng& rng) { return model->initial_params(rng); };

  const Index G = 201;
  Vec grid(G);
  for (Index g = 0; g < G; ++g) grid[g] = -1.0 + 2.0 * static_cast<double>(g) / static_cast<double>(G - 1);
  const Mat grid_inputs = grid.transpose();

  std::vector<std::pair<std::string, SamplerFactory>> methods{
      {"fSGLD", [&] { return sgmcmc::make_fsgld_sampler(functional, sgld); }},
      {"fSGHMC", [&] { return sgmcmc::make_fsghmc_sampler(functional, sghmc); }},
      {"SGLD", [&] { return std::make_unique<sgmcmc::SgldSampler>(weight_posterior, sgld); }},
      {"SGHMC", [&] { return std::make_unique<sgmcmc::SghmcSampler>(weight_posterior, sghmc); }},
  };
  std::vector<Outcome> outcomes;
  for (const auto& [name, factory] : methods) {
    const std::clock_t start = std::clock();
    const RunResult r = run_chains(run, factory, init);
    const double cpu = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
    Outcome o;
    o.name = name;
    o.cpu_seconds_per_iteration = cpu / static_cast<double>(chains * (run.num_warmup + run.num_draws));
    o.divergent = r.num_divergent() + r.num_divergent_warmup();
    const Mat draws = r.pooled();
    o.paths.resize(draws.rows(), G);
    for (Index d = 0; d < draws.rows(); ++d) o.paths.row(d) = model->forward(draws.row(d).transpose(), grid_inputs).row(0);
    std::cout << fmt::format("{}: {} draws, {:.3g} CPU ms/iteration, {} divergent\n", name, draws.rows(),
                             1e3 * o.cpu_seconds_per_iteration, o.divergent);
    outcomes.push_back(std::move(o));
  }

  // Figure: as seed 002 Fig. 1 (a), (b), (d), (e).
  Vec truth_grid(G);
  for (Index g = 0; g < G; ++g) truth_grid[g] = truth(grid[g]);
  std::vector<plot::Predictive1d> panels;
  for (const auto& o : outcomes) {
    plot::Predictive1d p;
    p.title = o.name;
    p.x_train = X.row(0).transpose();
    p.y_train = Y.row(0).transpose();
    p.x_grid = grid;
    p.mean = o.paths.colwise().mean().transpose();
    p.sd = ((o.paths.rowwise() - p.mean.transpose()).array().square().colwise().sum() / static_cast<double>(o.paths.rows() - 1))
               .sqrt()
               .transpose();
    p.truth = truth_grid;
    panels.push_back(p);
  }
  plot::SideBySideOptions fig;
  fig.title = "Wu et al. 2024, Fig. 1: 1-D extrapolation, mean and +-1/+-2 sd of f (80 samples per chain)";
  fig.cols = 2;
  plot::plot_side_by_side(out / "fig1_extrapolation.png", panels, fig);

  // Band widths (+-2 sd: 4 sd) averaged over regions of the grid.
  struct Region {
    std::string name;
    double lo, hi;
  };
  const std::vector<Region> regions{{"left [-1,-0.75]", -1.0, -0.75},
                                    {"data [-0.75,-0.25]", -0.75, -0.25},
                                    {"gap [-0.25,0.25]", -0.25, 0.25},
                                    {"data [0.25,0.75]", 0.25, 0.75},
                                    {"right [0.75,1]", 0.75, 1.0}};
  std::string table = fmt::format("GP prior: {} (noise variance in the prior covariance: {}); seed {}, {} chain(s), eps0 {} (SGLD, fSGLD) and {} (SGHMC, fSGHMC), friction {}, SGLD/SGHMC weight prior {}\n\n",
                                  gp.describe(), prior_noise ? "yes" : "no", seed, chains, step_size, hmc_step_size, friction, weight_prior);
  table += "| method |";
  for (const auto& r : regions) table += " " + r.name + " |";
  table += " RMSE to truth in data regions | CPU ms / iteration | divergent |\n|---|";
  for (std::size_t i = 0; i <= regions.size() + 2; ++i) table += "---|";
  table += "\n";
  for (std::size_t m = 0; m < outcomes.size(); ++m) {
    table += "| " + outcomes[m].name + " |";
    for (const auto& r : regions) {
      double sum = 0;
      int count = 0;
      for (Index g = 0; g < G; ++g)
        if (grid[g] >= r.lo && grid[g] <= r.hi) {
          sum += 4.0 * panels[m].sd[g];
          ++count;
        }
      table += fmt::format(" {:.3f} |", sum / count);
    }
    double se = 0;
    int count = 0;
    for (Index g = 0; g < G; ++g)
      if (std::abs(std::abs(grid[g]) - 0.5) <= 0.25) {
        se += std::pow(panels[m].mean[g] - truth_grid[g], 2);
        ++count;
      }
    table += fmt::format(" {:.3f} | {:.3f} | {} |\n", std::sqrt(se / count), 1e3 * outcomes[m].cpu_seconds_per_iteration,
                         outcomes[m].divergent);
  }
  table += fmt::format("\nfSGLD / SGLD CPU time per iteration: {:.2f}x; fSGHMC / SGHMC: {:.2f}x\n",
                       outcomes[0].cpu_seconds_per_iteration / outcomes[2].cpu_seconds_per_iteration,
                       outcomes[1].cpu_seconds_per_iteration / outcomes[3].cpu_seconds_per_iteration);
  std::cout << table;
  atomic_write_text(out / "results.md", table);
  std::string csv = "x,truth";
  for (const auto& o : outcomes) csv += "," + o.name + "_mean," + o.name + "_sd";
  csv += "\n";
  for (Index g = 0; g < G; ++g) {
    csv += fmt::format("{},{}", grid[g], truth_grid[g]);
    for (const auto& p : panels) csv += fmt::format(",{},{}", p.mean[g], p.sd[g]);
    csv += "\n";
  }
  atomic_write_text(out / "predictive.csv", csv);
  std::cout << "wrote " << (out / "fig1_extrapolation.png").string() << ", results.md, predictive.csv\n";
  return 0;
}
