// `uqnn fit --method swag`: J members (QUiNN's NN_SWAG is an ensemble: MultiSWAG), each a MAP
// pre-training from its own initialisation followed by SWAG (seed 001) on the same loss.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "approx_common.hpp"
#include "chain_run.hpp"
#include "uqnn/approx/swag.hpp"

namespace uqnn {

namespace {

/// Maddox et al. (2019)'s recipe: minibatch SGD at a constant rate from the pre-trained weights, one
/// snapshot per epoch, the last k = 10 deviations; QUiNN NN_SWAG's 3 members (MultiSWAG).
struct SwagOptions {
  Index swag_steps = 0;       ///< T; 0 = auto: kSwagSnapshots epochs
  Index swag_every = 0;       ///< c; 0 = auto: one epoch of minibatches
  Index swag_batch_size = 0;  ///< S; 0 = auto: kSwagBatch rows, at most a quarter of the data (at least 1)
  Index swag_rank = 10;
  Index swag_members = 3;            ///< J members, each its own init + SWAG (MultiSWAG, as QUiNN's NN_SWAG)
  std::string swag_cov = "lowrank";  ///< lowrank | diag
  double swag_lr = 0.0;              ///< 0 = auto: swag_minibatch_learning_rate (Mandt et al. 2017) at each member's MAP
  double swag_momentum = 0.0;
};
constexpr Index kSwagSnapshots = 50, kSwagBatch = 32;

/// The SGD phase's minibatch size, snapshot interval and step count for N rows (0 = auto, above).
struct SwagSchedule {
  Index batch = 0, every = 0, steps = 0;
};
SwagSchedule swag_schedule(const SwagOptions& o, Index num_data) {
  SwagSchedule s;
  s.batch = o.swag_batch_size > 0 ? std::min(o.swag_batch_size, num_data) : std::max<Index>(1, std::min(kSwagBatch, num_data / 4));
  const Index epoch = (num_data + s.batch - 1) / s.batch;
  // Auto: a snapshot per epoch over kSwagSnapshots epochs; given steps, up to kSwagSnapshots of them.
  s.every = o.swag_every > 0 ? o.swag_every
            : o.swag_steps > 0 ? std::max<Index>(1, std::min(epoch, o.swag_steps / kSwagSnapshots))
                               : epoch;
  s.steps = o.swag_steps > 0 ? o.swag_steps : kSwagSnapshots * s.every;
  return s;
}

const OptionSchema<SwagOptions>& swag_options() {
  using S = SwagOptions;
  static const auto s =
      OptionSchema<S>("swag", "SWAG")
          .add("swag_steps", &S::swag_steps, "T SGD steps after pre-training; 0 = 50 epochs")
          .at_least(0)
          .cite("Maddox et al. 2019; QUiNN's manual")
          .add("swag_every", &S::swag_every, "c, a snapshot every c steps; 0 = one per epoch")
          .at_least(0)
          .add("swag_batch_size", &S::swag_batch_size,
               "minibatch rows of the SGD steps, whose gradient noise gives SWAG its spread; 0 = 32, at most a quarter "
               "of the data")
          .at_least(0)
          .add("swag_rank", &S::swag_rank, "k, deviation columns kept")
          .at_least(1)
          .add("swag_members", &S::swag_members, "J members, each from its own initialisation (QUiNN's nens; MultiSWAG)")
          .at_least(1)
          .add("swag_cov", &S::swag_cov, "lowrank | diag")
          .one_of({"lowrank", "diag"})
          .add("swag_lr", &S::swag_lr,
               "SGD learning rate on -log posterior / N; 0 = Mandt et al. 2017's rate 2 (S / N) K / tr(gradient noise "
               "covariance), at most 1 / (largest Hessian eigenvalue at the MAP)")
          .at_least(0)
          .cite("Mandt, Hoffman & Blei 2017")
          .add("swag_momentum", &S::swag_momentum, "SGD momentum")
          .at_least(0)
          .below(1);
  return s;
}

}  // namespace

namespace {
/// How often run_swag quarters an automatic SGD rate that diverged (down to 1/1024 of it) before it gives up.
constexpr int kRateReductions = 5;

struct SwagMember {
  std::shared_ptr<const SwagPosterior> approximation;
  TrainResult pretraining;  ///< only its history and convergence report are kept past the member's fit
  SwagResult swag;
  double learning_rate = 0.0;
  int rate_reductions = 0;  ///< times the automatic rate was quartered after SGD diverged

  /// What run_swag uses of a finished member, for its checkpoint file and the MPI exchange (which
  /// also carries members that a stop signal left untrained: no approximation).
  void archive(StateArchive& a) {
    a.section("uqnn swag member 2");
    bool trained = approximation != nullptr;
    a.io(trained);
    if (!trained) return;
    Vec mean, variance;
    Mat deviations;
    if (a.saving()) mean = approximation->mean(), variance = approximation->diagonal_variance(), deviations = approximation->deviations();
    a.io(mean), a.io(variance), a.io(deviations);
    if (a.loading()) approximation = std::make_shared<SwagPosterior>(mean, variance, deviations);
    a.io(pretraining.history), a.io(pretraining.convergence);
    a.io(swag.num_snapshots), a.io(swag.num_clamped_variances), a.io(swag.loss);
    a.io(learning_rate), a.io(rate_reductions);
  }
};

std::string swag_member_bytes(const SwagMember& member) {
  StateArchive a;
  SwagMember copy = member;
  copy.archive(a);
  return a.take();
}

SwagMember swag_member_from_bytes(const std::string& bytes) {
  StateArchive a(bytes, "a swag member");
  SwagMember member;
  member.archive(a);
  a.expect_end();
  return member;
}
}  // namespace

MethodResult run_swag(const FitContext& c) {
  const SwagOptions o = swag_options().read(c.config.method_settings);
  SwagParams p;
  const Index N = c.posterior->num_data();
  const SwagSchedule schedule = swag_schedule(o, N);
  p.steps = schedule.steps;
  p.snapshot_every = schedule.every;
  p.rank = o.swag_rank;
  p.low_rank = o.swag_cov == "lowrank";
  p.momentum = o.swag_momentum;
  p.batch_size = schedule.batch;
  if (o.swag_lr > 0) p.learning_rate = o.swag_lr;
  p.validate();
  // Each finished member, and meanwhile a member's pre-training and SGD steps (issue 17).
  const MemberCheckpoint checkpoint = detail::member_checkpoint(c.config);
  // Member j draws its initialisation, training minibatches and SGD minibatches from stream 2j only,
  // so the result does not depend on the thread count (stream 0 is the single-member run of before).
  const std::function<SwagMember(Index)> fit_member = [&](Index j) {
    Rng rng(c.config.seed, static_cast<std::uint64_t>(2 * j));
    SwagMember m;
    m.pretraining = train_map(c, c.initial_point(rng), rng, true, checkpoint.progress(j, "map"));
    if (m.pretraining.interrupted) return m;  // no SGD steps from an unfinished MAP: a resumed run goes on with the MAP
    SwagParams member_params = p;
    NegativeLogPosteriorObjective objective(c.posterior);
    const CurvatureDirection stiff = stiffest_direction(*c.posterior, m.pretraining.best_theta, N);
    if (o.swag_lr == 0)
      member_params.learning_rate = schedule.batch < N
                                        ? swag_minibatch_learning_rate(objective, m.pretraining.best_theta, schedule.batch, stiff.curvature, rng)
                                        : 1.0 / stiff.curvature;
    // The automatic rate reads the curvature and gradient noise at the MAP. Where SGD leaves that
    // neighbourhood for a stiffer region (nearly separable classes: the saturated likelihood is flat
    // at the MAP) it can diverge; then the SGD phase is run again at a quarter of the rate, at most
    // kRateReductions times. Each attempt has its own checkpoint, so a resumed run retraces them.
    for (;;) {
      member_params.checkpoint = checkpoint.progress(j, m.rate_reductions == 0 ? std::string("swag") : fmt::format("swag{}", m.rate_reductions));
      try {
        m.swag = fit_swag(objective, m.pretraining.best_theta, member_params, rng);
        break;
      } catch (const DivergenceError& e) {
        if (o.swag_lr > 0) throw;
        if (m.rate_reductions == kRateReductions)
          throw DivergenceError(fmt::format("swag: SGD diverged at the automatic rate and at each quarter of it down to {:.3g} "
                                            "(the last: {}): give a smaller --swag-lr",
                                            member_params.learning_rate, e.what()));
        member_params.learning_rate /= 4;
        ++m.rate_reductions;
      }
    }
    m.learning_rate = member_params.learning_rate;
    m.approximation = m.swag.approximation;
    return m;
  };
  std::vector<SwagMember> members;
  for (SwagMember& m : run_members<SwagMember>(o.swag_members, c.config.threads, fit_member, swag_member_bytes, swag_member_from_bytes, checkpoint))
    if (m.approximation) members.push_back(std::move(m));  // members not begun before a stop signal are left out
  if (members.empty() && stop_requested()) return {};  // run_fit: stopped before the first draw, the checkpoint kept
  if (members.empty()) throw std::runtime_error("swag: no member was trained");

  std::vector<std::shared_ptr<const ApproximatePosterior>> components;
  for (const SwagMember& m : members) components.push_back(m.approximation);
  const MixturePosterior mixture(components);
  Rng sampler(c.config.seed, 1);
  MethodResult r;
  // MixturePosterior's stratification: draw s is member s mod J's; each member is a chain.
  const std::vector<Vec> samples = mixture.sample(sampler, detail::num_samples(c));
  const Index J = static_cast<Index>(members.size()), S = static_cast<Index>(samples.size());
  for (Index j = 0; j < std::min(J, S); ++j) {
    Mat values((S - j + J - 1) / J, samples.front().size());
    for (Index s = j, d = 0; s < S; s += J, ++d) values.row(d) = samples[static_cast<std::size_t>(s)].transpose();
    r.draws.add_chain(j, std::move(values));
  }
  nlohmann::json learning_rates = nlohmann::json::array(), snapshots = nlohmann::json::array(), reductions = nlohmann::json::array();
  Index clamped = 0;
  std::vector<ConvergenceReport> pretraining;
  for (std::size_t j = 0; j < members.size(); ++j) {
    pretraining.push_back(members[j].pretraining.convergence);
    if (j < 8) r.history.emplace_back(fmt::format("member {} pre-training loss (-log posterior / N)", j), members[j].pretraining.history.train_loss);
    learning_rates.push_back(members[j].learning_rate);
    reductions.push_back(members[j].rate_reductions);
    snapshots.push_back(members[j].swag.num_snapshots);
    clamped += members[j].swag.num_clamped_variances;
  }
  r.info = {{"members", J},
            {"snapshots", snapshots},
            {"clamped_negative_variances", clamped},
            {"deviation_columns", members.front().approximation->deviations().cols()},
            {"swag_lr", learning_rates},
            {"swag_lr_rule", o.swag_lr > 0 ? "given"
                             : schedule.batch < N ? "Mandt et al. 2017's rate, at most 1 / largest eigenvalue of the Hessian of -log posterior / N"
                                                  : "1 / largest eigenvalue of the Hessian of -log posterior / N at each member's MAP"},
            {"swag_lr_reductions", reductions},
            {"swag_batch_size", schedule.batch},
            {"swag_steps", schedule.steps},
            {"swag_every", schedule.every},
            {"optimizer", training_info(pretraining)}};
  for (std::size_t j = 0; j < members.size(); ++j)
    if (members[j].rate_reductions > 0)
      c.log(fmt::format("swag: member {}'s SGD diverged at the automatic rate; it ran at 1/{} of it ({:.3g})", j,
                        1 << (2 * members[j].rate_reductions), members[j].learning_rate));
  if (const auto w = not_converged_warning(pretraining, "members' pre-training MAP fits")) r.warnings.push_back(*w);
  // SWAG's spread is the SGD iterates' (and members') spread: full-batch SGD from an optimum that
  // the pre-training reached (and one mode for every member) does not move, and the "posterior" is
  // a point. That is a property of the method (Maddox et al. 2019 rely on minibatch noise), so the
  // user is told instead of getting zero-width intervals silently.
  double largest_sd = 0.0, largest_between = 0.0;
  for (const auto& m : members) {
    largest_sd = std::max(largest_sd, m.approximation->marginal_variance().cwiseSqrt().maxCoeff());
    largest_between = std::max(largest_between, (m.approximation->mean() - members.front().approximation->mean()).cwiseAbs().maxCoeff());
  }
  const double scale = std::max(1.0, members.front().approximation->mean().cwiseAbs().maxCoeff());
  const bool no_spread = std::max(largest_sd, largest_between) <= 1e-5 * scale;
  if (no_spread)
    r.warnings.push_back({"no_spread",
                          fmt::format("swag: the draws have no spread (largest sd {:.1e}): the SGD steps did not move from "
                                      "the pre-trained optimum and the members found the same mode; full-batch SGD at an "
                                      "optimum has no gradient noise. Use a minibatch (--swag-batch-size), more --swag-members, "
                                      "or a method whose spread does not depend on it (--method laplace, nuts)",
                                      largest_sd)});
  // SGD's stationary spread is set by the rate and the gradient noise, not by the posterior's shape
  // (Mandt et al. 2017): measured against the posterior's curvature, not assumed.
  if (!no_spread)
    detail::check_narrow_spread(*c.posterior, r.draws, "swag", "or set --swag-lr and --swag-batch-size", r);
  return r;
}

namespace {

/// Each member keeps its first and second moments and, low-rank, its last swag_rank deviations.
std::vector<MemoryItem> swag_memory(const FitConfig& config, Index num_params) {
  const SwagOptions o = swag_options().read(config.method_settings);
  const double columns = 2.0 + (o.swag_cov == "lowrank" ? static_cast<double>(o.swag_rank) : 0.0);
  return {{fmt::format("SWAG moments and deviations: {} members x {:.0f} columns of {} parameters", o.swag_members, columns, num_params),
           8.0 * static_cast<double>(o.swag_members) * columns * static_cast<double>(num_params), "fewer --swag-rank or --swag-members"}};
}

const bool registered_swag = register_method({
    .name = "swag",
    .summary = "SWAG (diagonal or low-rank), J members (MultiSWAG)",
    .reference = "QUiNN's manual; Maddox et al. 2019",
    .family = MethodFamily::Approximation,
    .groups = {&detail::samples_options().group(), &swag_options().group(), &detail::training_checkpoint_options().group()},
    .run = &run_swag,
    .kept_draws = [](const nlohmann::json& settings) {
      return approximation_draws(detail::samples_options().read(settings).num_samples, swag_options().read(settings).swag_members);
    },
    .memory = &swag_memory,
    .runs_on_external_model = true,
    // the pre-training lbfgs stalls at the objective's rounding floor on the demo's 20 points (a gradient norm per
    // point of 1.6e-5 to 3.7e-5 after about 4,000 evaluations; 20,000 epochs change nothing): the
    // default tolerance of 1e-8 lies below it.
    .demo_preset = {{"epochs", 6000}, {"gradient_tolerance", 1e-4}}});
}  // namespace

}  // namespace uqnn
