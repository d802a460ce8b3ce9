#pragma once
/// @file ParamLayout: names every block of the flat parameter vector theta.
///
/// A block is a named matrix stored row-major inside theta (PyTorch nn.Linear order:
/// weight [fan_out, fan_in] then bias), e.g. "layer1.weight" rows 10, cols 1.
/// Per-layer priors, per-layer diagnostics and parameter subsets are all expressed in blocks.
#include <string>
#include <vector>

#include "uqnn/core/types.hpp"

namespace uqnn {

struct ParamBlock {
  std::string name;   ///< e.g. "layer1.weight"
  Index offset = 0;   ///< first index in theta
  Index rows = 0;     ///< for a weight: fan_out
  Index cols = 1;     ///< for a weight: fan_in; 1 for vectors
  Index fan_in = 1;   ///< fan-in used by scaled initialisation and per-layer priors
  bool matrix = true; ///< named with two indices ("w[i,j]") rather than one
  Index size() const { return rows * cols; }
};

class ParamLayout {
 public:
  /// Appends a matrix block [rows, cols] (row-major) and returns its offset.
  Index add_matrix(std::string name, Index rows, Index cols, Index fan_in);
  /// Appends a vector block and returns its offset.
  Index add_vector(std::string name, Index size, Index fan_in);
  /// Appends every block of `other`, with names prefixed by `prefix` (e.g. "branch.").
  void append(const ParamLayout& other, const std::string& prefix);

  Index size() const { return size_; }
  const std::vector<ParamBlock>& blocks() const { return blocks_; }
  const ParamBlock& block(const std::string& name) const;
  /// Index of the block containing parameter `index`.
  std::size_t block_of(Index index) const;
  /// Human-readable name of one coordinate, e.g. "layer1.weight[3,0]" or "layer1.bias[3]".
  std::string name_of(Index index) const;
  /// Every coordinate's name, in theta order.
  std::vector<std::string> names() const;

  bool operator==(const ParamLayout& other) const;

 private:
  std::vector<ParamBlock> blocks_;
  Index size_ = 0;
};

}  // namespace uqnn
