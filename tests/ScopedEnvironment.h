// An environment variable set for one scope: tests that exercise a QUANTC_* switch set it
// here and leave the process's environment as they found it.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace quantc_test {

/// Sets `name` to `value` (unsets it for std::nullopt) for the object's lifetime, then
/// restores the previous value, or unsets the variable if it had none.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    set(value);
  }
  ~ScopedEnvironment() { set(previous_); }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

  /// Sets the variable to `value` (unsets it for std::nullopt) until the scope ends.
  void set(const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name_, value->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

}  // namespace quantc_test
