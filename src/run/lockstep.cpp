#include "uqnn/run/lockstep.hpp"

#include <vector>

#include "uqnn/core/error.hpp"
#include "uqnn/core/randomized_log_density.hpp"

namespace uqnn {

namespace {

/// A gradient request of a lockstep density: on the whole data, or (with `minibatch`) on a minibatch.
/// Requests to the same density batch when both are on the whole data or both on minibatches of one
/// size (the lanes of a pass share their examples' count).
struct DensityRequest final : LockstepRequest {
  const LogDensity* density = nullptr;
  const Vec* theta = nullptr;
  const IndexVec* minibatch = nullptr;
  Vec* grad = nullptr;
  double value = 0.0;

  bool batches_with(const LockstepRequest& other) const override {
    const auto* o = dynamic_cast<const DensityRequest*>(&other);
    if (!o || o->density != density || (o->minibatch == nullptr) != (minibatch == nullptr)) return false;
    return minibatch == nullptr || minibatch->size() == o->minibatch->size();
  }
  void evaluate_batch(std::span<LockstepRequest* const> batch) const override {
    std::vector<const Vec*> thetas;
    std::vector<const IndexVec*> minibatches;
    std::vector<Vec*> grads;
    std::vector<double> values(batch.size(), 0.0);
    for (LockstepRequest* r : batch) {
      const auto& request = static_cast<const DensityRequest&>(*r);
      thetas.push_back(request.theta);
      minibatches.push_back(request.minibatch);
      grads.push_back(request.grad);
    }
    if (minibatch)  // only a LockstepStochasticLogDensity asks for minibatches
      static_cast<const StochasticLogDensity*>(density)->minibatch_log_density_and_grad_batch(thetas, minibatches, grads, values);
    else
      density->log_density_and_grad_batch(thetas, grads, values);
    for (std::size_t b = 0; b < batch.size(); ++b) static_cast<DensityRequest&>(*batch[b]).value = values[b];
  }
};

/// A gradient request (with `minibatch`, on it), evaluated with the other lockstep tasks' requests.
double request(const LogDensity& density, const Vec& theta, const IndexVec* minibatch, Vec& grad) {
  DensityRequest r;
  r.density = &density, r.theta = &theta, r.minibatch = minibatch, r.grad = &grad;
  evaluate_in_lockstep(r);
  return r.value;
}

}  // namespace

LockstepLogDensity::LockstepLogDensity(std::shared_ptr<const LogDensity> batched) : batched_(std::move(batched)) {
  if (!batched_) throw std::invalid_argument("LockstepLogDensity: no density");
}

double LockstepLogDensity::log_density_and_grad(const Vec& theta, Vec& grad) const { return request(*batched_, theta, nullptr, grad); }

LockstepStochasticLogDensity::LockstepStochasticLogDensity(std::shared_ptr<const StochasticLogDensity> batched)
    : batched_(std::move(batched)) {
  if (!batched_) throw std::invalid_argument("LockstepStochasticLogDensity: no density");
}

double LockstepStochasticLogDensity::log_density_and_grad(const Vec& theta, Vec& grad) const {
  return request(*batched_, theta, nullptr, grad);
}

double LockstepStochasticLogDensity::minibatch_log_density_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const {
  return request(*batched_, theta, &batch, grad);
}

std::shared_ptr<const LogDensity> make_lockstep_density(std::shared_ptr<const LogDensity> density) {
  if (dynamic_cast<const RandomizedLogDensity*>(density.get()))
    throw InputError(
        "--lockstep does not apply to a log density that draws its own randomness at each gradient (fsgld's and fsghmc's "
        "functional prior); run without --lockstep");
  if (auto stochastic = std::dynamic_pointer_cast<const StochasticLogDensity>(density))
    return std::make_shared<LockstepStochasticLogDensity>(std::move(stochastic));
  return std::make_shared<LockstepLogDensity>(std::move(density));
}

}  // namespace uqnn
