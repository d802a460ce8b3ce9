#pragma once
/// @file StateArchive: one function per class lists its state, and saves or restores it.
///
/// Why: checkpoint and resume (issue 17) need a chain's whole state (position, gradient, tuning,
/// adaptation, random-number stream) as bytes and back, bitwise. Writing a save and a load
/// function per class would let the two drift apart; with one `archive(StateArchive&)` that calls
/// `a.io(member)` for each member, the same list serves both directions (the pattern of
/// boost.serialization and cereal). The bytes are the values' own (doubles bit for bit, no text
/// round trip), in the host's byte order: a checkpoint is read back by the build that wrote it.
///
/// `section(name)` writes a name and checks it on loading, so a checkpoint of another method or
/// layout stops with a message that says which part disagrees instead of loading garbage.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "uqnn/core/draw_stats.hpp"
#include "uqnn/core/rng.hpp"
#include "uqnn/core/types.hpp"

namespace uqnn {

class StateArchive {
 public:
  /// An archive that saves: io() appends each value; take() returns them.
  StateArchive() = default;
  /// An archive that loads from `bytes`: io() overwrites each value. `source` names the bytes
  /// (a file) in error messages.
  StateArchive(const std::string& bytes, std::string source);
  /// An archive that loads the whole of `file` (a checkpoint), named by its path in errors. Throws
  /// InputError when it cannot be read.
  static StateArchive read_file(const std::filesystem::path& file);

  StateArchive(const StateArchive&) = delete;
  StateArchive& operator=(const StateArchive&) = delete;

  bool saving() const { return !loading_; }
  bool loading() const { return loading_; }

  void io(double& x);
  void io(std::int64_t& x);
  void io(long long& x) { io_integer(x); }
  void io(int& x) { io_integer(x); }
  void io(bool& x) { io_integer(x); }
  void io(std::uint64_t& x) { io_integer(x); }
  template <typename E>
    requires std::is_enum_v<E>
  void io(E& x) { io_integer(x); }
  void io(std::string& s);
  void io(Vec& v);
  void io(Mat& m);
  void io(DrawStats& s);
  /// The generator's whole state (std::mt19937_64's text form, which the standard makes exact)
  /// and the normal spare.
  void io(Rng& rng);
  template <typename T>
  void io(std::vector<T>& items) {
    std::int64_t n = static_cast<std::int64_t>(items.size());
    io(n);
    if (loading()) items.assign(checked_count(n, 1), T{});
    for (T& item : items) io(item);
  }
  template <typename T>
  void io(std::optional<T>& item) {
    bool present = item.has_value();
    io(present);
    if (loading()) item = present ? std::optional<T>(T{}) : std::nullopt;
    if (present) io(*item);
  }
  /// Any class with a member `void archive(StateArchive&)`.
  template <typename T>
    requires requires(T& t, StateArchive& a) { t.archive(a); }
  void io(T& item) { item.archive(*this); }

  /// Saving writes `name`; loading reads a name and throws InputError unless it is `name`.
  void section(const std::string& name);
  /// Loading: throws InputError unless every byte was read.
  void expect_end() const;
  /// Saving: the bytes so far.
  std::string take() { return std::move(bytes_); }

 private:
  template <typename I>
  void io_integer(I& x) {
    std::int64_t wide = static_cast<std::int64_t>(x);
    io(wide);
    if (loading()) x = static_cast<I>(wide);
  }
  /// Loading: `n` as a size, after checking that n elements of `element_size` bytes fit in the bytes left.
  std::size_t checked_count(std::int64_t n, std::size_t element_size) const;
  void put(const void* data, std::size_t n);
  void get(void* data, std::size_t n);

  bool loading_ = false;
  std::string bytes_;
  std::size_t position_ = 0;  ///< loading: bytes read so far
  std::string source_;
};

}  // namespace uqnn
