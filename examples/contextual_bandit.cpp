// The Mushroom contextual bandit of seed 002 (sec. 5.4, Fig. 2; after Blundell et al. 2015, sec. 5.3):
// Thompson sampling with online Bayesian neural networks, cumulative regret against an oracle that
// eats exactly the edible mushrooms.
//
// Each round shows a mushroom (uniformly at random from the 8124); the agent eats or rejects it.
// Eating an edible one rewards 5, eating a poisonous one -35 with probability p (p = 0.4, 0.5, 0.6:
// the three patterns) and 5 otherwise (Blundell et al.); rejecting rewards 0. The regret of a round is
// the expected one (40 p - 5 for a poisonous mushroom eaten, 5 for an edible one rejected), so the
// curves show the agents' decisions without the reward draws' noise.
//
// Agents (predictive/thompson_sampling.hpp, run_bandit_experiment): fsgld, sgld, vi (Bayes by Backprop), ens (5 networks,
// a random one per round) and map (greedy: no exploration). As in seed 002 App. E: an
// input-100-100-output relu network (inputs: the 117 one-hot features and the one-hot action;
// output: the reward), the last 4096 tuples, minibatches of 64, 64 updates per round, 10,000
// rounds; SG-MCMC step eta = 1e-2 (eps = eta / 4096) with decay 0.9 every 1000 rounds (the paper
// gives no period); Adam at 1e-3 for vi, ens and map. fsgld's RBF GP prior is fitted (100 Adam steps) on
// 1000 tuples of random play drawn before the run (seed 002: "pre-trained on 1000 randomly sampled
// points"); those tuples are not in any agent's buffer. Reward model y / 20 ~ N(f, 0.25^2); weight prior
// N(0, 1 / fan_in) per layer, which fsgld keeps beside its GP prior (--fsgld-weight-prior false: seed
// 002's eq. 6 alone, whose free weights random-walk; docs/contextual-bandit.md).
//
// Usage: contextual_bandit [--data mushroom.csv] [--agents fsgld,sgld,vi,ens,map] [--patterns 0.4,0.5,0.6]
//                          [--rounds 10000] [--updates 64] [--batch 64] [--buffer 4096] [--arch 100,100]
//                          [--members 5] [--sg-step 1e-2] [--fsgld-weight-prior true] [--adam-lr 1e-3] [--seed 1]
//                          [--threads 2] [--out DIR]
//   writes DIR/bandit.csv (agent, p, round, cumulative regret and reward every 10 rounds),
//   DIR/bandit.md (final regret, mistakes and time per agent and pattern) and DIR/regret.png.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "list_argument.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/data/dataset.hpp"
#include "uqnn/io/atomic_file.hpp"
#include "uqnn/plot/figure.hpp"
#include "uqnn/predictive/thompson_sampling.hpp"

namespace {

using namespace uqnn;

struct Settings {
  std::filesystem::path data = std::filesystem::path(UQNN_UCI_DIR) / "mushroom.csv";
  std::vector<std::string> agents{"fsgld", "sgld", "vi", "ens", "map"};
  std::vector<double> patterns{0.4, 0.5, 0.6};
  BanditRunParams run;
  BanditAgentParams agent;
  std::vector<Index> arch{100, 100};
  std::uint64_t seed = 1;
  int threads = 2;
  std::filesystem::path out = "contextual_bandit";
};

struct Job {
  std::string agent;
  double p = 0;
  std::uint64_t seed = 0;
  BanditTrace trace;
  double seconds = 0;
  std::string error;
};

void run_job(const Settings& s, const MushroomBandit& base, Job& job) {
  const auto start = std::chrono::steady_clock::now();
  MushroomBandit bandit = base;
  bandit.poison_probability = job.p;
  BanditExperiment experiment;
  experiment.agent = s.agent;
  experiment.agent.kind = job.agent;
  experiment.run = s.run;
  experiment.hidden = s.arch;
  experiment.seed = job.seed;
  job.trace = run_bandit_experiment(bandit, experiment);
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int run(int argc, char** argv) {
  Settings s;
  std::string data_path = s.data.string(), out = s.out.string();
  CLI::App app("contextual_bandit: Thompson sampling on the Mushroom bandit (Wu et al. 2024, sec. 5.4); writes "
               "DIR/bandit.csv, DIR/bandit.md and DIR/regret.png (cumulative regret per agent, one panel per poison "
               "probability)");
  app.add_option("--data", data_path, "mushroom.csv: 117 one-hot features and `edible`")->capture_default_str();
  app.add_option("--agents", s.agents, "fsgld, sgld, vi, ens, map")->delimiter(',')->capture_default_str();
  app.add_option("--patterns", s.patterns, "poison probabilities p")->delimiter(',')->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--rounds", s.run.rounds, "rounds per run")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--updates", s.run.updates_per_round, "gradient steps per round")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--batch", s.agent.batch_size, "minibatch size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--buffer", s.run.buffer_capacity, "the last this many tuples are trained on")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--arch", s.arch, "hidden relu layers")->delimiter(',')->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--members", s.agent.members, "ens: networks")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--sg-step", s.agent.sg_step_size, "sgld, fsgld: eta (step eta / buffer)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--fsgld-weight-prior", s.agent.fsgld_weight_prior,
                 "fsgld: keep the weight prior beside the GP prior (false: eq. 6 of Wu et al. 2024 alone)")
      ->capture_default_str();
  app.add_option("--adam-lr", s.agent.adam_learning_rate, "vi, ens, map: Adam's learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--seed", s.seed, "random seed")->capture_default_str();
  app.add_option("--threads", s.threads, "runs in parallel (results do not depend on it)")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--out", out, "output directory")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help, or the error
    return code == 0 ? 0 : 2;      // a usage error exits 2, as uqnn's do
  }
  s.data = data_path;
  s.out = out;
  s.run.validate();
  for (const auto& name : s.agents) {
    BanditAgentParams check = s.agent;
    check.kind = name;
    check.validate();
  }
  if (!std::filesystem::exists(s.data))
    throw std::invalid_argument(fmt::format("{} not found: the example reads data/uci/mushroom.csv (or --data)", s.data.string()));

  const Dataset data = load_dataset(s.data, {"edible"});
  MushroomBandit bandit;
  bandit.contexts = data.inputs;
  for (Index i = 0; i < data.size(); ++i) bandit.edible.push_back(data.targets(0, i) > 0.5);
  std::filesystem::create_directories(s.out);

  std::vector<Job> jobs;
  for (std::size_t pi = 0; pi < s.patterns.size(); ++pi)
    for (std::size_t ai = 0; ai < s.agents.size(); ++ai)
      jobs.push_back({s.agents[ai], s.patterns[pi], s.seed * 1000003ULL + pi * 101 + ai, {}, 0, {}});
  // Ctrl-C / SIGTERM end every job after its current round; what was played is still written.
  const StopSignalScope stop_scope;
  std::atomic<std::size_t> next{0};
  std::mutex print;
  auto worker = [&] {
    for (std::size_t j; (j = next++) < jobs.size();) {
      try {
        run_job(s, bandit, jobs[j]);
      } catch (const std::exception& e) {
        jobs[j].error = e.what();
      }
      const std::lock_guard lock(print);
      const Job& job = jobs[j];
      if (!job.error.empty()) std::printf("%-6s p=%.1f  failed: %s\n", job.agent.c_str(), job.p, job.error.c_str());
      else
        std::printf("%-6s p=%.1f  regret %8.0f  poisonous eaten %4ld  edible rejected %4ld  %6.1f s\n", job.agent.c_str(), job.p,
                    job.trace.cumulative_regret.back(), static_cast<long>(job.trace.eaten_poisonous),
                    static_cast<long>(job.trace.rejected_edible), job.seconds);
      std::fflush(stdout);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < s.threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();

  std::string csv = "agent,poison_probability,round,cumulative_regret,cumulative_reward\n";
  std::string md = fmt::format(
      "# Mushroom contextual bandit: {} rounds, {} updates of minibatch {} per round, buffer {}, network {}\n\n"
      "| agent | p | cumulative regret | poisonous eaten | edible rejected | divergences | final weight norm | seconds |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
      s.run.rounds, s.run.updates_per_round, s.agent.batch_size, s.run.buffer_capacity,
      fmt::format("{}", fmt::join(s.arch, "-")));
  for (const Job& job : jobs) {
    if (!job.error.empty()) {
      md += fmt::format("| {} | {} | failed: {} | | | | | |\n", job.agent, job.p, job.error);
      continue;
    }
    const auto& t = job.trace;
    for (std::size_t r = 0; r < t.cumulative_regret.size(); ++r)
      if ((r + 1) % 10 == 0 || r + 1 == t.cumulative_regret.size())
        csv += fmt::format("{},{},{},{},{}\n", job.agent, job.p, r + 1, t.cumulative_regret[r], t.cumulative_reward[r]);
    md += fmt::format("| {} | {} | {:.0f}{} | {} | {} | {} | {:.0f} | {:.0f} |\n", job.agent, job.p, t.cumulative_regret.back(),
                      t.interrupted ? " (stopped early)" : "", t.eaten_poisonous, t.rejected_edible, t.divergences,
                      t.final_parameter_norm, job.seconds);
  }
  for (const Job& job : jobs)
    if (!job.trace.agent_prior.empty()) md += fmt::format("\nfsgld's GP prior at p = {}: {}\n", job.p, job.trace.agent_prior);
  atomic_write_text(s.out / "bandit.csv", csv);
  atomic_write_text(s.out / "bandit.md", md);

  plot::Figure figure(1, static_cast<int>(s.patterns.size()));
  figure.title(fmt::format("Mushroom bandit: cumulative regret of Thompson sampling ({} rounds)", s.run.rounds));
  const char* colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"};
  for (std::size_t pi = 0; pi < s.patterns.size(); ++pi) {
    auto& panel = figure.panel(0, static_cast<int>(pi))
                      .title(fmt::format("p = {}", s.patterns[pi]))
                      .x_label("round")
                      .y_label("cumulative regret");
    for (std::size_t ai = 0; ai < s.agents.size(); ++ai) {
      const Job& job = jobs[pi * s.agents.size() + ai];
      if (!job.error.empty()) continue;
      const auto& regret = job.trace.cumulative_regret;
      const Index n = static_cast<Index>(regret.size()), stride = std::max<Index>(1, n / 500);
      std::vector<double> x, y;
      for (Index r = 0; r < n; r += stride) {
        x.push_back(static_cast<double>(r + 1));
        y.push_back(regret[static_cast<std::size_t>(r)]);
      }
      x.push_back(static_cast<double>(n));
      y.push_back(regret.back());
      plot::Style style;
      style.colour = colours[ai % 7];
      panel.line(Eigen::Map<const Vec>(x.data(), static_cast<Index>(x.size())), Eigen::Map<const Vec>(y.data(), static_cast<Index>(y.size())),
                 job.agent, style);
    }
  }
  figure.save(s.out / "regret.png");
  std::printf("wrote %s, %s and %s\n", (s.out / "bandit.csv").c_str(), (s.out / "bandit.md").c_str(), (s.out / "regret.png").c_str());
  for (const Job& job : jobs)
    if (!job.error.empty()) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return uqnn::examples::run_example("contextual_bandit", run, argc, argv); }
