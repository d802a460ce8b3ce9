#include "uqnn/optim/optimizer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

void OptimizerParams::validate() const {
  require(optimizer_kinds().contains(name), "optimizer", fmt::format("one of {}", fmt::join(optimizer_kinds().names(), ", ")));
  require(learning_rate > 0 && std::isfinite(learning_rate), "learning_rate", "a finite number > 0");
  require(weight_decay >= 0, "weight_decay", ">= 0");
  require(momentum >= 0 && momentum < 1, "momentum", "in [0, 1)");
  require(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "adam betas", "in [0, 1)");
  require(epsilon > 0, "adam epsilon", "> 0");
}

namespace {

class Sgd : public Optimizer {
 public:
  Sgd(const OptimizerParams& p, Index dim) : p_(p), velocity_(Vec::Zero(dim)) {}
  void step(Vec& theta, const Vec& grad, double lr) override {
    Vec g = grad;
    if (p_.weight_decay > 0) g += p_.weight_decay * theta;
    if (p_.momentum > 0) {
      velocity_ = p_.momentum * velocity_ + g;  // torch.optim.SGD (dampening 0)
      g = velocity_;
    }
    theta -= lr * g;
  }

  void archive(StateArchive& a) override { a.io(velocity_); }

 private:
  OptimizerParams p_;
  Vec velocity_;
};

/// Kingma & Ba (2015), Algorithm 1, with bias correction, as torch.optim.Adam; with `decoupled`
/// the weight decay shrinks theta by lr * weight_decay outside the moments (Loshchilov & Hutter
/// 2019, Algorithm 2), as torch.optim.AdamW.
class Adam : public Optimizer {
 public:
  Adam(const OptimizerParams& p, Index dim, bool decoupled) : p_(p), decoupled_(decoupled), m_(Vec::Zero(dim)), v_(Vec::Zero(dim)) {}
  void step(Vec& theta, const Vec& grad, double lr) override {
    ++t_;
    Vec g = grad;
    if (decoupled_) theta *= 1.0 - lr * p_.weight_decay;
    else if (p_.weight_decay > 0) g += p_.weight_decay * theta;
    m_ = p_.beta1 * m_ + (1 - p_.beta1) * g;
    v_ = p_.beta2 * v_ + (1 - p_.beta2) * g.cwiseAbs2();
    const double c1 = 1 - std::pow(p_.beta1, static_cast<double>(t_));
    const double c2 = 1 - std::pow(p_.beta2, static_cast<double>(t_));
    theta.array() -= lr * (m_.array() / c1) / ((v_.array() / c2).sqrt() + p_.epsilon);
  }

  void archive(StateArchive& a) override { a.io(m_), a.io(v_), a.io(t_); }

 private:
  OptimizerParams p_;
  bool decoupled_;
  Vec m_, v_;
  Index t_ = 0;
};

}  // namespace

const Registry<OptimizerKind>& optimizer_kinds() {
  static const Registry<OptimizerKind> kinds(
      "--optimizer",
      {{.name = "auto", .summary = "lbfgs for a posterior mode on full batches without early stopping, adam otherwise"},
       {.name = "adam", .summary = "Adam, L2 weight decay added to the gradient (torch.optim.Adam)", .reference = "Kingma & Ba 2015",
        .make = [](const OptimizerParams& p, Index dim) -> std::unique_ptr<Optimizer> { return std::make_unique<Adam>(p, dim, false); }},
       {.name = "adamw", .summary = "Adam with decoupled weight decay (torch.optim.AdamW)", .reference = "Loshchilov & Hutter 2019",
        .make = [](const OptimizerParams& p, Index dim) -> std::unique_ptr<Optimizer> { return std::make_unique<Adam>(p, dim, true); }},
       {.name = "sgd", .summary = "stochastic gradient descent with momentum (torch.optim.SGD)",
        .make = [](const OptimizerParams& p, Index dim) -> std::unique_ptr<Optimizer> { return std::make_unique<Sgd>(p, dim); }},
       {.name = "lbfgs", .summary = "limited-memory BFGS on full batches (LBFGSpp)", .reference = "Nocedal & Wright 2006, alg. 7.5"}});
  return kinds;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerParams& params, Index dim) {
  params.validate();
  const OptimizerKind& kind = optimizer_kinds().find(params.name);
  require(static_cast<bool>(kind.make), "optimizer", "a first-order method (lbfgs and auto are resolved in train())");
  return kind.make(params, dim);
}

const Registry<ScheduleKind>& schedule_kinds() {
  static const Registry<ScheduleKind> kinds(
      "--lr-schedule", {{.name = "constant", .summary = "the learning rate throughout"},
                        {.name = "step", .summary = "times gamma every --lr-step-every epochs"},
                        {.name = "exponential", .summary = "times gamma every epoch"},
                        {.name = "plateau", .summary = "times the factor when the loss stalls (torch's ReduceLROnPlateau)"}});
  return kinds;
}

void ScheduleParams::validate() const {
  require(schedule_kinds().contains(name), "lr schedule", fmt::format("one of {}", fmt::join(schedule_kinds().names(), ", ")));
  require(step_every >= 1, "lr step_every", ">= 1");
  require(gamma > 0 && gamma <= 1, "lr gamma", "in (0, 1]");
  require(factor > 0 && factor < 1, "lr plateau factor", "in (0, 1)");
  require(patience >= 0 && cooldown >= 0, "lr plateau patience and cooldown", ">= 0");
  require(min_learning_rate >= 0, "min_learning_rate", ">= 0");
}

LearningRateSchedule::LearningRateSchedule(ScheduleParams params, double initial)
    : params_(std::move(params)), initial_(initial), rate_(initial) {
  params_.validate();
}

double LearningRateSchedule::next(Index epoch, double loss) {
  if (params_.name == "step") {
    rate_ = initial_ * std::pow(params_.gamma, static_cast<double>(epoch / params_.step_every));
  } else if (params_.name == "exponential") {
    rate_ = initial_ * std::pow(params_.gamma, static_cast<double>(epoch));
  } else if (params_.name == "plateau" && std::isfinite(loss)) {
    // torch.optim.lr_scheduler.ReduceLROnPlateau, mode "min", relative threshold 1e-4.
    if (loss < best_ * (1 - 1e-4)) {
      best_ = loss;
      bad_epochs_ = 0;
    } else {
      ++bad_epochs_;
    }
    if (cooldown_left_ > 0) {
      --cooldown_left_;
      bad_epochs_ = 0;
    }
    if (bad_epochs_ > params_.patience) {
      rate_ = std::max(rate_ * params_.factor, params_.min_learning_rate);
      cooldown_left_ = params_.cooldown;
      bad_epochs_ = 0;
    }
  }
  rate_ = std::max(rate_, params_.min_learning_rate);
  return rate_;
}

}  // namespace uqnn
