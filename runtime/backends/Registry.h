// The backends quantc knows, by name: what `quantc run --backend NAME` looks up and
// --help lists. The list itself is in Registry.cpp, one line per backend.
//
//   for (const RegisteredBackend& entry : backends()) std::cout << entry.info.name << '\n';
//   std::unique_ptr<Backend> backend = make_backend("emulator");
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/backends/Backend.h"

namespace quantc::runtime {

/// Raised by make_backend for a name no backend has; the message lists the names.
class UnknownBackend : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

struct RegisteredBackend {
  BackendInfo info;
  std::unique_ptr<Backend> (*make)();
};

/// The registry entry of a backend class T: T::kInfo and T's default constructor.
template <class T>
RegisteredBackend registered() {
  return {T::kInfo, [] { return std::unique_ptr<Backend>(std::make_unique<T>()); }};
}

/// Every backend, in registration order (reference, emulator, cuda).
const std::vector<RegisteredBackend>& backends();

/// The entry named `name`, or nullptr.
const RegisteredBackend* find_backend(std::string_view name);

/// The names of every backend (of `form` only, when given), in registration order.
std::vector<std::string> backend_names(std::optional<KernelForm> form = std::nullopt);

/// "a, b, c": backend_names joined, for messages.
std::string backend_list(std::optional<KernelForm> form = std::nullopt);

/// Constructs the backend named `name`. Throws UnknownBackend listing the known names,
/// and whatever the backend's constructor throws (the CUDA backend: DriverUnavailable,
/// a BackendUnavailable, without a driver or a device).
std::unique_ptr<Backend> make_backend(std::string_view name);

}  // namespace quantc::runtime
