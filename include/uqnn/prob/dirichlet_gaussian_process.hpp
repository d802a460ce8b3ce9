#pragma once
/// @file The Dirichlet-based GP of Milios et al. (2018): a GP prior for classification whose
/// hyperparameters are fitted by regression, the functional prior of fSGLD / fSGHMC on images
/// (Wu et al. 2024, App. E: "a Dirichlet-based GP designed for classification tasks ... pre-trained").
///
/// Milios et al. (2018), sec. 4: the one-hot label of an example, y_c in {0, 1}, is read as the
/// parameters alpha_c = y_c + alpha_eps of a Dirichlet, i.e. of independent Gamma(alpha_c, 1)
/// variables whose normalisation gives the class probabilities. Each Gamma is approximated by a
/// log-normal with the same mean and variance, so that its logarithm f_c is Gaussian:
///     s_c^2 = log(1 / alpha_c + 1),   y~_c = log(alpha_c) - s_c^2 / 2,
/// and y~_c = f_c(x) + e, e ~ N(0, s_c^2), is a GP regression with known heteroscedastic noise, one
/// per class. p(class c | x) = exp(f_c) / sum_c' exp(f_c') is the softmax of the latent f: the
/// network's logits play the role of f, so the GP over f is a prior over the logits.
/// Pre-training fits the kernel's hyperparameters (shared by the classes) by maximising
///     sum_c log N(y~_c - m_c | 0, K + diag(s_c^2))
/// (the noise is fixed by the labels, not fitted; Rasmussen & Williams 2006 eq. 2.30 with
/// heteroscedastic noise). The constant prior mean m_c of class c is the mean of its transformed
/// targets (balanced classes: all m_c are equal, and a shared shift of the logits does not change
/// the softmax). The gradient w.r.t. a log hyperparameter t_j is
///     1/2 sum_c tr((a_c a_c^T - (K + D_c)^-1) dK/dt_j),   a_c = (K + D_c)^-1 (y~_c - m_c)   (R&W eq. 5.9).
#include "uqnn/prob/gaussian_process.hpp"

namespace uqnn {

/// The regression targets and noise variances of Milios et al.'s label transformation.
struct DirichletTargets {
  Mat targets;  ///< y~ [num_classes, n]
  Mat noise;    ///< s^2 [num_classes, n]
};

/// `labels` [n]: class indices in {0, ..., num_classes - 1}; `alpha_epsilon` > 0 (Milios et al.: 0.01).
/// Throws std::invalid_argument on a label outside the range.
DirichletTargets dirichlet_targets(const Vec& labels, Index num_classes, double alpha_epsilon);

/// sum_c log N(targets_c - means_c | 0, K + diag(noise_c)) for the kernel of `process` (its own
/// noise variance is not used); `grad`, when given, receives the gradient w.r.t.
/// process.log_parameters() (the noise entry, not a parameter here, gets 0).
double dirichlet_log_marginal_likelihood(const GaussianProcess& process, const Mat& X, const DirichletTargets& data,
                                         const Vec& means, Vec* grad = nullptr);

/// A pre-trained Dirichlet-based GP: the kernel and the constant prior mean of each class.
struct DirichletGaussianProcess {
  GaussianProcess process;
  Vec class_means;  ///< m_c [num_classes]
};

}  // namespace uqnn
