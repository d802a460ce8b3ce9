// Checkpoint and resume (issue 17): a run stopped at any iteration (inside warmup's windows, at
// their ends, at the switch to sampling, after it) and resumed from its checkpoints gives bitwise
// the draws, statistics, tuning and initial points of the run that was never stopped, for every
// ChainSampler. Also: periodic checkpoints survive a crash; a checkpoint of another run or a
// damaged one is refused with the file's name.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <stdexcept>

#include "../io/temp_dir.hpp"
#include "../mcmc/test_models.hpp"
#include "../sgmcmc/targets.hpp"
#include "uqnn/approx/dropout.hpp"
#include "uqnn/approx/ensemble.hpp"
#include "uqnn/approx/flow.hpp"
#include "uqnn/approx/swag.hpp"
#include "uqnn/approx/vi.hpp"
#include "uqnn/core/stop_signal.hpp"
#include "uqnn/optim/objective.hpp"
#include "uqnn/optim/trainer.hpp"
#include "uqnn/prob/prior.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/sgmcmc/psgld.hpp"
#include "uqnn/mcmc/sgmcmc/sghmc.hpp"
#include "uqnn/mcmc/sgmcmc/sgld.hpp"
#include "uqnn/mcmc/slice.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/mclmc_sampler.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {
namespace {

struct SamplerCase {
  std::string name;
  SamplerFactory factory;
  InitialPoints start;
};

/// Every ChainSampler; the gradient samplers on the hard Gaussian (correlation 0.98, scales 100x
/// apart), the SG family on a minibatched regression (its permutation is state too).
std::vector<SamplerCase> sampler_cases() {
  const auto hard = testing::hard_gaussian();
  const auto regression = testing::make_linear_regression(200).posterior;
  // Random starts drawn from the chain's stream: a resumed chain must not draw its start again.
  const InitialPointFn near_mode = [hard](int, Rng& rng) { return Vec(hard->mean() + rng.normal_vector(3)); };
  const InitialPointFn near_zero = [](int, Rng& rng) { return Vec(0.1 * rng.normal_vector(3)); };
  AdaptiveMetropolisConfig haario;
  haario.adaptation = AmAdaptation::Haario;
  haario.adapt_after_warmup = true;
  haario.kernel.t0 = 20;
  haario.kernel.t_adapt = 30;
  MalaConfig dense_mala;
  dense_mala.warmup.metric = MetricAdaptation::Dense;
  NutsConfig low_rank_nuts;  // its warmup state holds the window's draw/gradient pairs
  low_rank_nuts.warmup.metric = MetricAdaptation::LowRank;
  sgmcmc::SgldParams sgld;
  sgld.batch_size = 50;
  sgld.schedule = sgmcmc::StepSizeSchedule::constant(1e-5);
  sgmcmc::PsgldParams psgld;
  psgld.batch_size = 50;
  sgmcmc::SghmcParams sghmc;
  sghmc.batch_size = 50;
  sghmc.schedule = sgmcmc::StepSizeSchedule::constant(1e-4);
  return {
      {"nuts", make_sampler_factory(hard, NutsConfig{}), near_mode},
      {"nuts low-rank", make_sampler_factory(hard, low_rank_nuts), near_mode},
      {"hmc", make_sampler_factory(hard, HmcConfig{}), near_mode},
      {"mala dense", make_sampler_factory(hard, dense_mala), near_mode},
      {"amcmc windowed", make_sampler_factory(hard, AdaptiveMetropolisConfig{}), near_mode},
      {"amcmc haario", make_sampler_factory(hard, haario), near_mode},
      {"slice", [hard] { return std::make_unique<SliceChainSampler>(hard, SliceParams{}); }, near_mode},
      {"mclmc", [hard] { return std::make_unique<MclmcChainSampler>(hard, MclmcConfig{}); }, near_mode},
      {"sgld", [regression, sgld] { return std::make_unique<sgmcmc::SgldSampler>(regression, sgld); }, near_zero},
      {"psgld", [regression, psgld] { return std::make_unique<sgmcmc::PsgldSampler>(regression, psgld); }, near_zero},
      {"sghmc", [regression, sghmc] { return std::make_unique<sgmcmc::SghmcSampler>(regression, sghmc); }, near_zero},
  };
}

/// 2 chains on 2 threads, 150 warmup iterations (windows [75, 100) and [100, 100) ... as Stan's
/// schedule makes them) and 101 draws thinned by 2.
RunConfig checkpoint_config(const std::filesystem::path& dir) {
  RunConfig c;
  c.num_chains = 2;
  c.num_threads = 2;
  c.num_warmup = 150;
  c.num_draws = 101;
  c.thin = 2;
  c.seed = 11;
  c.checkpoint.directory = dir;
  return c;
}

/// The same bits (NaN statistics included: amcmc has no step size).
std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

void expect_bitwise_equal(const RunResult& a, const RunResult& b, const std::string& what) {
  ASSERT_EQ(a.num_chains(), b.num_chains()) << what;
  for (int c = 0; c < a.num_chains(); ++c) {
    const auto ci = static_cast<std::size_t>(c);
    ASSERT_EQ(a.draws[ci].rows(), b.draws[ci].rows()) << what << ", chain " << c;
    EXPECT_TRUE(a.draws[ci] == b.draws[ci]) << what << ", chain " << c << ": draws differ";
    EXPECT_TRUE(a.initial_points[ci] == b.initial_points[ci]) << what << ", chain " << c;
    EXPECT_EQ(a.sampler_descriptions[ci], b.sampler_descriptions[ci]) << what << ", chain " << c;
    ASSERT_EQ(a.stats[ci].size(), b.stats[ci].size()) << what;
    ASSERT_EQ(a.warmup_stats[ci].size(), b.warmup_stats[ci].size()) << what;
    for (std::size_t i = 0; i < a.stats[ci].size(); ++i) {
      EXPECT_EQ(bits(a.stats[ci][i].lp), bits(b.stats[ci][i].lp)) << what << ", chain " << c << ", draw " << i;
      EXPECT_EQ(bits(a.stats[ci][i].step_size), bits(b.stats[ci][i].step_size)) << what << ", chain " << c << ", draw " << i;
      EXPECT_EQ(bits(a.stats[ci][i].energy), bits(b.stats[ci][i].energy)) << what << ", chain " << c << ", draw " << i;
      EXPECT_EQ(a.stats[ci][i].n_leapfrog, b.stats[ci][i].n_leapfrog) << what;
    }
    for (std::size_t i = 0; i < a.warmup_stats[ci].size(); ++i)
      EXPECT_EQ(bits(a.warmup_stats[ci][i].step_size), bits(b.warmup_stats[ci][i].step_size)) << what << ", warmup " << i;
  }
}

TEST(Checkpoint, AStoppedAndResumedRunIsBitwiseTheUninterruptedOneForEverySampler) {
  for (const SamplerCase& sampler : sampler_cases()) {
    testing::TempDir dir;
    RunConfig plain = checkpoint_config(dir.path() / "unused");
    plain.checkpoint = {};
    const RunResult whole = run_chains(plain, sampler.factory, sampler.start);
    ASSERT_EQ(whole.min_draws(), 51) << sampler.name;
    // Stops at chain 0's iteration 1 (the first), 75 and 99 (a window's first and last), 149 (the
    // last of warmup) and 190 (sampling); each resumed run goes on to the next stop. The other
    // chain stops wherever it is when the flag is seen.
    const RunConfig config = checkpoint_config(dir.path() / "checkpoint");
    RunResult last;
    long resumed = 0;
    for (const long stop_at : {1L, 75L, 99L, 149L, 190L, -1L}) {
      RunConfig c = config;
      c.checkpoint.resume = stop_at != 1;
      StopWhenObserver stop([stop_at](const IterationEvent& e) { return e.chain == 0 && e.iteration == stop_at; });
      std::vector<Observer*> observers;
      if (stop_at >= 0) observers.push_back(&stop);
      last = run_chains(c, sampler.factory, sampler.start, observers);
      EXPECT_EQ(last.interrupted, stop_at >= 0) << sampler.name << ", stop " << stop_at;
      ASSERT_TRUE(std::filesystem::exists(c.checkpoint.chain_file(0))) << sampler.name;
      if (c.checkpoint.resume) resumed += last.resumed_at[0];
    }
    EXPECT_GT(resumed, 0) << sampler.name << ": no chain was resumed";
    expect_bitwise_equal(whole, last, sampler.name);
  }
}

TEST(Checkpoint, PeriodicCheckpointsSurviveACrashAndResumeBitwise) {
  const auto target = testing::hard_gaussian();
  const auto factory = make_sampler_factory(target, NutsConfig{});
  testing::TempDir dir;
  RunConfig config = checkpoint_config(dir.path() / "checkpoint");
  config.checkpoint.every_iterations = 40;
  RunConfig plain = config;
  plain.checkpoint = {};
  const RunResult whole = run_chains(plain, factory, target->mean());
  // A crash at chain 0's iteration 130 (an exception: nothing is saved on the way out), after its
  // checkpoint at 120.
  StopWhenObserver crash([](const IterationEvent& e) {
    if (e.chain == 0 && e.iteration == 130) throw std::runtime_error("simulated crash");
    return false;
  });
  EXPECT_THROW(run_chains(config, factory, target->mean(), {&crash}), std::runtime_error);
  config.checkpoint.resume = true;
  const RunResult resumed = run_chains(config, factory, target->mean());
  EXPECT_EQ(resumed.resumed_at[0], 120);
  expect_bitwise_equal(whole, resumed, "nuts after a crash");
}

TEST(Checkpoint, ACheckpointOfAnotherRunOrADamagedOneIsRefusedWithItsFileName) {
  const auto target = testing::hard_gaussian();
  const auto factory = make_sampler_factory(target, NutsConfig{});
  testing::TempDir dir;
  RunConfig config = checkpoint_config(dir.path() / "checkpoint");
  config.checkpoint.at_chain_end = true;
  run_chains(config, factory, target->mean());
  const auto file = config.checkpoint.chain_file(0);
  config.checkpoint.resume = true;

  RunConfig longer = config;
  longer.num_draws = 200;
  try {
    run_chains(longer, factory, target->mean());
    ADD_FAILURE() << "a checkpoint of a run with other draws was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ": was written with draws 101, but this run has draws 200"),
              std::string::npos)
        << e.what();
  }
  // The same sampler on another target: the parameter count differs.
  const auto other = make_sampler_factory(testing::correlated_gaussian(), AdaptiveMetropolisConfig{});
  RunConfig other_config = config;
  EXPECT_THROW(run_chains(other_config, other, Vec(Vec::Zero(3))), InputError);  // another sampler's state

  const std::string bytes = testing::TempDir::read(file);
  for (const std::size_t keep : {std::size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
    dir.write("checkpoint/chain-0.state", bytes.substr(0, keep));
    try {
      run_chains(config, factory, target->mean());
      ADD_FAILURE() << "a checkpoint cut to " << keep << " bytes was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
    }
  }
}

// Members: each finished member is kept; a resumed run reads those and trains only the others, and
// gives bitwise the members of a run that was never stopped.
TEST(Checkpoint, FinishedMembersAreReadBackAndOnlyTheOthersTrainedAgain) {
  testing::TempDir dir;
  const MemberCheckpoint checkpoint{dir.path() / "checkpoint", false};
  std::atomic<int> calls{0};
  const std::function<MemberFit(Index)> member = [&calls](Index j) {
    ++calls;
    MemberFit fit;
    fit.theta = Vec::Constant(3, 0.1 * static_cast<double>(j) + 1.0 / 3.0);
    fit.rows = {j, j + 1};
    fit.convergence.optimizer = "adam";
    return fit;
  };
  const auto first = run_members<MemberFit>(4, 2, member, member_fit_bytes, member_fit_from_bytes, checkpoint);
  EXPECT_EQ(calls.load(), 4);
  std::filesystem::remove(checkpoint.directory / "member-2.state");
  calls = 0;
  const auto resumed = run_members<MemberFit>(4, 2, member, member_fit_bytes, member_fit_from_bytes, {checkpoint.directory, true});
  EXPECT_EQ(calls.load(), 1) << "only member 2 had no checkpoint";
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_TRUE(resumed[j].theta == first[j].theta) << j;
    EXPECT_EQ(resumed[j].rows, first[j].rows) << j;
  }
  // Another member's file in member 0's place is refused, naming the file.
  std::filesystem::copy_file(checkpoint.directory / "member-1.state", checkpoint.directory / "member-0.state",
                             std::filesystem::copy_options::overwrite_existing);
  try {
    run_members<MemberFit>(4, 1, member, member_fit_bytes, member_fit_from_bytes, {checkpoint.directory, true});
    ADD_FAILURE() << "member 1's checkpoint was taken for member 0";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("member-0.state: holds member 1 of 4; this run expects member 0 of 4"), std::string::npos)
        << e.what();
  }
}

TEST(Checkpoint, AResumedDeepEnsembleIsBitwiseTheUninterruptedOne) {
  const auto regression = testing::make_linear_regression(100).posterior;
  EnsembleParams params;
  params.members = 4;
  params.threads = 2;
  params.training.optimizer.name = "adam";
  params.training.epochs = 200;
  const auto plain = fit_deep_ensemble(*regression, params, 5);
  testing::TempDir dir;
  params.checkpoint = {dir.path(), false};
  fit_deep_ensemble(*regression, params, 5);
  std::filesystem::remove(dir.path() / "member-0.state");
  std::filesystem::remove(dir.path() / "member-3.state");
  params.checkpoint.resume = true;
  const auto resumed = fit_deep_ensemble(*regression, params, 5);
  for (std::size_t j = 0; j < 4; ++j) {
    EXPECT_TRUE(resumed[j].theta == plain[j].theta) << "member " << j;
    EXPECT_EQ(resumed[j].history.train_loss, plain[j].history.train_loss) << "member " << j;
    EXPECT_EQ(resumed[j].convergence.stop_reason, plain[j].convergence.stop_reason) << "member " << j;
  }
}

// Training (Adam, SGD with momentum; minibatches, a plateau schedule, validation snapshots): a fit
// stopped by a signal, or crashed after a periodic checkpoint, resumes to bitwise the result of
// the fit never stopped.
TEST(Checkpoint, AStoppedOrCrashedTrainingResumesBitwise) {
  const auto regression = testing::make_linear_regression(200).posterior;
  const NegativeLogPosteriorObjective objective(regression);
  const std::function<double(const Vec&)> validation = [&](const Vec& theta) {
    return -regression->log_likelihood(theta, regression->inputs(), regression->targets()) / 200.0;
  };
  for (const char* optimizer : {"adam", "sgd"}) {
    TrainParams params;
    params.optimizer.name = optimizer;
    params.optimizer.learning_rate = 1e-3;
    params.optimizer.momentum = 0.9;
    params.batch_size = 32;
    params.epochs = 300;
    params.schedule.name = "plateau";
    params.schedule.patience = 5;
    const Vec start = Vec::Constant(3, 0.3);
    Rng plain_rng(3);
    const TrainResult plain = train(objective, start, params, plain_rng, validation);
    testing::TempDir dir;
    params.checkpoint.file = dir.path() / "checkpoint" / "map.state";
    params.checkpoint.every_epochs = 40;
    for (const bool crash : {false, true}) {
      std::filesystem::remove_all(dir.path() / "checkpoint");
      params.checkpoint.resume = false;
      Rng rng(3);
      {
        const StopSignalScope scope;  // the stop flag is this scope's
        const EpochCallback stop_at_130 = [crash](Index epoch, double, double) {
          if (epoch == 130) {
            if (crash) throw std::runtime_error("simulated crash");
            request_stop();
          }
          return true;
        };
        if (crash) {
          EXPECT_THROW(train(objective, start, params, rng, validation, stop_at_130), std::runtime_error);
        } else {
          EXPECT_TRUE(train(objective, start, params, rng, validation, stop_at_130).interrupted);
        }
      }
      params.checkpoint.resume = true;
      Rng fresh(3);
      const StopSignalScope scope;
      const TrainResult resumed = train(objective, start, params, fresh, validation);
      const std::string what = std::string(optimizer) + (crash ? " after a crash" : " after a stop");
      EXPECT_TRUE(resumed.best_theta == plain.best_theta) << what;
      EXPECT_TRUE(resumed.last_theta == plain.last_theta) << what;
      EXPECT_EQ(resumed.best_epoch, plain.best_epoch) << what;
      EXPECT_EQ(resumed.history.train_loss, plain.history.train_loss) << what;
      EXPECT_EQ(resumed.history.learning_rate, plain.history.learning_rate) << what;
      EXPECT_EQ(resumed.convergence.stop_reason, plain.convergence.stop_reason) << what;
      EXPECT_FALSE(resumed.interrupted) << what;
    }
  }
}

TEST(Checkpoint, AStoppedBayesByBackpropFitResumesBitwise) {
  const auto regression = testing::make_linear_regression(200).posterior;
  const auto prior = GaussianPrior::isotropic(3, 1.0);
  ViParams params;
  params.epochs = 400;
  params.batch_size = 50;
  params.learning_rate = 1e-2;
  Rng plain_rng(9);
  const ViResult plain = fit_bayes_by_backprop(*regression, *prior, params, plain_rng);
  testing::TempDir dir;
  params.checkpoint.file = dir.path() / "vi.state";
  {
    Rng rng(9);
    const StopSignalScope scope;
    // Epoch 350 is inside the drift monitor's last window (300-399), so its sums are state too.
    const auto stop_at_350 = [](Index epoch, double) {
      if (epoch == 350) request_stop();
      return true;
    };
    EXPECT_TRUE(fit_bayes_by_backprop(*regression, *prior, params, rng, stop_at_350).interrupted);
  }
  params.checkpoint.resume = true;
  Rng fresh(9);
  const StopSignalScope scope;
  const ViResult resumed = fit_bayes_by_backprop(*regression, *prior, params, fresh);
  EXPECT_TRUE(resumed.mu == plain.mu);
  EXPECT_TRUE(resumed.rho == plain.rho);
  EXPECT_EQ(resumed.elbo, plain.elbo);
  EXPECT_TRUE(resumed.mu_last_window == plain.mu_last_window);
}

// Dropout's loss draws its masks from the objective's own stream: the training checkpoint keeps
// it (Objective::archive) with the optimiser's state.
TEST(Checkpoint, AStoppedDropoutTrainingResumesBitwise) {
  const auto regression = testing::make_linear_regression(200).posterior;
  const MlpSpec spec{2, {6}, 1, Activation::Tanh, InitScheme::Glorot};
  const auto network = std::make_shared<Mlp>(spec);
  const auto posterior = std::make_shared<Posterior>(network, regression->likelihood_ptr(),
                                                     GaussianPrior::isotropic(network->num_params(), 1.0), regression->inputs(),
                                                     regression->targets());
  const auto dropout = std::make_shared<const DropoutMlp>(spec, 0.2);
  TrainParams params;
  params.optimizer.name = "adam";
  params.optimizer.learning_rate = 1e-2;
  params.batch_size = 50;
  params.epochs = 120;
  Rng start_rng(2);
  const Vec start = network->initial_params(start_rng);
  Rng plain_rng(3);
  const TrainResult plain = train(DropoutObjective(dropout, posterior, 4, 2), start, params, plain_rng);
  testing::TempDir dir;
  params.checkpoint.file = dir.path() / "dropout.state";
  {
    Rng rng(3);
    const StopSignalScope scope;
    const EpochCallback stop_at_70 = [](Index epoch, double, double) {
      if (epoch == 70) request_stop();
      return true;
    };
    EXPECT_TRUE(train(DropoutObjective(dropout, posterior, 4, 2), start, params, rng, {}, stop_at_70).interrupted);
  }
  params.checkpoint.resume = true;
  Rng fresh(3);
  const StopSignalScope scope;
  const TrainResult resumed = train(DropoutObjective(dropout, posterior, 4, 2), start, params, fresh);
  EXPECT_EQ(resumed.resumed_at_epoch, 71);
  EXPECT_TRUE(resumed.last_theta == plain.last_theta);
  EXPECT_EQ(resumed.history.train_loss, plain.history.train_loss);
}

/// An objective that raises the stop flag at its `stop_at`-th evaluation (a signal at a given step
/// of a loop that has no callback).
class StopAtEvaluation : public Objective {
 public:
  StopAtEvaluation(const Objective& inner, Index stop_at) : inner_(inner), stop_at_(stop_at) {}
  Index dim() const override { return inner_.dim(); }
  Index num_data() const override { return inner_.num_data(); }
  double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override {
    if (++calls_ == stop_at_) request_stop();
    return inner_.loss_and_grad(theta, batch, grad);
  }
  void archive(StateArchive& a) const override { inner_.archive(a); }

 private:
  const Objective& inner_;
  Index stop_at_;
  mutable Index calls_ = 0;
};

// SWAG's SGD phase (minibatches, momentum, snapshots every 2 steps, low rank): stopped mid-way, it
// goes on to bitwise the moments and deviations of the run never stopped.
TEST(Checkpoint, AStoppedSwagPhaseResumesBitwise) {
  const auto regression = testing::make_linear_regression(200).posterior;
  const NegativeLogPosteriorObjective objective(regression);
  SwagParams params;
  params.steps = 60;
  params.snapshot_every = 2;
  params.rank = 5;
  params.learning_rate = 1e-2;
  params.momentum = 0.5;
  params.batch_size = 50;
  const Vec start = Vec::Constant(3, 0.2);
  Rng plain_rng(6);
  const SwagResult plain = fit_swag(objective, start, params, plain_rng);
  testing::TempDir dir;
  params.checkpoint.file = dir.path() / "swag.state";
  {
    Rng rng(6);
    const StopSignalScope scope;
    // Evaluation 1 is the loss at the start; evaluation 56 is step 55, after an odd number of
    // snapshots and with 3 more to come, so 2 of the 5 deviations kept are from before the stop.
    EXPECT_TRUE(fit_swag(StopAtEvaluation(objective, 56), start, params, rng).interrupted);
  }
  params.checkpoint.resume = true;
  Rng fresh(6);
  const StopSignalScope scope;
  const SwagResult resumed = fit_swag(objective, start, params, fresh);
  EXPECT_EQ(resumed.resumed_at_step, 55);
  EXPECT_EQ(resumed.loss, plain.loss);
  EXPECT_EQ(resumed.num_snapshots, plain.num_snapshots);
  EXPECT_TRUE(resumed.approximation->mean() == plain.approximation->mean());
  EXPECT_TRUE(resumed.approximation->diagonal_variance() == plain.approximation->diagonal_variance());
  EXPECT_TRUE(resumed.approximation->deviations() == plain.approximation->deviations());
}

TEST(Checkpoint, AStoppedFlowFitResumesBitwise) {
  const auto regression = testing::make_linear_regression(100).posterior;
  FlowViParams params;
  params.epochs = 80;
  params.num_couplings = 2;
  params.hidden = 4;
  params.num_samples = 2;
  params.batch_size = 25;
  Rng plain_rng(8);
  const FlowViResult plain = fit_flow_vi(*regression, Vec::Zero(3), params, plain_rng);
  testing::TempDir dir;
  params.checkpoint.file = dir.path() / "vi-flow.state";
  {
    Rng rng(8);
    const StopSignalScope scope;
    const auto stop_at_50 = [](Index epoch, double) {
      if (epoch == 50) request_stop();
      return true;
    };
    EXPECT_TRUE(fit_flow_vi(*regression, Vec::Zero(3), params, rng, stop_at_50).interrupted);
  }
  params.checkpoint.resume = true;
  Rng fresh(8);
  const StopSignalScope scope;
  const FlowViResult resumed = fit_flow_vi(*regression, Vec::Zero(3), params, fresh);
  EXPECT_EQ(resumed.resumed_at_epoch, 51);
  EXPECT_EQ(resumed.elbo, plain.elbo);
  EXPECT_TRUE(resumed.approximation->params() == plain.approximation->params());
}

// A member cut short keeps its training's state (MemberCheckpoint::progress) and goes on from it;
// once the member's own file is written, that state is removed.
TEST(Checkpoint, AMemberCutShortGoesOnFromItsLastEpoch) {
  const auto regression = testing::make_linear_regression(100).posterior;
  const NegativeLogPosteriorObjective objective(regression);
  TrainParams training;
  training.optimizer.name = "adam";
  training.batch_size = 20;
  training.epochs = 100;
  testing::TempDir dir;
  MemberCheckpoint checkpoint;  // none for the run never stopped
  std::vector<Index> started_at(3, -1);
  const auto member = [&](Index j, const EpochCallback& on_epoch) {
    Rng rng(5, static_cast<std::uint64_t>(j));
    TrainParams p = training;
    p.checkpoint = checkpoint.progress(j, "training");
    const TrainResult trained = train(objective, Vec::Constant(3, 0.1), p, rng, {}, on_epoch);
    started_at[static_cast<std::size_t>(j)] = trained.resumed_at_epoch;
    MemberFit fit;
    fit.theta = trained.last_theta;
    fit.history = trained.history;
    return fit;
  };
  const auto plain = run_members<MemberFit>(3, 1, [&](Index j) { return member(j, {}); });
  checkpoint = {dir.path(), false, 30, 0.0};
  {
    const StopSignalScope scope;
    const std::function<MemberFit(Index)> stop_member_1_at_45 = [&](Index j) {
      return member(j, [j](Index epoch, double, double) {
        if (j == 1 && epoch == 45) request_stop();
        return true;
      });
    };
    run_members<MemberFit>(3, 1, stop_member_1_at_45, member_fit_bytes, member_fit_from_bytes, checkpoint);
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "member-0.state"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "member-0-training.state")) << "superseded by member-0.state";
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "member-1.state")) << "member 1 was cut short";
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "member-1-training.state"));
  checkpoint.resume = true;
  started_at.assign(3, -1);
  const StopSignalScope scope;
  const std::function<MemberFit(Index)> unstopped = [&](Index j) { return member(j, {}); };
  const auto resumed = run_members<MemberFit>(3, 1, unstopped, member_fit_bytes, member_fit_from_bytes, checkpoint);
  EXPECT_EQ(started_at, (std::vector<Index>{-1, 46, 0})) << "member 0 read back, member 1 resumed, member 2 trained afresh";
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_TRUE(resumed[j].theta == plain[j].theta) << j;
    EXPECT_EQ(resumed[j].history.train_loss, plain[j].history.train_loss) << j;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "member-1-training.state"));
}

// Full-batch L-BFGS on a small tanh network (hundreds of evaluations, the curvature pairs full):
// stopped by a signal inside a line search, or crashed after a periodic checkpoint, it resumes to
// bitwise the fit never stopped.
TEST(Checkpoint, AStoppedOrCrashedLbfgsFitResumesBitwise) {
  const auto regression = testing::make_linear_regression(100).posterior;
  const auto network = std::make_shared<Mlp>(MlpSpec{2, {6}, 1, Activation::Tanh, InitScheme::Glorot});
  const auto posterior = std::make_shared<Posterior>(network, regression->likelihood_ptr(),
                                                     GaussianPrior::isotropic(network->num_params(), 1.0), regression->inputs(),
                                                     regression->targets());
  const NegativeLogPosteriorObjective objective(posterior);
  TrainParams params;
  params.optimizer.name = "lbfgs";
  params.gradient_tolerance = 1e-12;  // (not reached: the run ends at the objective's rounding)
  Rng start_rng(2);
  const Vec start = network->initial_params(start_rng);
  Rng plain_rng(3);
  const TrainResult plain = train(objective, start, params, plain_rng);
  ASSERT_GT(plain.convergence.iterations, 100) << "too easy a problem to stop in the middle";
  testing::TempDir dir;
  params.checkpoint.file = dir.path() / "map.state";
  params.checkpoint.every_epochs = 25;
  for (const bool crash : {false, true}) {
    std::filesystem::remove(params.checkpoint.file);
    params.checkpoint.resume = false;
    {
      Rng rng(3);
      const StopSignalScope scope;
      const EpochCallback stop_at_87 = [crash](Index evaluation, double, double) {
        if (evaluation == 87) {
          if (crash) throw std::runtime_error("simulated crash");  // (not taken for a line-search failure)
          request_stop();
        }
        return true;
      };
      if (crash) {
        EXPECT_THROW(train(objective, start, params, rng, {}, stop_at_87), std::runtime_error);
      } else {
        EXPECT_TRUE(train(objective, start, params, rng, {}, stop_at_87).interrupted);
      }
    }
    params.checkpoint.resume = true;
    Rng fresh(3);
    const StopSignalScope scope;
    const TrainResult resumed = train(objective, start, params, fresh);
    const std::string what = crash ? "after a crash" : "after a stop";
    EXPECT_GT(resumed.resumed_at_epoch, crash ? 50 : 75) << what;
    EXPECT_LE(resumed.resumed_at_epoch, 87) << what;
    EXPECT_TRUE(resumed.best_theta == plain.best_theta) << what;
    EXPECT_TRUE(resumed.last_theta == plain.last_theta) << what;
    EXPECT_EQ(resumed.history.train_loss, plain.history.train_loss) << what;
    EXPECT_EQ(resumed.convergence.iterations, plain.convergence.iterations) << what;
    EXPECT_EQ(resumed.convergence.stop_reason, plain.convergence.stop_reason) << what;
  }
}

}  // namespace
}  // namespace uqnn
