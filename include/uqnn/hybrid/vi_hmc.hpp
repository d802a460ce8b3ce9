#pragma once
/// @file VI-HMC (seed 000, Algorithm 2): a mean-field VI posterior ranks the parameters by their
/// sensitivity S_i^2 (eq. 17); the N-hat most sensitive ones (eq. 18, threshold tau) are sampled
/// by HMC (or NUTS, or any kernel of the driver) from P(Theta_s | D, Theta_~s = mu_~s) (eq. 20)
/// while the rest stay at their VI means.
///
/// What is ours rather than the paper's:
///  - the subspace gradient skips the weight-gradient work of fixed parameters and caches fully
///    fixed leading layers (SubspaceView over a Posterior; the paper's section 3.3 notes PyTorch
///    computes every gradient);
///  - the path-length rule of Appendix C, L = pi s / (2 eps), defaults to s = a posterior standard
///    deviation: for a Gaussian of sd s and unit mass the Hamiltonian flow is a rotation of period
///    2 pi s, so a quarter period (L eps = pi s / 2) takes a point to an independent one. The
///    paper's text says "posterior variance" and its code plugs in the variance, which for s < 1
///    shortens the trajectory by the factor s; `SpreadMeasure::Variance` reproduces it.
///  - the step size may be found by dual averaging for a target acceptance (find_step_size) rather
///    than tuned by hand; the path length then follows from the found step size.
/// Likelihood extras (e.g. a learned log sigma) are always sampled.
#include <memory>
#include <string>
#include <vector>

#include "uqnn/hybrid/sensitivity.hpp"
#include "uqnn/prob/views.hpp"
#include "uqnn/run/run_chains.hpp"

namespace uqnn {

/// Which parameters are sampled.
enum class SubsetRule {
  Sensitive,  ///< the N-hat most sensitive (the method)
  Random,     ///< N-hat drawn uniformly (the control of seed 000 Appendix E)
};
/// Which VI spread s enters L = pi s / (2 eps).
enum class SpreadStatistic { Max, Median };
enum class SpreadMeasure {
  StandardDeviation,  ///< default: the quarter-period argument
  Variance,           ///< the paper's code
};

struct ViHmcParams {
  double tau = 0.9;                          ///< variance threshold of eq. 18, in (0, 1]
  SubsetRule subset = SubsetRule::Sensitive;
  std::uint64_t subset_seed = 0;             ///< Rng(subset_seed, 0) draws a random subset
  std::string sampler = "hmc";               ///< hmc | nuts
  /// Step size; 0 = find it by dual averaging for target_accept before sampling (HMC), or by
  /// Stan's warmup (NUTS).
  double step_size = 0.0;
  double target_accept = 0.8;                ///< in (0, 1)
  int find_step_size_iterations = 300;       ///< dual-averaging transitions when step_size = 0; >= 10
  /// HMC path length: the paper's rule L = pi s / (2 eps) when true, else num_leapfrog_steps.
  bool paper_path_length = true;
  SpreadStatistic spread_statistic = SpreadStatistic::Max;
  SpreadMeasure spread_measure = SpreadMeasure::StandardDeviation;
  int num_leapfrog_steps = 10;               ///< >= 1; also the path length while finding the step size
  int max_leapfrog_steps = 1000;             ///< cap of the rule, >= 1
  /// HMC: each transition uses L' ~ U{1, ..., L} steps (Neal 2011, sec. 5.4.2.2). A fixed L can be
  /// close to a multiple of a half period of some direction of a near-Gaussian target, and then
  /// mixes badly there; the paper uses a fixed L (default).
  bool jitter_path_length = false;
  double step_size_jitter = 0.0;             ///< HMC: eps (1 + u), u ~ U(-j, j); in [0, 1)
  /// Chain starts: mu_s + init_spread * sigma_s * N(0, I) per chain (0 = at the VI means; the
  /// paper initialises "around the mean parameters obtained from VI" for Burgers). >= 0.
  double init_spread = 0.0;
  int nuts_max_depth = 10;
  void validate() const;
};

/// L = ceil(pi s / (2 eps)) with s the max or median of `sd` (or of sd^2), clipped to [1, max_steps].
int paper_path_length(const Vec& sd, double step_size, SpreadStatistic statistic, SpreadMeasure measure, int max_steps);

struct ViHmcResult {
  SensitivityReport sensitivities;  ///< over the network parameters
  Index num_kept = 0;               ///< N-hat of eq. 18 (network parameters sampled)
  IndexVec active;                  ///< sampled coordinates of theta (network subset + extras)
  std::shared_ptr<const SubspaceView> view;
  double step_size = 0.0;           ///< used (fixed, found, or NUTS's adapted step of chain 0)
  int num_leapfrog_steps = 0;       ///< HMC path length (0 for NUTS)
  double find_step_size_seconds = 0.0;
  RunResult run;                    ///< draws in subspace coordinates
  /// Every kept draw as a full theta (fixed coordinates at the VI means), chain-major.
  std::vector<Vec> full_draws() const;
};

/// Algorithm 2 on `posterior` given VI means and sds (length posterior->dim(): network parameters
/// then extras). Sensitivities use the posterior's training inputs. `run` sets chains, warmup
/// (burn-in for HMC at a fixed step; Stan warmup for NUTS), draws, thinning and the seed.
ViHmcResult run_vi_hmc(std::shared_ptr<const Posterior> posterior, const Vec& vi_mean, const Vec& vi_sd,
                       const ViHmcParams& params, const RunConfig& run, const std::vector<Observer*>& observers = {});

/// As run_vi_hmc with the sensitivities already computed (e.g. on other inputs).
ViHmcResult run_vi_hmc(std::shared_ptr<const Posterior> posterior, const Vec& vi_mean, const Vec& vi_sd,
                       SensitivityReport sensitivities, const ViHmcParams& params, const RunConfig& run,
                       const std::vector<Observer*>& observers = {});

}  // namespace uqnn
