#pragma once
// Helpers shared by the VI-HMC reproductions (seed 000): MAP pre-training with restarts, VI from a
// start, full-space HMC through the driver, predictive draws, timing.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>

#include "uqnn/adaptation/step_size.hpp"
#include "uqnn/approx/vi.hpp"
#include "uqnn/hybrid/vi_hmc.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/optim/trainer.hpp"

namespace uqnn::examples {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// The best of `restarts` Adam fits of -log p / N from the model's initialisation.
inline Vec map_fit(const std::shared_ptr<const Posterior>& post, Index restarts, Index epochs, double lr, std::uint64_t seed) {
  TrainParams t;
  t.optimizer.name = "adam";  // the paper's optimiser (the library's default for a MAP is L-BFGS)
  t.epochs = epochs;
  t.optimizer.learning_rate = lr;
  auto objective = std::make_shared<NegativeLogPosteriorObjective>(post);
  Vec best;
  double best_lp = -std::numeric_limits<double>::infinity();
  for (Index r = 0; r < restarts; ++r) {
    Rng rng(seed, static_cast<std::uint64_t>(r));
    const TrainResult fit = train(*objective, post->initial_point(rng), t, rng);
    Vec g;
    const double lp = post->log_density_and_grad(fit.best_theta, g);
    if (lp > best_lp) {
      best_lp = lp;
      best = fit.best_theta;
    }
  }
  return best;
}

/// Full-space HMC (the paper's baseline): fixed step size (found by dual averaging for 0.8 when
/// `step_size` is 0), path length L from the rule of Appendix C with `spread` (sd) s.
struct FullHmc {
  RunResult run;
  double step_size = 0.0;
  int num_leapfrog_steps = 0;
};
inline FullHmc full_hmc(const std::shared_ptr<const Posterior>& post, const Vec& start, double spread, double step_size,
                        const RunConfig& run, double init_spread_sd = 0.0, int max_steps = 1000) {
  FullHmc out;
  if (step_size == 0.0) {
    FindStepSizeOptions o;
    o.num_iterations = 300;
    o.seed = run.seed;
    step_size = find_step_size(*post, start, 0.8, o).step_size;
  }
  HmcConfig c;
  c.kernel.step_size = step_size;
  c.kernel.num_leapfrog_steps =
      paper_path_length(Vec::Constant(1, spread), step_size, SpreadStatistic::Max, SpreadMeasure::StandardDeviation, max_steps);
  c.kernel.metric = make_unit_metric(post->dim());
  c.warmup.adapt_step_size = false;
  c.warmup.metric = MetricAdaptation::None;
  out.step_size = step_size;
  out.num_leapfrog_steps = c.kernel.num_leapfrog_steps;
  const InitialPointFn init = [start, init_spread_sd](int, Rng& rng) -> Vec {
    return init_spread_sd > 0 ? Vec(start + init_spread_sd * rng.normal_vector(start.size())) : start;
  };
  out.run = run_chains(run, make_sampler_factory(post, c), init);
  return out;
}

/// Every kept draw of a run (chain-major) as full theta; `expand` maps run coordinates to theta.
inline std::vector<Vec> draws_of(const RunResult& r, const std::function<Vec(const Vec&)>& expand = {}) {
  std::vector<Vec> out;
  for (int c = 0; c < r.num_chains(); ++c)
    for (Index d = 0; d < r.min_draws(); ++d) {
      const Vec z = r.draws[static_cast<std::size_t>(c)].row(d).transpose();
      out.push_back(expand ? expand(z) : z);
    }
  return out;
}

/// Function draws f(theta_k, grid) of at most `max_draws` evenly spaced draws: [draws, grid points].
inline Mat function_draws(const Model& model, const std::vector<Vec>& draws, const Mat& grid, Index max_draws = 400) {
  const Index n = static_cast<Index>(draws.size());
  const Index stride = std::max<Index>(1, n / max_draws);
  const Index kept = (n + stride - 1) / stride;
  Mat F(kept, grid.cols());
  for (Index k = 0; k < kept; ++k) F.row(k) = model.forward(draws[static_cast<std::size_t>(k * stride)].head(model.num_params()), grid);
  return F;
}

/// Mean acceptance statistic of a run's kept draws.
inline double mean_accept(const RunResult& r) {
  double sum = 0;
  long n = 0;
  for (const auto& chain : r.stats)
    for (const auto& s : chain) {
      sum += s.accept_prob;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : 0.0;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) { atomic_write_text(path, text); }

}  // namespace uqnn::examples
