#pragma once
/// @file Basic linear-algebra types shared by every module.
///
/// Convention: a batch of inputs is a matrix with one column per example ([input_dim, n]);
/// outputs are [output_dim, n]. Column-major storage keeps each example contiguous, which is
/// what the dense layers' matrix products want. Parameters are one flat vector `theta`.
#include <Eigen/Dense>
#include <cstdint>

namespace uqnn {

using Index = Eigen::Index;
using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;
using IndexVec = std::vector<Index>;
/// A contiguous vector or segment passed without a copy (theta's network part inside the
/// posterior's theta, for one): what the gradient interfaces take.
using ConstVecRef = Eigen::Ref<const Vec>;
using VecRef = Eigen::Ref<Vec>;

template <typename T>
using VecT = Eigen::Matrix<T, Eigen::Dynamic, 1>;
template <typename T>
using MatT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <typename T>
using RowMajorMatT = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// log(2 pi) and 0.5 log(2 pi), the normalising constants of Gaussian densities.
inline constexpr double kLog2Pi = 1.8378770664093454836;
inline constexpr double kHalfLog2Pi = 0.91893853320467274178;

}  // namespace uqnn
