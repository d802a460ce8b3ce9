// Checks of the MPI scale-out (issue 16) run under `mpirun -np R` (R = 1, 2, 3; tests/CMakeLists.txt):
//   gradient  the sharded log density and gradient (Posterior::distribute_rows over all R ranks)
//             equal the single-process ones to 1e-10 relative (float rounding of a different sum
//             order), and are bitwise identical on every rank;
//   minibatch the sharded minibatch log density and gradient (SG-MCMC's, minibatch training's) of a
//             dense network, a small CNN (a residual block, GroupNorm) and the functional posterior of
//             fSGLD equal the single-process ones to 1e-12 relative, for batches of 1 row (fewer rows
//             than shards), 2, 7 and all rows, and are bitwise identical on every rank;
//   chains    run_chains over R ranks returns every chain bitwise equal to the run in one process;
//   members   run_members (fit_deep_ensemble) over R ranks equals the run in one process;
//   shared    a chain failing on one rank (bad initial point of chain 1) is rethrown on every rank as
//             the same InputError with that chain's message;
//   alone     one rank throws outside any collective: report_failure must end the whole run (non-zero
//             exit, the rank's message) instead of leaving rank 0 waiting (the test's timeout fails a hang).
// Each check prints "ok <name>" on rank 0 and returns 0, or prints what differs and returns 1.
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <stdexcept>

#include "uqnn/approx/ensemble.hpp"
#include "uqnn/core/communicator.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/core/mpi_session.hpp"
#include "uqnn/nn/cnn.hpp"
#include "uqnn/nn/cnn_layer_list.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/prob/functional_posterior.hpp"
#include "uqnn/prob/posterior.hpp"
#include "uqnn/run/chain_samplers.hpp"
#include "uqnn/run/run_chains.hpp"

namespace {

using namespace uqnn;

std::shared_ptr<Posterior> make_posterior(Index n) {
  auto model = std::make_shared<Mlp>(MlpSpec{2, {5}, 1, Activation::Tanh, InitScheme::Glorot});
  Rng rng(7);
  Mat X(2, n), Y(1, n);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < n; ++i) Y(0, i) = std::sin(3 * X(0, i)) + 0.2 * rng.normal();
  return std::make_shared<Posterior>(model, make_learned_sigma_likelihood(0.5), GaussianPrior::isotropic(model->num_params(), 1.3),
                                     X, Y);
}

/// The same vector on every rank, bit for bit.
bool same_on_all_ranks(const Communicator& world, const Vec& v) {
  ByteWriter w;
  w.put(std::vector<double>(v.data(), v.data() + v.size()));
  const std::string mine = w.take();
  for (const std::string& other : world.all_gather(mine))
    if (other != mine) return false;
  return true;
}

int check_gradient(const Communicator& world) {
  const auto posterior = make_posterior(37);  // 37 rows: the shards differ in size for R = 2, 3
  Rng rng(3);
  int failures = 0;
  for (int trial = 0; trial < 5; ++trial) {
    const Vec theta = rng.normal_vector(posterior->dim());
    Vec full_grad, shard_grad;
    posterior->distribute_rows(nullptr);
    const double full = posterior->log_density_and_grad(theta, full_grad);
    posterior->distribute_rows(world_communicator());
    const double sharded = posterior->log_density_and_grad(theta, shard_grad);
    posterior->distribute_rows(nullptr);
    const double scale = std::max(1.0, full_grad.cwiseAbs().maxCoeff());
    const double value_error = std::abs(sharded - full) / std::max(1.0, std::abs(full));
    const double grad_error = (shard_grad - full_grad).cwiseAbs().maxCoeff() / scale;
    Vec both(shard_grad.size() + 1);
    both << shard_grad, sharded;
    if (!(value_error < 1e-10 && grad_error < 1e-10) || !same_on_all_ranks(world, both)) {
      if (world.is_root())
        std::cerr << "gradient: trial " << trial << ": value " << sharded << " vs " << full << ", relative gradient error "
                  << grad_error << '\n';
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

/// A CNN on 1x6x6 images with 3 classes: a conv, GroupNorm, a residual block with a strided 1x1
/// shortcut, pooling and a dense layer, on 23 random images.
std::shared_ptr<Posterior> make_cnn_posterior() {
  const ImageShape shape{1, 6, 6};
  const std::string text = "conv4k3p1,gn2,res6s2,gap,fc5";
  auto model = std::make_shared<Cnn>(shape, parse_cnn_layers(text, shape, 3, Activation::Tanh), InitScheme::He, text);
  Rng rng(5);
  const Index n = 23;
  Mat X(shape.size(), n), Y(1, n);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = rng.uniform(-1, 1);
  for (Index i = 0; i < n; ++i) Y(0, i) = static_cast<double>(i % 3);
  return std::make_shared<Posterior>(model, make_categorical_likelihood(3), GaussianPrior::isotropic(model->num_params(), 0.8), X, Y);
}

/// The functional posterior of fSGLD (GP prior at 4 data + 3 box points, a fresh set per call of
/// the randomized evaluation), with the weight prior kept, over a posterior with a learned sigma.
std::shared_ptr<FunctionalPosterior> make_functional(const std::shared_ptr<Posterior>& posterior) {
  GpHyperparameters h;
  h.signal_variance = 1.2;
  h.length_scales = Vec::Constant(1, 0.7);
  MeasurementParams mp;
  mp.num_data_points = 4;
  mp.num_box_points = 3;
  FunctionalPrior prior(posterior->model_ptr(), GaussianProcess(GpKernel::Rbf, h));
  return std::make_shared<FunctionalPosterior>(posterior, std::move(prior), MeasurementSampler(posterior->inputs(), mp), 9, true);
}

/// evaluate(theta, batch, grad) with the rows in one process and distributed over all ranks: the
/// value and gradient agree to 1e-12 relative and the sharded ones are bitwise the same on every rank.
int compare_sharded(const Communicator& world, Posterior& posterior, const std::string& what,
                    const std::function<double(const Vec&, const IndexVec&, Vec&)>& evaluate) {
  Rng rng(17);
  const Index n = posterior.num_data();
  int failures = 0;
  for (const Index size : {Index{1}, Index{2}, Index{7}, n}) {
    for (int trial = 0; trial < 2; ++trial) {
      Vec theta = posterior.initial_point(rng);
      theta += 0.3 * rng.normal_vector(theta.size());
      IndexVec batch = rng.permutation(n);  // the same on every rank (same seed), as a chain's batch is
      batch.resize(static_cast<std::size_t>(size));
      Vec full_grad, shard_grad;
      posterior.distribute_rows(nullptr);
      const double full = evaluate(theta, batch, full_grad);
      posterior.distribute_rows(world_communicator());
      const double sharded = evaluate(theta, batch, shard_grad);
      posterior.distribute_rows(nullptr);
      const double value_error = std::abs(sharded - full) / std::max(1.0, std::abs(full));
      const double grad_error = (shard_grad - full_grad).cwiseAbs().maxCoeff() / std::max(1.0, full_grad.cwiseAbs().maxCoeff());
      Vec both(shard_grad.size() + 1);
      both << shard_grad, sharded;
      const bool same = same_on_all_ranks(world, both);
      if (!(value_error < 1e-12 && grad_error < 1e-12) || !same) {
        if (world.is_root())
          std::cerr << "minibatch: " << what << ", batch of " << size << ": value " << sharded << " vs " << full
                    << " (relative error " << value_error << "), relative gradient error " << grad_error
                    << (same ? "" : ", differs between ranks") << '\n';
        ++failures;
      }
    }
  }
  return failures;
}

int check_minibatch(const Communicator& world) {
  int failures = 0;
  const auto dense = make_posterior(37);
  const auto cnn = make_cnn_posterior();
  for (const auto& named : std::vector<std::pair<std::string, std::shared_ptr<Posterior>>>{{"dense network", dense}, {"cnn", cnn}}) {
    const Posterior& posterior = *named.second;
    failures += compare_sharded(world, *named.second, named.first, [&](const Vec& theta, const IndexVec& batch, Vec& grad) {
      return posterior.minibatch_log_density_and_grad(theta, batch, grad);
    });
  }
  // The batched (lanes) variant of the dense network, which falls back to one minibatch at a time.
  failures += compare_sharded(world, *dense, "dense network, lanes", [&](const Vec& theta, const IndexVec& batch, Vec& grad) {
    const Vec* thetas[] = {&theta};
    const IndexVec* batches[] = {&batch};
    Vec* grads[] = {&grad};
    double values[1];
    dense->minibatch_log_density_and_grad_batch(thetas, batches, grads, values);
    return values[0];
  });
  // fSGLD's target: the functional prior at fresh measurement points (every rank draws the same
  // from the same Rng), the minibatch and the full data.
  const auto functional = make_functional(dense);
  failures += compare_sharded(world, *dense, "functional posterior", [&](const Vec& theta, const IndexVec& batch, Vec& grad) {
    Rng points(23);
    return functional->randomized_log_density_and_grad(points, theta, &batch, grad);
  });
  failures += compare_sharded(world, *dense, "functional posterior, full data", [&](const Vec& theta, const IndexVec&, Vec& grad) {
    return functional->log_density_and_grad(theta, grad);
  });
  return failures == 0 ? 0 : 1;
}

RunConfig chain_config() {
  RunConfig c;
  c.num_chains = 4;
  c.num_threads = 2;
  c.num_warmup = 40;
  c.num_draws = 30;
  c.seed = 11;
  return c;
}

int check_chains(const Communicator& world) {
  const auto posterior = make_posterior(20);
  NutsConfig nuts;
  nuts.kernel.metric = make_unit_metric(posterior->dim());
  const auto factory = make_sampler_factory(posterior, nuts);
  const InitialPointFn init = [&](int, Rng& rng) { return posterior->initial_point(rng); };
  const auto world_ptr = world_communicator();
  set_world_communicator(std::make_shared<SerialCommunicator>());  // the single-process reference
  const RunResult serial = run_chains(chain_config(), factory, init);
  set_world_communicator(world_ptr);
  RunConfig one_thread = chain_config();
  one_thread.num_threads = 1;
  const RunResult spread = run_chains(one_thread, factory, init);
  for (int c = 0; c < serial.num_chains(); ++c) {
    const auto ci = static_cast<std::size_t>(c);
    bool same = serial.draws[ci].rows() == spread.draws[ci].rows() && serial.draws[ci] == spread.draws[ci] &&
                serial.stats[ci].size() == spread.stats[ci].size() && serial.warmup_stats[ci].size() == spread.warmup_stats[ci].size() &&
                serial.initial_points[ci] == spread.initial_points[ci] &&
                serial.sampler_descriptions[ci] == spread.sampler_descriptions[ci];
    for (std::size_t d = 0; same && d < serial.stats[ci].size(); ++d)
      same = serial.stats[ci][d].lp == spread.stats[ci][d].lp && serial.stats[ci][d].n_leapfrog == spread.stats[ci][d].n_leapfrog &&
             serial.stats[ci][d].energy == spread.stats[ci][d].energy;
    if (!same) {
      std::cerr << "chains: rank " << world.rank() << ": chain " << c << " differs from the single-process run\n";
      return 1;
    }
  }
  return 0;
}

int check_members(const Communicator& world) {
  const auto posterior = make_posterior(20);
  EnsembleParams p;
  p.members = 5;
  p.threads = 1;
  p.training.epochs = 30;
  const auto world_ptr = world_communicator();
  set_world_communicator(std::make_shared<SerialCommunicator>());
  const auto serial = fit_deep_ensemble(*posterior, p, 4);
  set_world_communicator(world_ptr);
  const auto spread = fit_deep_ensemble(*posterior, p, 4);
  for (std::size_t j = 0; j < serial.size(); ++j)
    if (!(serial[j].theta == spread[j].theta) || serial[j].rows != spread[j].rows ||
        serial[j].history.train_loss != spread[j].history.train_loss) {
      std::cerr << "members: rank " << world.rank() << ": member " << j << " differs from the single-process run\n";
      return 1;
    }
  return 0;
}

int check_shared_failure(const Communicator& world) {
  const auto posterior = make_posterior(20);
  const auto factory = make_sampler_factory(posterior, NutsConfig{});
  // Chain 1 starts at a non-finite point: the rank running it fails, every rank must hear of it.
  const InitialPointFn init = [&](int chain, Rng& rng) {
    Vec x = posterior->initial_point(rng);
    if (chain == 1) x[0] = std::nan("");
    return x;
  };
  try {
    run_chains(chain_config(), factory, init);
  } catch (const InputError& e) {
    if (std::strstr(e.what(), "chain 1") != nullptr) return 0;
    std::cerr << "shared: rank " << world.rank() << ": the message does not name chain 1: " << e.what() << '\n';
    return 1;
  }
  std::cerr << "shared: rank " << world.rank() << ": no InputError\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  uqnn::MpiSession mpi(argc, argv);
  const auto world = uqnn::world_communicator();
  const std::string check = argc > 1 ? argv[1] : "";
  try {
    int result = 1;
    if (check == "gradient") result = check_gradient(*world);
    else if (check == "minibatch") result = check_minibatch(*world);
    else if (check == "chains") result = check_chains(*world);
    else if (check == "members") result = check_members(*world);
    else if (check == "shared") result = check_shared_failure(*world);
    else if (check == "alone") {
      // The last rank fails on its own while the others wait in a collective (as rank 0 would wait for
      // chains): without report_failure's abort this hangs until the test's timeout.
      if (world->rank() == world->size() - 1) throw std::runtime_error("planted failure on the last rank");
      world->all_gather("waiting");
      return 0;
    } else {
      std::cerr << "usage: uqnn_mpi_checks gradient|minibatch|chains|members|shared|alone\n";
      return 2;
    }
    // Every rank's verdict: the check passes only if it passed everywhere.
    std::vector<double> failed{static_cast<double>(result)};
    world->all_reduce_sum(failed);
    if (world->is_root()) std::cout << (failed[0] == 0 ? "ok " : "FAILED ") << check << " on " << world->size() << " rank(s)\n";
    return failed[0] == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    return uqnn::report_failure(e.what(), 1);
  }
}
