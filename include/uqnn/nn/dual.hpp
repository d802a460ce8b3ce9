#pragma once
/// @file Dual numbers for exact forward-over-reverse Hessian-vector products.
///
/// Running a model's reverse pass on Dual scalars whose tangent is v gives, in the tangent of
/// the gradient, H v exactly (Pearlmutter's R-operator). We use Eigen's AutoDiffScalar with a
/// one-dimensional derivative rather than writing a dual type by hand.
#include <unsupported/Eigen/AutoDiff>

#include "uqnn/core/types.hpp"

namespace uqnn {

using Dual = Eigen::AutoDiffScalar<Eigen::Matrix<double, 1, 1>>;

/// A dual number with value `value` and tangent `tangent`.
inline Dual make_dual(double value, double tangent) {
  return Dual(value, Eigen::Matrix<double, 1, 1>::Constant(tangent));
}
inline double dual_value(const Dual& x) { return x.value(); }
inline double dual_tangent(const Dual& x) { return x.derivatives().size() ? x.derivatives()(0) : 0.0; }

/// theta + eps v as a vector of duals.
inline VecT<Dual> make_dual_vector(const Vec& value, const Vec& tangent) {
  VecT<Dual> out(value.size());
  for (Index i = 0; i < value.size(); ++i) out[i] = make_dual(value[i], tangent[i]);
  return out;
}

/// Plain value of a double or a Dual (lets templated code log or compare values).
inline double value_of(double x) { return x; }
inline double value_of(float x) { return x; }
inline double value_of(const Dual& x) { return x.value(); }

}  // namespace uqnn
