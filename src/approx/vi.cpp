#include "uqnn/approx/vi.hpp"

#include <fmt/format.h>

#include <cmath>

#include "uqnn/core/error.hpp"
#include "uqnn/optim/epoch_loop.hpp"

namespace uqnn {

namespace {
double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
}  // namespace

double softplus(double rho) { return rho > 30 ? rho : std::log1p(std::exp(rho)); }
double inverse_softplus(double sigma) { return sigma > 30 ? sigma : std::log(std::expm1(sigma)); }

void ViParams::validate() const {
  require(epochs >= 1, "vi epochs", ">= 1");
  require(learning_rate > 0, "vi learning_rate", "> 0");
  require(batch_size >= 0, "vi batch_size", ">= 0 (0 = full batch)");
  require(num_samples >= 1, "vi num_samples (S)", ">= 1");
  require(mu_init_lower <= mu_init_upper, "vi mu_init_lower", "<= mu_init_upper");
  require(rho_init_lower <= rho_init_upper, "vi rho_init_lower", "<= rho_init_upper");
  require(monitor_window >= 0, "vi monitor_window", ">= 0 (0 = off)");
  schedule.validate();
}

BayesByBackpropGradient bayes_by_backprop_gradient(const Vec& mu, const Vec& rho, const Prior& prior, const Likelihood& lik,
                                                   bool analytic_kl, Index num_samples, double kl_divisor,
                                                   const std::function<double(const Vec& w, Vec& grad)>& data_term, Rng& rng) {
  const Index K = mu.size(), P = prior.dim(), E = K - P;
  const auto* gaussian = dynamic_cast<const GaussianPrior*>(&prior);
  if (analytic_kl && gaussian == nullptr) throw std::invalid_argument("vi: the analytic KL needs a Gaussian prior");
  Vec sigma(K), dsigma(K);
  for (Index k = 0; k < K; ++k) {
    sigma[k] = softplus(rho[k]);
    dsigma[k] = sigmoid(rho[k]);
  }
  BayesByBackpropGradient out;
  out.g_mu = Vec::Zero(K);
  out.g_rho = Vec::Zero(K);
  const double inv_S = 1.0 / static_cast<double>(num_samples);
  for (Index s = 0; s < num_samples; ++s) {
    const Vec eps = rng.normal_vector(K);
    const Vec w = mu + sigma.cwiseProduct(eps);
    // d/dw of the data term -(N/|b|) sum log p(y_i | w).
    Vec g_w = Vec::Zero(K);
    const double nll = -data_term(w, g_w);
    g_w = -g_w;
    out.nll += inv_S * nll;
    if (!analytic_kl || E > 0) {
      // Monte Carlo KL, seed 001: log q(w) - log p(w) (for analytic KL only the extras' part).
      const Index first = analytic_kl ? P : 0;
      double log_q = 0.0;
      for (Index k = first; k < K; ++k) log_q += -std::log(sigma[k]) - 0.5 * eps[k] * eps[k] - 0.5 * kLog2Pi;
      Vec g_prior = Vec::Zero(K);
      double log_p = 0.0;
      if (first == 0) {
        Vec gp = Vec::Zero(P);
        log_p += prior.log_density(w.head(P), &gp);
        g_prior.head(P) = gp;
      }
      Vec ge = Vec::Zero(E);
      log_p += lik.extra_log_prior(w.tail(E), &ge);
      g_prior.tail(E) = ge;
      out.kl += inv_S * (log_q - log_p);
      // log q(mu + sigma eps) = sum -log sigma - eps^2/2 - const: its total derivative is
      // 0 in mu and -sigma'/sigma in rho; -log p contributes through w.
      g_w -= g_prior / kl_divisor;
      for (Index k = first; k < K; ++k) out.g_rho[k] += inv_S * (-dsigma[k] / sigma[k]) / kl_divisor;
    }
    out.g_mu += inv_S * g_w;
    out.g_rho += inv_S * g_w.cwiseProduct(eps).cwiseProduct(dsigma);
  }
  if (analytic_kl) {
    // KL(N(mu, sigma^2) || N(m, s^2)) = log(s / sigma) + (sigma^2 + (mu - m)^2) / (2 s^2) - 1/2.
    const Vec& m = gaussian->mean();
    const Vec& sd = gaussian->sd();
    for (Index k = 0; k < P; ++k) {
      const double s2 = sd[k] * sd[k], d = mu[k] - m[k];
      out.kl += std::log(sd[k] / sigma[k]) + (sigma[k] * sigma[k] + d * d) / (2 * s2) - 0.5;
      out.g_mu[k] += (d / s2) / kl_divisor;
      out.g_rho[k] += ((-1.0 / sigma[k] + sigma[k] / s2) * dsigma[k]) / kl_divisor;
    }
  }
  return out;
}

ViResult fit_bayes_by_backprop(const Posterior& post, const Prior& prior, const ViParams& params, Rng& rng,
                               const std::function<bool(Index, double)>& on_epoch) {
  const MinibatchLogLikelihood columns = [&post](const Vec& w, const IndexVec& rows, Vec* grad) {
    return post.log_likelihood(w, gather_columns(post.inputs(), rows), gather_columns(post.targets(), rows), grad);
  };
  return fit_bayes_by_backprop(post, prior, params, rng, columns, on_epoch);
}

ViResult fit_bayes_by_backprop(const Posterior& post, const Prior& prior, const ViParams& params, Rng& rng,
                               const MinibatchLogLikelihood& data_term, const std::function<bool(Index, double)>& on_epoch) {
  params.validate();
  const Index K = post.dim(), P = post.model().num_params(), E = post.likelihood().num_extra();
  if (prior.dim() != P) throw std::invalid_argument(fmt::format("vi: prior has dimension {}, the network {}", prior.dim(), P));
  const Likelihood& lik = post.likelihood();
  ViResult result;
  result.analytic_kl = params.analytic_kl && dynamic_cast<const GaussianPrior*>(&prior) != nullptr;

  Vec mu(K), rho(K);
  for (Index k = 0; k < K; ++k) {
    mu[k] = rng.uniform(params.mu_init_lower, params.mu_init_upper);
    rho[k] = rng.uniform(params.rho_init_lower, params.rho_init_upper);
  }
  mu.tail(E) = lik.initial_extra();
  if (params.initial_mean.size() > 0) {
    if (params.initial_mean.size() != K)
      throw std::invalid_argument(fmt::format("vi initial_mean has {} entries, the posterior {}", params.initial_mean.size(), K));
    mu = params.initial_mean;
  }

  const Index N = post.num_data();
  const Index batch = (params.batch_size == 0 || params.batch_size > N) ? N : params.batch_size;
  const Index B = (N + batch - 1) / batch;  // ceil (QUiNN's (N + 1) // batch is off by one)
  OptimizerParams adam;
  adam.name = "adam";
  adam.learning_rate = params.learning_rate;
  auto optimizer = make_optimizer(adam, 2 * K);
  LearningRateSchedule schedule(params.schedule, params.learning_rate);
  Vec phi(2 * K), grad_phi(2 * K);
  double monitored = std::numeric_limits<double>::quiet_NaN();
  const Index window = params.monitor_window == 0 ? 0 : std::max(params.monitor_window, params.epochs / 10);
  const bool monitor = window > 0 && params.epochs >= 2 * window;
  Vec mu_sum_last = Vec::Zero(K), mu_sum_before = Vec::Zero(K);
  double lr = 0.0, elbo_sum = 0.0;
  EpochLoopCallbacks callbacks;
  callbacks.state = [&](StateArchive& a) {
    a.io(mu), a.io(rho), a.io(rng), a.io(monitored), a.io(mu_sum_last), a.io(mu_sum_before);
    a.io(result.elbo);
    optimizer->archive(a);
    schedule.archive(a);
  };
  callbacks.on_epoch_begin = [&](Index epoch) {
    lr = schedule.next(epoch, monitored);
    elbo_sum = 0.0;
  };
  // One Adam step on seed 001's minibatch loss (the file comment): the data term scaled by N / |b|.
  callbacks.on_step = [&](Index epoch, const IndexVec& rows) {
    const double scale = static_cast<double>(N) / static_cast<double>(rows.size());
    const BayesByBackpropGradient step = bayes_by_backprop_gradient(
        mu, rho, prior, lik, result.analytic_kl, params.num_samples, static_cast<double>(B),
        [&](const Vec& w, Vec& grad) {
          const double value = data_term(w, rows, &grad);
          grad *= scale;
          return scale * value;
        },
        rng);
    elbo_sum += -(step.kl + step.nll);
    phi << mu, rho;
    grad_phi << step.g_mu, step.g_rho;
    if (!grad_phi.allFinite())
      throw DivergenceError(fmt::format("vi diverged (non-finite gradient) at epoch {}: lower the learning rate", epoch));
    optimizer->step(phi, grad_phi, lr);
    mu = phi.head(K);
    rho = phi.tail(K);
  };
  callbacks.on_epoch_end = [&](Index epoch) {
    const double elbo = elbo_sum / static_cast<double>(B);
    result.elbo.push_back(elbo);
    if (monitor && epoch >= params.epochs - window) mu_sum_last += mu;
    else if (monitor && epoch >= params.epochs - 2 * window) mu_sum_before += mu;
    monitored = -elbo;
    return on_epoch && !on_epoch(epoch, elbo) ? EpochAction::Stop : EpochAction::Continue;
  };
  const EpochLoopResult ran = run_epochs({.epochs = params.epochs, .num_data = N, .batch_size = params.batch_size,
                                          .checkpoint = params.checkpoint,
                                          .checkpoint_section = "uqnn vi checkpoint 1"}, rng, callbacks);
  result.resumed_at_epoch = ran.resumed_at_epoch;
  result.interrupted = ran.interrupted;
  if (monitor && static_cast<Index>(result.elbo.size()) == params.epochs) {
    result.monitor_window = window;
    result.mu_last_window = mu_sum_last / static_cast<double>(window);
    result.mu_window_before = mu_sum_before / static_cast<double>(window);
  }
  result.mu = mu;
  result.rho = rho;
  Vec sigma(K);
  for (Index k = 0; k < K; ++k) sigma[k] = softplus(rho[k]);
  result.approximation = std::make_shared<DiagonalGaussianPosterior>(mu, sigma);
  return result;
}

}  // namespace uqnn
