#include "uqnn/core/param_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace uqnn {

Index ParamLayout::add_matrix(std::string name, Index rows, Index cols, Index fan_in) {
  const Index offset = size_;
  blocks_.push_back(ParamBlock{std::move(name), offset, rows, cols, fan_in, true});
  size_ += rows * cols;
  return offset;
}

Index ParamLayout::add_vector(std::string name, Index size, Index fan_in) {
  const Index offset = size_;
  blocks_.push_back(ParamBlock{std::move(name), offset, size, 1, fan_in, false});
  size_ += size;
  return offset;
}

void ParamLayout::append(const ParamLayout& other, const std::string& prefix) {
  for (const auto& b : other.blocks()) {
    if (b.matrix) add_matrix(prefix + b.name, b.rows, b.cols, b.fan_in);
    else add_vector(prefix + b.name, b.rows, b.fan_in);
  }
}

const ParamBlock& ParamLayout::block(const std::string& name) const {
  for (const auto& b : blocks_)
    if (b.name == name) return b;
  throw std::out_of_range("no parameter block named '" + name + "'");
}

std::size_t ParamLayout::block_of(Index index) const {
  if (index < 0 || index >= size_)
    throw std::out_of_range(fmt::format("parameter index {} outside [0, {})", index, size_));
  auto it = std::upper_bound(blocks_.begin(), blocks_.end(), index,
                             [](Index i, const ParamBlock& b) { return i < b.offset; });
  return static_cast<std::size_t>(std::distance(blocks_.begin(), it) - 1);
}

std::string ParamLayout::name_of(Index index) const {
  const ParamBlock& b = blocks_[block_of(index)];
  const Index local = index - b.offset;
  if (!b.matrix) return fmt::format("{}[{}]", b.name, local);
  return fmt::format("{}[{},{}]", b.name, local / b.cols, local % b.cols);
}

std::vector<std::string> ParamLayout::names() const {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(size_));
  for (Index i = 0; i < size_; ++i) out.push_back(name_of(i));
  return out;
}

bool ParamLayout::operator==(const ParamLayout& other) const {
  if (size_ != other.size_ || blocks_.size() != other.blocks_.size()) return false;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const auto& a = blocks_[i];
    const auto& b = other.blocks_[i];
    if (a.name != b.name || a.offset != b.offset || a.rows != b.rows || a.cols != b.cols || a.matrix != b.matrix) return false;
  }
  return true;
}

}  // namespace uqnn
