#include "uqnn/core/state_archive.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <tuple>
#include <sstream>

#include <fmt/format.h>

#include "uqnn/core/error.hpp"

namespace uqnn {

StateArchive::StateArchive(const std::string& bytes, std::string source)
    : loading_(true), bytes_(bytes), source_(std::move(source)) {}

StateArchive StateArchive::read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read", file.string()));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return StateArchive(bytes, file.string());
}

// An empty vector's data() may be null, which memcpy and append must not see even for 0 bytes.
void StateArchive::put(const void* data, std::size_t n) {
  if (n > 0) bytes_.append(static_cast<const char*>(data), n);
}

void StateArchive::get(void* data, std::size_t n) {
  if (n > bytes_.size() - position_)
    throw InputError(fmt::format("{}: ends after {} bytes, in the middle of a value (a truncated or foreign checkpoint)",
                                 source_, bytes_.size()));
  if (n > 0) std::memcpy(data, bytes_.data() + position_, n);
  position_ += n;
}

std::size_t StateArchive::checked_count(std::int64_t n, std::size_t element_size) const {
  // A count above what the bytes left can hold is a corrupt file (and would otherwise be a huge
  // allocation).
  if (n < 0 || static_cast<std::uint64_t>(n) > (bytes_.size() - position_) / element_size)
    throw InputError(fmt::format("{}: a count of {} at byte {} does not fit in the file (a corrupt or foreign checkpoint)",
                                 source_, n, position_));
  return static_cast<std::size_t>(n);
}

void StateArchive::io(double& x) { loading() ? get(&x, sizeof x) : put(&x, sizeof x); }
void StateArchive::io(std::int64_t& x) { loading() ? get(&x, sizeof x) : put(&x, sizeof x); }

void StateArchive::io(std::string& s) {
  std::int64_t n = static_cast<std::int64_t>(s.size());
  io(n);
  if (loading()) {
    s.resize(checked_count(n, 1));
    get(s.data(), s.size());
  } else {
    put(s.data(), s.size());
  }
}

void StateArchive::io(Vec& v) {
  std::int64_t n = v.size();
  io(n);
  if (loading()) v.resize(static_cast<Index>(checked_count(n, sizeof(double))));
  loading() ? get(v.data(), static_cast<std::size_t>(v.size()) * sizeof(double))
            : put(v.data(), static_cast<std::size_t>(v.size()) * sizeof(double));
}

void StateArchive::io(Mat& m) {
  std::int64_t rows = m.rows(), cols = m.cols();
  io(rows), io(cols);
  if (loading()) {
    // Each factor fits in the bytes left, so the product below cannot overflow.
    checked_count(rows, 1);
    checked_count(cols, 1);
    if (cols > 0) checked_count(rows, sizeof(double) * static_cast<std::size_t>(cols));
    m.resize(rows, cols);
  }
  loading() ? get(m.data(), static_cast<std::size_t>(m.size()) * sizeof(double))
            : put(m.data(), static_cast<std::size_t>(m.size()) * sizeof(double));
}

void StateArchive::io(DrawStats& s) {
  io(s.lp), io(s.accept_prob), io(s.step_size), io(s.tree_depth), io(s.n_leapfrog), io(s.is_divergent), io(s.energy);
}

void StateArchive::io(Rng& rng) {
  std::string engine;
  if (saving()) {
    std::ostringstream out;
    out << rng.engine();
    engine = out.str();
  }
  io(engine);
  double spare = 0.0;
  bool has_spare = false;
  if (saving()) std::tie(spare, has_spare) = rng.spare();
  io(spare), io(has_spare);
  if (loading()) {
    std::istringstream in(engine);
    in >> rng.engine();
    if (!in) throw InputError(fmt::format("{}: the random-number state cannot be read (a corrupt checkpoint)", source_));
    rng.set_spare(spare, has_spare);
  }
}

void StateArchive::section(const std::string& name) {
  std::string stored = name;
  io(stored);
  if (loading() && stored != name)
    throw InputError(fmt::format("{}: holds '{}' where '{}' was expected (a checkpoint of another method, model or version)",
                                 source_, stored, name));
}

void StateArchive::expect_end() const {
  if (loading() && position_ != bytes_.size())
    throw InputError(fmt::format("{}: {} bytes left after the state was read (a checkpoint of another method, model or version)",
                                 source_, bytes_.size() - position_));
}

}  // namespace uqnn
