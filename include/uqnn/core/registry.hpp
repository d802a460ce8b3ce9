#pragma once
/// @file Registry: a closed set of names (activations, priors, likelihoods, model kinds, optimisers,
/// bandit agents), each entry declared once with designated initialisers and carrying what callers
/// ask about it. The option choices, factories, JSON readers, --help listings and Python docstrings
/// read the registry, so a name is added or renamed in one place.
///
///     const Registry<ActivationKind>& activation_kinds() {
///       static const Registry<ActivationKind> kinds("--activation", {
///           {.name = "tanh", .value = Activation::Tanh, .summary = "hyperbolic tangent"},
///           {.name = "silu", .value = Activation::Silu, .summary = "x sigmoid(x)", .aliases = {"swish"}}});
///       return kinds;
///     }
///
/// An Entry has `std::string name` and `std::string summary`, and may have
/// `std::vector<std::string> aliases` (other spellings find() accepts; names() lists only `name`).
#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "uqnn/core/error.hpp"

namespace uqnn {

template <typename Entry>
class Registry {
 public:
  /// `what` names the set in errors, as the user meets it: "--activation".
  Registry(std::string what, std::vector<Entry> entries) : what_(std::move(what)), entries_(std::move(entries)) {
    for (std::size_t i = 0; i < entries_.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (matches(entries_[j], entries_[i].name))
          throw std::logic_error(fmt::format("{}: '{}' is declared twice", what_, entries_[i].name));
  }

  /// The entry called `name` (or one of its aliases); InputError naming the valid names otherwise.
  const Entry& find(const std::string& name) const {
    if (const Entry* e = try_find(name)) return *e;
    throw InputError(fmt::format("{} '{}' is not known: valid are {}", what_, name, fmt::join(names(), ", ")));
  }
  /// The entry called `name`, or null.
  const Entry* try_find(const std::string& name) const {
    for (const Entry& e : entries_)
      if (matches(e, name)) return &e;
    return nullptr;
  }
  bool contains(const std::string& name) const { return try_find(name) != nullptr; }
  /// The names, in declaration order (aliases left out).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }
  const std::vector<Entry>& entries() const { return entries_; }
  const std::string& what() const { return what_; }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  static bool matches(const Entry& e, const std::string& name) {
    if (e.name == name) return true;
    if constexpr (requires { e.aliases; })
      for (const auto& alias : e.aliases)
        if (alias == name) return true;
    return false;
  }

  std::string what_;
  std::vector<Entry> entries_;
};

}  // namespace uqnn
