#pragma once
// Helpers shared by the runners of the optimisation-based methods (private to src/services).
#include <fmt/format.h>

#include "uqnn/approx/ensemble.hpp"
#include "uqnn/approx/vi.hpp"
#include "uqnn/core/error.hpp"
#include "uqnn/nn/mlp.hpp"
#include "uqnn/services/approx_options.hpp"
#include "uqnn/services/fit.hpp"
#include "uqnn/services/methods.hpp"

namespace uqnn::detail {

inline ApproxOptions approx_options(const FitContext& c) { return ApproxOptions::from_json(c.config.method_options); }

/// True when the fit has a validation split (the context then holds data other than the training set).
inline bool has_validation_split(const FitContext& c) {
  const Mat& X = c.posterior->inputs();
  return !(c.validation_inputs.cols() == X.cols() && c.validation_inputs == X && c.validation_targets == c.posterior->targets());
}

inline EnsembleParams ensemble_params(const FitContext& c, const ApproxOptions& o) {
  EnsembleParams p;
  p.members = o.ens_members;
  p.data_fraction = o.ens_data_fraction;
  p.threads = o.threads;
  p.training = c.config.training;
  return p;
}

/// Result of an ensemble-like method: members as draws, one "chain" per member, the first member
/// training curves as history.
inline MethodResult ensemble_result(const std::vector<MemberFit>& fits, const std::string& loss_name) {
  MethodResult r;
  for (std::size_t j = 0; j < fits.size(); ++j) {
    r.draws.push_back(fits[j].theta);
    r.chain_of_draw.push_back(static_cast<Index>(j));
  }
  for (std::size_t j = 0; j < std::min<std::size_t>(fits.size(), 8); ++j)
    r.history.emplace_back(fmt::format("member {} {}", j, loss_name), fits[j].history.train_loss);
  r.history_label = loss_name;
  r.info["members"] = fits.size();
  r.info["member_rows"] = fits.empty() ? 0 : fits.front().rows.size();
  return r;
}

/// Bayes by Backprop on the context's posterior with the fit's VI settings (method_vi.cpp);
/// `prior` receives the prior used on the network parameters. Shared by vi and vi-hmc.
ViResult fit_vi(const FitContext& c, std::shared_ptr<const Prior>& prior);

inline void check_samples(const ApproxOptions& o) {
  if (o.num_samples < 2) throw InputError(fmt::format("--num-samples {} is invalid: it must be >= 2", o.num_samples));
}

}  // namespace uqnn::detail
