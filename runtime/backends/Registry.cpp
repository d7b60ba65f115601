#include "runtime/backends/Registry.h"

#include <fmt/format.h>

#include "runtime/backends/cuda/Launch.h"
#include "runtime/backends/emulator/EmulatorBackend.h"
#include "runtime/backends/reference/ReferenceBackend.h"

namespace quantc::runtime {

const std::vector<RegisteredBackend>& backends() {
  static const std::vector<RegisteredBackend> registry = {
      registered<reference::ReferenceBackend>(),
      registered<emulator::EmulatorBackend>(),
      registered<cuda::CudaBackend>(),
  };
  return registry;
}

const RegisteredBackend* find_backend(std::string_view name) {
  for (const RegisteredBackend& entry : backends()) {
    if (entry.info.name == name) return &entry;
  }
  return nullptr;
}

std::vector<std::string> backend_names(std::optional<KernelForm> form) {
  std::vector<std::string> names;
  for (const RegisteredBackend& entry : backends()) {
    if (!form || entry.info.form == *form) names.emplace_back(entry.info.name);
  }
  return names;
}

std::string backend_list(std::optional<KernelForm> form) { return fmt::format("{}", fmt::join(backend_names(form), ", ")); }

std::unique_ptr<Backend> make_backend(std::string_view name) {
  const RegisteredBackend* entry = find_backend(name);
  if (entry == nullptr) {
    throw UnknownBackend(fmt::format("unknown backend '{}'; the backends are: {}", name, backend_list()));
  }
  return entry->make();
}

}  // namespace quantc::runtime
