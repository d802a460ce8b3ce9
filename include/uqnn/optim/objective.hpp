#pragma once
/// @file Objectives the trainer minimises: a mean loss per data point over a minibatch.
#include <memory>

#include "uqnn/core/state_archive.hpp"
#include "uqnn/nn/model.hpp"
#include "uqnn/prob/posterior.hpp"

namespace uqnn {

class Objective {
 public:
  virtual ~Objective() = default;
  virtual Index dim() const = 0;
  virtual Index num_data() const = 0;
  /// Loss on the examples `batch` (an estimate of the full loss) and its gradient (overwritten).
  virtual double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const = 0;
  /// Whether the estimate wanted is this objective's exact minimiser, so that the default optimiser
  /// is full-batch L-BFGS run to a small gradient: true for a posterior mode. False for stochastic
  /// objectives (dropout) and for unregularised losses (deep-ensemble members' NLL or MSE), whose
  /// minimiser interpolates the data: those are trained for a budget of Adam epochs, as seed 001
  /// and Lakshminarayanan et al. (2017) train them.
  virtual bool wants_exact_minimum() const { return false; }
  /// Saves or restores the objective's own random state (dropout's mask stream), which a training
  /// checkpoint keeps with the parameters; none by default. Const like the loss: that state is the
  /// mutable stream the loss draws from.
  virtual void archive(StateArchive&) const {}
};

/// -log p(theta | D) / N estimated on a minibatch: -(1/n) sum_batch log lik - log prior / N.
/// Its minimiser is the MAP estimate; dividing by N keeps learning rates independent of N.
class NegativeLogPosteriorObjective : public Objective {
 public:
  explicit NegativeLogPosteriorObjective(std::shared_ptr<const StochasticLogDensity> density)
      : density_(std::move(density)) {}
  Index dim() const override { return density_->dim(); }
  Index num_data() const override { return density_->num_data(); }
  double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;
  bool wants_exact_minimum() const override { return true; }

 private:
  std::shared_ptr<const StochasticLogDensity> density_;
};

/// Mean negative log-likelihood -(1/n) sum_batch log p(y_i | f(x_i; theta)) of a posterior's model
/// and likelihood, without the prior (the "Gaussian NLL" loss of seed 003 App. D; weight decay, if
/// wanted, comes from the optimiser). Trains the likelihood's extras (learned log sigma) too.
class NegativeLogLikelihoodObjective : public Objective {
 public:
  NegativeLogLikelihoodObjective(std::shared_ptr<const Posterior> posterior, Mat inputs, Mat targets);
  Index dim() const override { return posterior_->dim(); }
  Index num_data() const override { return inputs_.cols(); }
  double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;

 private:
  std::shared_ptr<const Posterior> posterior_;
  Mat inputs_, targets_;
};

/// Mean squared error (1/n) sum_batch ||y_i - f(x_i)||^2 of a model on data (deep ensembles, seed 001).
class MeanSquaredErrorObjective : public Objective {
 public:
  MeanSquaredErrorObjective(std::shared_ptr<const Model> model, Mat inputs, Mat targets);
  Index dim() const override { return model_->num_params(); }
  Index num_data() const override { return inputs_.cols(); }
  double loss_and_grad(const Vec& theta, const IndexVec& batch, Vec& grad) const override;

 private:
  std::shared_ptr<const Model> model_;
  Mat inputs_, targets_;
};

}  // namespace uqnn
