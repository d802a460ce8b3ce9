#include "uqnn/approx/laplace.hpp"

#include <fmt/format.h>

#include <cmath>

#include "uqnn/core/error.hpp"

namespace uqnn {

namespace {

/// -d^2 log p(y_i | f) / df^2 for every example, [T x T] each, eigenvalues clipped at 0.
std::vector<Mat> output_precisions(const Posterior& post, const Vec& theta) {
  const Index P = post.model().num_params(), E = post.likelihood().num_extra();
  const Mat Y = post.model().forward(theta.head(P), post.inputs());
  const Index T = Y.rows(), N = Y.cols();
  std::vector<Mat> lambda(static_cast<std::size_t>(N), Mat::Zero(T, T));
  const VecT<Dual> extra = make_dual_vector(theta.tail(E), Vec::Zero(E));
  for (Index o = 0; o < T; ++o) {
    MatT<Dual> Yd(T, N);
    for (Index i = 0; i < N; ++i)
      for (Index r = 0; r < T; ++r) Yd(r, i) = make_dual(Y(r, i), r == o ? 1.0 : 0.0);
    MatT<Dual> dY(T, N);
    VecT<Dual> d_extra(E);
    for (Index e = 0; e < E; ++e) d_extra[e] = make_dual(0.0, 0.0);
    post.likelihood().log_likelihood(Yd, post.targets(), extra, &dY, &d_extra);
    // The log-likelihood is a sum over examples, so its output Hessian is block diagonal.
    for (Index i = 0; i < N; ++i)
      for (Index r = 0; r < T; ++r) lambda[static_cast<std::size_t>(i)](r, o) = -dual_tangent(dY(r, i));
  }
  for (Mat& L : lambda) {
    L = 0.5 * (L + L.transpose()).eval();
    if (T == 1) {
      L(0, 0) = std::max(0.0, L(0, 0));
    } else {
      Eigen::SelfAdjointEigenSolver<Mat> eig(L);
      L = eig.eigenvectors() * eig.eigenvalues().cwiseMax(0.0).asDiagonal() * eig.eigenvectors().transpose();
    }
  }
  return lambda;
}

/// Gradient of log p(y_i | theta) for one example (network and extras).
Vec example_gradient(const Posterior& post, const Vec& theta, Index i) {
  Vec g = Vec::Zero(post.dim());
  post.log_likelihood(theta, post.inputs().col(i), post.targets().col(i), &g);
  return g;
}

/// Gauss-Newton's block for the likelihood's extras (a learned log sigma): their expected Fisher
/// information, with no cross terms to the network (Likelihood::extra_fisher_information). Their
/// exact Hessian rows are indefinite wherever the residuals are not at the noise's MAP (per example,
/// [1/sigma^2, 2r/sigma^2; 2r/sigma^2, 2r^2/sigma^2] has determinant -2 r^2 / sigma^4), which stopped
/// GGN with a learned noise on yacht.
Mat extras_fisher(const Posterior& post, const Vec& theta) {
  const Index P = post.model().num_params(), E = post.likelihood().num_extra();
  if (E == 0) return Mat(0, 0);
  return post.likelihood().extra_fisher_information(post.model().forward(theta.head(P), post.inputs()), theta.tail(E));
}

Vec unit(Index K, Index k) {
  Vec e = Vec::Zero(K);
  e[k] = 1.0;
  return e;
}

}  // namespace

CurvatureBackend parse_curvature_backend(const std::string& name) {
  if (name == "exact") return CurvatureBackend::Exact;
  if (name == "fisher") return CurvatureBackend::Fisher;
  if (name == "ggn") return CurvatureBackend::GaussNewton;
  throw InputError("Laplace curvature '" + name + "' is not known: valid are exact, fisher, ggn");
}
CurvatureStructure parse_curvature_structure(const std::string& name) {
  if (name == "full") return CurvatureStructure::Full;
  if (name == "diag" || name == "diagonal") return CurvatureStructure::Diagonal;
  throw InputError("Laplace structure '" + name + "' is not known: valid are full, diag");
}
std::string to_string(CurvatureBackend b) {
  return b == CurvatureBackend::Exact ? "exact" : b == CurvatureBackend::Fisher ? "fisher" : "ggn";
}
std::string to_string(CurvatureStructure s) { return s == CurvatureStructure::Full ? "full" : "diag"; }

void LaplaceParams::validate() const {
  require(covariance_scale > 0 && std::isfinite(covariance_scale), "covariance_scale (s)", "a finite number > 0");
  require(max_memory_bytes > 0, "max_memory_bytes", "> 0");
}

double laplace_full_memory_bytes(Index K) { return 3.0 * 8.0 * static_cast<double>(K) * static_cast<double>(K); }

Vec prior_precision_diagonal(const Posterior& post, const Vec& theta) {
  const Index P = post.model().num_params(), E = post.likelihood().num_extra();
  Vec p(post.dim());
  p.head(P) = -post.prior().hessian_diagonal(theta.head(P));
  p.tail(E) = -post.likelihood().extra_prior_hessian_diagonal(theta.tail(E));
  return p;
}

Mat curvature_matrix(const Posterior& post, const Vec& theta, CurvatureBackend backend, double max_memory_bytes) {
  const Index K = post.dim(), P = post.model().num_params(), E = post.likelihood().num_extra();
  const double needed = laplace_full_memory_bytes(K);
  if (needed > max_memory_bytes)
    throw InputError(fmt::format("full Laplace with K = {} parameters needs about {:.3g} GiB for K x K matrices, above the "
                                 "limit of {:.3g} GiB: use --laplace-structure diag, or raise --laplace-max-memory-gb",
                                 K, needed / 1073741824.0, max_memory_bytes / 1073741824.0));
  Mat H = Mat::Zero(K, K);
  switch (backend) {
    case CurvatureBackend::Exact:
      for (Index k = 0; k < K; ++k) H.col(k) = -post.hessian_vector_product(theta, unit(K, k));
      H = 0.5 * (H + H.transpose()).eval();
      return H;
    case CurvatureBackend::Fisher:
      for (Index i = 0; i < post.num_data(); ++i) {
        const Vec g = example_gradient(post, theta, i);
        H.selfadjointView<Eigen::Lower>().rankUpdate(g);
      }
      H = H.selfadjointView<Eigen::Lower>();
      break;
    case CurvatureBackend::GaussNewton: {
      const auto lambda = output_precisions(post, theta);
      Mat Hnet = Mat::Zero(P, P);
      for (Index i = 0; i < post.num_data(); ++i) {
        const Mat J = post.model().jacobian(theta.head(P), post.inputs().col(i));  // [T, P]
        Hnet.noalias() += J.transpose() * lambda[static_cast<std::size_t>(i)] * J;
      }
      H.topLeftCorner(P, P) = Hnet;
      H.bottomRightCorner(E, E) = extras_fisher(post, theta);
      break;
    }
  }
  H.diagonal() += prior_precision_diagonal(post, theta);
  return H;
}

Vec curvature_diagonal(const Posterior& post, const Vec& theta, CurvatureBackend backend) {
  const Index K = post.dim(), P = post.model().num_params(), E = post.likelihood().num_extra();
  Vec d = Vec::Zero(K);
  switch (backend) {
    case CurvatureBackend::Exact:
      for (Index k = 0; k < K; ++k) d[k] = -post.hessian_vector_product(theta, unit(K, k))[k];
      return d;
    case CurvatureBackend::Fisher:
      for (Index i = 0; i < post.num_data(); ++i) d += example_gradient(post, theta, i).array().square().matrix();
      break;
    case CurvatureBackend::GaussNewton: {
      const auto lambda = output_precisions(post, theta);
      for (Index i = 0; i < post.num_data(); ++i) {
        const Mat J = post.model().jacobian(theta.head(P), post.inputs().col(i));
        d.head(P) += (J.transpose() * lambda[static_cast<std::size_t>(i)]).cwiseProduct(J.transpose()).rowwise().sum();
      }
      d.tail(E) = extras_fisher(post, theta).diagonal();
      break;
    }
  }
  d += prior_precision_diagonal(post, theta);
  return d;
}

Vec refine_map_newton(const Posterior& post, Vec theta, Index steps, double max_memory_bytes) {
  Vec grad;
  double value = post.log_density_and_grad(theta, grad);
  for (Index s = 0; s < steps; ++s) {
    const Mat H = curvature_matrix(post, theta, CurvatureBackend::Exact, max_memory_bytes);
    Eigen::LLT<Mat> llt(H);
    if (llt.info() != Eigen::Success) break;  // not in a convex region: keep the optimiser's answer
    const Vec direction = llt.solve(grad);
    bool accepted = false;
    for (double t = 1.0; t > 1e-6; t *= 0.5) {
      const Vec candidate = theta + t * direction;
      Vec g;
      const double v = post.log_density_and_grad(candidate, g);
      if (std::isfinite(v) && v >= value) {
        theta = candidate;
        value = v;
        grad = g;
        accepted = true;
        break;
      }
    }
    if (!accepted || grad.norm() < 1e-12) break;
  }
  return theta;
}

LaplaceApproximation::LaplaceApproximation(std::shared_ptr<const Posterior> posterior, Vec theta_map, LaplaceParams params)
    : posterior_(std::move(posterior)), map_(std::move(theta_map)), params_(params) {
  params_.validate();
  if (map_.size() != posterior_->dim())
    throw std::invalid_argument(fmt::format("laplace: theta has {} entries, the posterior {}", map_.size(), posterior_->dim()));
  if (params_.structure == CurvatureStructure::Full)
    curvature_ = curvature_matrix(*posterior_, map_, params_.backend, params_.max_memory_bytes);
  else
    curvature_ = curvature_diagonal(*posterior_, map_, params_.backend);
  log_joint_ = posterior_->log_density(map_);
  factorise();
}

void LaplaceApproximation::factorise() {
  const std::string advice =
      params_.backend == CurvatureBackend::Exact
          ? " (the MAP may not be a minimum, or the exact Hessian is indefinite there): use --laplace-curvature ggn or "
            "fisher (positive semi-definite plus the prior), or --laplace-structure diag with ggn/fisher"
          : ": check the prior (its precision keeps ggn / fisher positive definite)";
  const double s = params_.covariance_scale;
  if (params_.structure == CurvatureStructure::Full) {
    Eigen::LLT<Mat> llt(curvature_);
    if (llt.info() != Eigen::Success)
      throw std::runtime_error("Laplace: the " + to_string(params_.backend) + " Hessian of -log posterior is not positive definite" + advice);
    log_det_ = 2.0 * Mat(llt.matrixL()).diagonal().array().log().sum();
    approximation_ = std::make_shared<GaussianPosterior>(map_, s * curvature_);
  } else {
    const Vec d = curvature_.col(0);
    for (Index k = 0; k < d.size(); ++k)
      if (!(d[k] > 0))
        throw std::runtime_error(fmt::format("Laplace: diagonal entry {} ({}) of the {} Hessian is {:.4g}, not positive{}", k,
                                             posterior_->layout().name_of(k), to_string(params_.backend), d[k], advice));
    log_det_ = d.array().log().sum();
    approximation_ = std::make_shared<DiagonalGaussianPosterior>(map_, (s * d).cwiseSqrt().cwiseInverse());
  }
}

double LaplaceApproximation::log_marginal_likelihood() const {
  return log_joint_ + 0.5 * static_cast<double>(map_.size()) * kLog2Pi - 0.5 * log_det_;
}

LaplaceTuning LaplaceApproximation::tune(bool tune_noise, Index max_iterations) {
  const Posterior& post = *posterior_;
  const auto* gaussian = dynamic_cast<const GaussianPrior*>(&post.prior());
  if (!gaussian) throw InputError("Laplace marginal-likelihood tuning needs a Gaussian prior (--prior gaussian or fan-in)");
  // alpha scales the network's prior only. Likelihood extras (a learned log sigma) keep their block,
  // which must be decoupled from the network's for log det H to split: so it is with ggn (the
  // extras' expected Fisher) and with any diagonal structure.
  const Index P = post.model().num_params(), E = post.likelihood().num_extra();
  if (E > 0 && params_.structure == CurvatureStructure::Full && !curvature_.topRightCorner(P, E).isZero(0.0))
    throw InputError("Laplace marginal-likelihood tuning with a learned noise needs a curvature that keeps the noise apart "
                     "from the network: use --laplace-curvature ggn, or --laplace-structure diag, or give --noise");
  const std::string kind = post.likelihood().kind();
  if (tune_noise && kind != "gaussian" && kind != "gaussian_learned_sigma")
    throw InputError("Laplace noise tuning needs a Gaussian likelihood with one noise sd, not '" + kind + "'");
  // A learned log sigma's curvature is its Fisher information, which does not depend on sigma, only
  // with ggn; moving it keeps the rest of H valid.
  const bool tune_learned_noise = tune_noise && E > 0;
  if (tune_learned_noise && params_.backend != CurvatureBackend::GaussNewton)
    throw InputError("Laplace noise tuning with a learned noise needs --laplace-curvature ggn");
  LaplaceTuning result;
  result.log_marginal_likelihood_before = log_marginal_likelihood();
  const Vec p = prior_precision_diagonal(post, map_).head(P);  // Gaussian: 1 / sd^2
  const Vec dev = map_.head(P) - gaussian->mean();
  const double q = (dev.array().square() * p.array()).sum();
  const double log_prior0 = post.log_prior(map_);
  const double log_lik0 = log_joint_ - log_prior0;
  const Mat Y = post.model().forward(map_.head(post.model().num_params()), post.inputs());
  const double r2 = (Y - post.targets()).squaredNorm();
  const auto M = static_cast<double>(post.targets().size());
  double sigma0 = 0.0;
  if (tune_noise) sigma0 = std::sqrt(post.likelihood().noise_variance(Y.leftCols(1), map_.tail(E))(0, 0));

  // Eigenvalues e_i of P^-1/2 H_lik P^-1/2 (H_lik = H - P at sigma0): log det(tau H_lik + alpha P) =
  // log det P + sum_i log(tau e_i + alpha).
  const Vec ps = p.cwiseSqrt().cwiseInverse();
  Vec e;
  if (params_.structure == CurvatureStructure::Full) {
    Mat Hl = curvature_.topLeftCorner(P, P);
    Hl.diagonal() -= p;
    Eigen::SelfAdjointEigenSolver<Mat> eig(ps.asDiagonal() * Hl * ps.asDiagonal(), Eigen::EigenvaluesOnly);
    e = eig.eigenvalues();
  } else {
    e = (curvature_.col(0).head(P) - p).cwiseProduct(ps.cwiseAbs2());
  }
  double alpha = 1.0, tau = 1.0;
  Index it = 0;
  for (; it < max_iterations; ++it) {
    double gamma = 0.0;
    for (Index i = 0; i < P; ++i) {
      const double den = tau * e[i] + alpha;
      if (!(den > 0)) throw std::runtime_error("Laplace tuning: the curvature is not positive definite for the current prior precision");
      gamma += tau * e[i] / den;
    }
    // MacKay's updates: alpha q = gamma (effective number of parameters), sigma^2 = r2 / (M - gamma).
    const double alpha_new = std::max(gamma, 1e-12) / std::max(q, 1e-300);
    double tau_new = tau;
    if (tune_noise) tau_new = sigma0 * sigma0 * (M - gamma) / std::max(r2, 1e-300);
    const bool done = std::abs(std::log(alpha_new / alpha)) < 1e-12 && std::abs(std::log(tau_new / tau)) < 1e-12;
    alpha = alpha_new;
    tau = tau_new;
    if (done) break;
  }
  result.iterations = it;
  result.prior_precision_factor = alpha;
  if (tune_noise) result.noise_sd = sigma0 / std::sqrt(tau);
  // Rebuild H and the log joint with the tuned values.
  if (params_.structure == CurvatureStructure::Full) {
    Mat Hl = curvature_.topLeftCorner(P, P);
    Hl.diagonal() -= p;
    curvature_.topLeftCorner(P, P) = tau * Hl;
    curvature_.topLeftCorner(P, P).diagonal() += alpha * p;
  } else {
    curvature_.col(0).head(P) = tau * (curvature_.col(0).head(P) - p) + alpha * p;
  }
  double log_prior = log_prior0 - 0.5 * (alpha - 1.0) * q + 0.5 * static_cast<double>(P) * std::log(alpha);
  if (tune_learned_noise) {
    // The noise as a hyperparameter (type-II maximum likelihood): the centre's log sigma moves to the
    // tuned value, with its prior term and its block of H (the Fisher information plus the prior's).
    const Likelihood& lik = post.likelihood();
    log_prior -= lik.extra_log_prior(map_.tail(E), nullptr);
    map_[P] = std::log(result.noise_sd);
    log_prior += lik.extra_log_prior(map_.tail(E), nullptr);
    Mat block = extras_fisher(post, map_);
    block.diagonal() += prior_precision_diagonal(post, map_).tail(E);
    if (params_.structure == CurvatureStructure::Full)
      curvature_.bottomRightCorner(E, E) = block;
    else
      curvature_.col(0).tail(E) = block.diagonal();
  }
  double log_lik = log_lik0;
  if (tune_noise) {
    const double sigma = result.noise_sd;
    log_lik += r2 / (2 * sigma0 * sigma0) - r2 / (2 * sigma * sigma) - M * std::log(sigma / sigma0);
  }
  log_joint_ = log_lik + log_prior;
  factorise();
  result.log_marginal_likelihood_after = log_marginal_likelihood();
  return result;
}

}  // namespace uqnn
