#include "uqnn/mcmc/nuts.hpp"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "uqnn/core/error.hpp"
#include "uqnn/mcmc/integrator.hpp"

namespace uqnn {

void NutsParams::validate(Index dim) const {
  require(std::isfinite(step_size) && step_size > 0.0, "step_size", "finite and > 0");
  require(max_depth >= 1 && max_depth <= 30, "max_depth", "in [1, 30]");
  require(divergence_threshold > 0.0, "divergence_threshold", "> 0");
  require(step_size_jitter >= 0.0 && step_size_jitter < 1.0, "step_size_jitter", "in [0, 1)");
  const Index m = metric_dim(metric);
  require(m == 0 || m == dim, "metric", "of the log density's dimension (or empty for the unit metric)");
}

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double log_sum_exp(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

/// Work vectors of one tree level, allocated once per transition so that building the tree does
/// not allocate (Stan allocates these at every node).
struct Level {
  PhasePoint z_propose_final;
  Vec p_init_end, p_sharp_init_end, rho_init;
  Vec p_final_beg, p_sharp_final_beg, rho_final;
  Vec rho_extended;
};

/// One trajectory build (Stan's base_nuts::transition and build_tree, written as a class so the
/// recursion shares the density, metric, work vectors and counters).
class TreeBuilder {
 public:
  TreeBuilder(const LogDensity& density, const Metric& metric, double step_size, double max_delta_h, int max_depth,
              Index dim, Rng& rng)
      : density_(density), metric_(metric), eps_(step_size), max_delta_h_(max_delta_h), rng_(rng), dim_(dim) {
    levels_.reserve(static_cast<std::size_t>(max_depth));
    scratch_.resize(dim);
  }

  /// The work vectors of tree level `index`, allocated the first time the tree gets that deep.
  Level& level(int index) {
    while (static_cast<int>(levels_.size()) <= index) {
      Level& level = levels_.emplace_back();
      level.z_propose_final = PhasePoint{Vec(dim_), Vec(dim_), Vec(dim_), 0.0};
      for (Vec* v : {&level.p_init_end, &level.p_sharp_init_end, &level.rho_init, &level.p_final_beg,
                     &level.p_sharp_final_beg, &level.rho_final, &level.rho_extended})
        v->resize(dim_);
    }
    return levels_[static_cast<std::size_t>(index)];
  }

  /// Builds a subtree of 2^depth leapfrog steps from z in direction sign (Stan's build_tree).
  /// Returns false when the subtree diverged or (at depth > 0) turned.
  bool build_tree(int depth, PhasePoint& z, PhasePoint& z_propose, Vec& p_sharp_beg, Vec& p_sharp_end, Vec& rho,
                  Vec& p_beg, Vec& p_end, double h0, double sign, double& log_sum_weight) {
    if (depth == 0) {
      const bool finite = leapfrog(density_, metric_, sign * eps_, z, scratch_);
      ++n_leapfrog_;
      if (finite) velocity(metric_, z.momentum, p_sharp_beg);  // p sharp, and K(p) = p . p sharp / 2
      const double h = finite ? hamiltonian(z, p_sharp_beg) : std::numeric_limits<double>::infinity();
      if (!(h - h0 <= max_delta_h_)) divergent_ = true;  // also for h = inf / NaN
      if (divergent_) return false;
      log_sum_weight = log_sum_exp(log_sum_weight, h0 - h);
      sum_metro_prob_ += h0 - h > 0 ? 1.0 : std::exp(h0 - h);
      copy_point(z, z_propose);
      p_sharp_end = p_sharp_beg;
      rho += z.momentum;
      p_beg = z.momentum;
      p_end = p_beg;
      return true;
    }
    Level& w = level(depth - 1);
    // The initial subtree.
    double log_sum_weight_init = kNegInf;
    w.rho_init.setZero();
    if (!build_tree(depth - 1, z, z_propose, p_sharp_beg, w.p_sharp_init_end, w.rho_init, p_beg, w.p_init_end, h0,
                    sign, log_sum_weight_init))
      return false;
    // The final subtree.
    double log_sum_weight_final = kNegInf;
    w.rho_final.setZero();
    if (!build_tree(depth - 1, z, w.z_propose_final, w.p_sharp_final_beg, p_sharp_end, w.rho_final, w.p_final_beg,
                    p_end, h0, sign, log_sum_weight_final))
      return false;
    // Multinomial sample from the right subtree (uniform progressive sampling inside subtrees).
    const double log_sum_weight_subtree = log_sum_exp(log_sum_weight_init, log_sum_weight_final);
    log_sum_weight = log_sum_exp(log_sum_weight, log_sum_weight_subtree);
    bool take_final = log_sum_weight_final > log_sum_weight_subtree;
    if (!take_final) take_final = rng_.uniform() < std::exp(log_sum_weight_final - log_sum_weight_subtree);
    // Swapped, not copied: z_propose_final is written whole at the next leaf before it is read.
    if (take_final) swap_points(w.z_propose_final, z_propose);
    // rho_subtree = rho_init + rho_final (held in rho_extended for the first check).
    w.rho_extended = w.rho_init + w.rho_final;
    rho += w.rho_extended;
    // Demand satisfaction around the merged subtrees...
    bool persist = !is_turning(p_sharp_beg, p_sharp_end, w.rho_extended);
    // ... and between them (Stan's extra checks): init subtree plus the first point of the final one,
    // and final subtree plus the last point of the initial one.
    w.rho_extended = w.rho_init + w.p_final_beg;
    persist = persist && !is_turning(p_sharp_beg, w.p_sharp_final_beg, w.rho_extended);
    w.rho_extended = w.rho_final + w.p_init_end;
    persist = persist && !is_turning(w.p_sharp_init_end, p_sharp_end, w.rho_extended);
    return persist;
  }

  static void copy_point(const PhasePoint& from, PhasePoint& to) {
    to.position = from.position;
    to.momentum = from.momentum;
    to.grad = from.grad;
    to.log_density = from.log_density;
  }
  /// Exchanges the vectors' storage (no pass over them): a proposal that is taken over replaces
  /// a point that the tree overwrites whole before it reads it again.
  static void swap_points(PhasePoint& a, PhasePoint& b) {
    a.position.swap(b.position);
    a.momentum.swap(b.momentum);
    a.grad.swap(b.grad);
    std::swap(a.log_density, b.log_density);
  }

  int n_leapfrog_ = 0;
  double sum_metro_prob_ = 0.0;
  bool divergent_ = false;

 private:
  const LogDensity& density_;
  const Metric& metric_;
  double eps_;
  double max_delta_h_;
  Rng& rng_;
  Index dim_;
  std::vector<Level> levels_;  // reserved up front: references stay valid as it grows
  Vec scratch_;
};

}  // namespace

NutsStep Nuts::step(Rng& rng, const GradientState& state, const NutsParams& params) const {
  const Index dim = state.position.size();
  Metric unit_metric;
  const Metric& metric = metric_or_unit(params.metric, dim, unit_metric);
  const double eps = jittered_step_size(rng, params.step_size, params.step_size_jitter);

  PhasePoint z{state.position, Vec(dim), state.grad, state.log_density};
  sample_momentum(metric, rng, z.momentum);
  PhasePoint z_fwd = z, z_bck = z, z_sample = z, z_propose = z;

  Vec p_sharp0(dim);
  velocity(metric, z.momentum, p_sharp0);
  Vec p_fwd_fwd = z.momentum, p_sharp_fwd_fwd = p_sharp0;
  Vec p_fwd_bck = z.momentum, p_sharp_fwd_bck = p_sharp0;
  Vec p_bck_fwd = z.momentum, p_sharp_bck_fwd = p_sharp0;
  Vec p_bck_bck = z.momentum, p_sharp_bck_bck = p_sharp0;
  Vec rho = z.momentum;
  Vec rho_fwd(dim), rho_bck(dim), rho_extended(dim);

  double log_sum_weight = 0.0;  // log of the weight exp(H0 - H0) of the initial point
  const double h0 = hamiltonian(z, p_sharp0);  // as at the leaves
  TreeBuilder tree(*density_, metric, eps, params.divergence_threshold, params.max_depth, dim, rng);

  int depth = 0;
  while (depth < params.max_depth) {
    rho_fwd.setZero();
    rho_bck.setZero();
    bool valid_subtree = false;
    double log_sum_weight_subtree = kNegInf;
    if (rng.uniform() > 0.5) {
      // Extend forwards from the forward end.
      rho_bck = rho;
      p_bck_fwd = p_fwd_bck;
      p_sharp_bck_fwd = p_sharp_fwd_bck;
      valid_subtree = tree.build_tree(depth, z_fwd, z_propose, p_sharp_fwd_bck, p_sharp_fwd_fwd, rho_fwd, p_fwd_bck,
                                      p_fwd_fwd, h0, 1.0, log_sum_weight_subtree);
    } else {
      // Extend backwards from the backward end.
      rho_fwd = rho;
      p_fwd_bck = p_bck_fwd;
      p_sharp_fwd_bck = p_sharp_bck_fwd;
      valid_subtree = tree.build_tree(depth, z_bck, z_propose, p_sharp_bck_fwd, p_sharp_bck_bck, rho_bck, p_bck_fwd,
                                      p_bck_bck, h0, -1.0, log_sum_weight_subtree);
    }
    if (!valid_subtree) break;
    ++depth;
    // Biased progressive sampling at the top level: prefer the new subtree (Betancourt 2017 A.3.2).
    // z_propose is written whole at the next subtree's first leaf, so it can give its storage away.
    if (log_sum_weight_subtree > log_sum_weight) {
      TreeBuilder::swap_points(z_propose, z_sample);
    } else if (rng.uniform() < std::exp(log_sum_weight_subtree - log_sum_weight)) {
      TreeBuilder::swap_points(z_propose, z_sample);
    }
    log_sum_weight = log_sum_exp(log_sum_weight, log_sum_weight_subtree);
    rho = rho_bck + rho_fwd;
    // Demand satisfaction around the merged subtrees ...
    bool persist = !is_turning(p_sharp_bck_bck, p_sharp_fwd_fwd, rho);
    // ... and between them (Stan's extra checks).
    rho_extended = rho_bck + p_fwd_bck;
    persist = persist && !is_turning(p_sharp_bck_bck, p_sharp_fwd_bck, rho_extended);
    rho_extended = rho_fwd + p_bck_fwd;
    persist = persist && !is_turning(p_sharp_bck_fwd, p_sharp_fwd_fwd, rho_extended);
    if (!persist) break;
  }

  NutsStep out;
  out.info.tree_depth = depth;
  out.info.num_leapfrog_steps = tree.n_leapfrog_;
  out.info.is_divergent = tree.divergent_;
  out.info.accept_prob = tree.n_leapfrog_ > 0 ? tree.sum_metro_prob_ / tree.n_leapfrog_ : 0.0;
  out.info.step_size = eps;
  out.info.energy = hamiltonian(metric, z_sample);
  out.state = GradientState{std::move(z_sample.position), z_sample.log_density, std::move(z_sample.grad)};
  return out;
}

}  // namespace uqnn
