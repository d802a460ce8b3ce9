#include "uqnn/core/draws.hpp"

#include <algorithm>
#include <string>

namespace uqnn {

Draws Draws::independent(const std::vector<Vec>& draws) {
  Draws out;
  if (draws.empty()) return out;
  Mat values(static_cast<Index>(draws.size()), draws.front().size());
  for (std::size_t s = 0; s < draws.size(); ++s) {
    if (draws[s].size() != values.cols())
      throw std::invalid_argument("Draws: draw " + std::to_string(s) + " has " + std::to_string(draws[s].size()) +
                                  " values, the first " + std::to_string(values.cols()));
    values.row(static_cast<Index>(s)) = draws[s].transpose();
  }
  out.add_chain(0, std::move(values));
  return out;
}

Draws Draws::one_per_chain(const std::vector<Vec>& draws) {
  Draws out;
  for (std::size_t j = 0; j < draws.size(); ++j) out.add_chain(static_cast<Index>(j), draws[j].transpose());
  return out;
}

void Draws::add_chain(Index id, Mat values, std::vector<DrawStats> stats) {
  if (values.rows() == 0) throw std::invalid_argument("Draws: chain " + std::to_string(id) + " has no draws");
  if (!chains_.empty()) {
    if (id <= chains_.back().id)
      throw std::invalid_argument("Draws: chain " + std::to_string(id) + " after chain " + std::to_string(chains_.back().id) +
                                  " (chains go in increasing id)");
    if (values.cols() != dim())
      throw std::invalid_argument("Draws: chain " + std::to_string(id) + " has " + std::to_string(values.cols()) +
                                  " parameters, the others " + std::to_string(dim()));
    if (stats.empty() == has_stats())
      throw std::invalid_argument("Draws: chain " + std::to_string(id) + (stats.empty() ? " has no" : " has") +
                                  " sampler statistics, the others " + (stats.empty() ? "have them" : "none"));
  }
  if (!stats.empty() && static_cast<Index>(stats.size()) != values.rows())
    throw std::invalid_argument("Draws: chain " + std::to_string(id) + " has " + std::to_string(stats.size()) +
                                " statistics for " + std::to_string(values.rows()) + " draws");
  size_ += values.rows();
  chains_.push_back({id, std::move(values), std::move(stats)});
}

namespace {
/// (chain, draw within it) of draw s; throws std::out_of_range past the last.
template <typename Chains>
std::pair<std::size_t, Index> locate(const Chains& chains, Index s) {
  Index first = 0;
  for (std::size_t c = 0; c < chains.size(); ++c) {
    if (s >= first && s < first + chains[c].size()) return {c, s - first};
    first += chains[c].size();
  }
  throw std::out_of_range("Draws: draw " + std::to_string(s) + " of " + std::to_string(first));
}
}  // namespace

Vec Draws::draw(Index s) const {
  const auto [c, d] = locate(chains_, s);
  return chains_[c].values.row(d).transpose();
}

const DrawStats& Draws::stats(Index s) const {
  const auto [c, d] = locate(chains_, s);
  if (chains_[c].stats.empty()) throw std::out_of_range("Draws: these draws have no sampler statistics");
  return chains_[c].stats[static_cast<std::size_t>(d)];
}

std::vector<Index> Draws::chain_ids() const {
  std::vector<Index> ids;
  ids.reserve(static_cast<std::size_t>(size_));
  for (const DrawChain& chain : chains_) ids.insert(ids.end(), static_cast<std::size_t>(chain.size()), chain.id);
  return ids;
}

bool Draws::comparable_chains() const {
  if (chains_.empty()) return false;
  const Index length = chains_.front().size();
  return length > 1 && std::all_of(chains_.begin(), chains_.end(), [&](const DrawChain& c) { return c.size() == length; });
}

Mat Draws::by_chain(const std::vector<double>& per_draw) const {
  if (static_cast<Index>(per_draw.size()) != size_)
    throw std::invalid_argument("Draws::by_chain: " + std::to_string(per_draw.size()) + " values for " + std::to_string(size_) + " draws");
  Index length = chains_.empty() ? 0 : chains_.front().size();
  for (const DrawChain& chain : chains_) length = std::min(length, chain.size());
  Mat out(length, num_chains());
  Index first = 0;
  for (Index c = 0; c < num_chains(); ++c) {
    for (Index d = 0; d < length; ++d) out(d, c) = per_draw[static_cast<std::size_t>(first + d)];
    first += chain(c).size();
  }
  return out;
}

Mat Draws::parameter_by_chain(Index k) const {
  Index length = chains_.empty() ? 0 : chains_.front().size();
  for (const DrawChain& chain : chains_) length = std::min(length, chain.size());
  Mat out(length, num_chains());
  for (Index c = 0; c < num_chains(); ++c) out.col(c) = chain(c).values.col(k).head(length);
  return out;
}

}  // namespace uqnn
