#pragma once
/// @file Error types. Bad user input raises InputError, which names where the problem is
/// (file, line, field) and what would be valid; the CLI turns it into a message and exit code 2.
#include <stdexcept>
#include <string>

namespace uqnn {

/// Invalid user input: a file, a field of it, or a flag. `what()` is the full message.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

/// Training or sampling that diverged to NaN or infinity (a learning rate or step size too large for
/// the problem): there is no result to write. The CLI exits with code 3, as for non-finite draws.
class DivergenceError : public std::runtime_error {
 public:
  explicit DivergenceError(const std::string& message) : std::runtime_error(message) {}
};

/// Throws std::invalid_argument naming a parameter and its valid range unless `ok`.
inline void require(bool ok, const std::string& parameter, const std::string& valid_range) {
  if (!ok) throw std::invalid_argument(parameter + " must be " + valid_range);
}

}  // namespace uqnn
