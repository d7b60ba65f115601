#include "runtime/backends/cuda/Driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

namespace quantc::runtime::cuda {

namespace {

constexpr const char* kDefaultLibrary = "libcuda.so.1";
constexpr const char* kFallbackAdvice =
    "Fix: install the NVIDIA driver, point QUANTC_CUDA_DRIVER at its libcuda.so.1, or run on the "
    "CPU with --backend reference (the interpreter) or --backend emulator (the PTX emulator)";

// Stringify after macro expansion: QUANTC_CUDA_SYMBOL(cuMemAlloc) is "cuMemAlloc_v2".
#define QUANTC_CUDA_STRINGIFY(x) #x
#define QUANTC_CUDA_SYMBOL(x) QUANTC_CUDA_STRINGIFY(x)

using GetProcAddress = decltype(&::cuGetProcAddress);

/// Resolves `base_name` ("cuMemAlloc", the ABI of this toolkit's CUDA_VERSION) through
/// cuGetProcAddress, else the exported `versioned_name` ("cuMemAlloc_v2").
void* resolve(void* handle, GetProcAddress get_proc_address, const char* base_name, const char* versioned_name) {
  if (get_proc_address != nullptr) {
    void* function = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc_address(base_name, &function, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) ==
            CUDA_SUCCESS &&
        status == CU_GET_PROC_ADDRESS_SUCCESS && function != nullptr) {
      return function;
    }
  }
  return ::dlsym(handle, versioned_name);
}

}  // namespace

CudaError::CudaError(std::string call, CUresult result, std::string name, std::string description,
                     std::string detail)
    : RuntimeError(fmt::format("{} failed: {} ({}){}{}", call, name, description, detail.empty() ? "" : "\n",
                               detail)),
      call_(std::move(call)),
      result_(result),
      name_(std::move(name)),
      description_(std::move(description)) {}

std::string driver_library_from_environment() {
  const char* path = std::getenv("QUANTC_CUDA_DRIVER");
  return (path != nullptr && *path != '\0') ? std::string(path) : std::string(kDefaultLibrary);
}

std::shared_ptr<const Driver> Driver::load(const std::string& library_path) {
  std::shared_ptr<Driver> driver(new Driver());
  driver->library_path_ = library_path;
  driver->handle_ = ::dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (driver->handle_ == nullptr) {
    const char* reason = ::dlerror();
    throw DriverUnavailable(fmt::format("no CUDA driver found: cannot load '{}' ({}). {}", library_path,
                                        reason ? reason : "unknown error", kFallbackAdvice));
  }
  auto get_proc_address = reinterpret_cast<GetProcAddress>(
      ::dlsym(driver->handle_, QUANTC_CUDA_SYMBOL(cuGetProcAddress)));
  DriverApi& api = driver->api_;
#define QUANTC_CUDA_RESOLVE(name)                                                                           \
  api.name = reinterpret_cast<decltype(api.name)>(                                                          \
      resolve(driver->handle_, get_proc_address, #name, QUANTC_CUDA_SYMBOL(name)));                          \
  if (api.name == nullptr) {                                                                                \
    throw DriverUnavailable(fmt::format("the CUDA driver '{}' lacks the entry point {} (it is older than "    \
                                        "the CUDA {}.{} API quantc uses). {}",                               \
                                        library_path, QUANTC_CUDA_SYMBOL(name), CUDA_VERSION / 1000,        \
                                        CUDA_VERSION % 1000 / 10, kFallbackAdvice));                        \
  }
  QUANTC_CUDA_DRIVER_ENTRY_POINTS(QUANTC_CUDA_RESOLVE)
#undef QUANTC_CUDA_RESOLVE

  const CUresult init = api.cuInit(0);
  if (init == CUDA_ERROR_STUB_LIBRARY) {
    throw DriverUnavailable(fmt::format(
        "'{}' is the CUDA toolkit's stub library, not an NVIDIA driver (cuInit returned "
        "CUDA_ERROR_STUB_LIBRARY): no GPU can be used. {}",
        library_path, kFallbackAdvice));
  }
  if (init == CUDA_ERROR_NO_DEVICE) {
    throw DriverUnavailable(fmt::format("the CUDA driver '{}' found no CUDA device (CUDA_ERROR_NO_DEVICE). {}",
                                        library_path, kFallbackAdvice));
  }
  driver->check(init, "cuInit");
  driver->check(api.cuDriverGetVersion(&driver->version_), "cuDriverGetVersion");
  return driver;
}

Driver::~Driver() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

std::string Driver::error_name(CUresult result) const {
  const char* name = nullptr;
  if (api_.cuGetErrorName != nullptr && api_.cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return fmt::format("CUresult {}", static_cast<int>(result));
}

std::string Driver::error_description(CUresult result) const {
  const char* description = nullptr;
  if (api_.cuGetErrorString != nullptr && api_.cuGetErrorString(result, &description) == CUDA_SUCCESS &&
      description != nullptr) {
    return description;
  }
  return "no description from the driver";
}

void Driver::throw_error(CUresult result, const char* call, const std::string& detail) const {
  throw CudaError(call, result, error_name(result), error_description(result), detail);
}

std::shared_ptr<const Driver> driver() {
  static std::once_flag once;
  static std::shared_ptr<const Driver> instance;
  static std::string failure;
  std::call_once(once, [] {
    try {
      instance = Driver::load(driver_library_from_environment());
    } catch (const RuntimeError& error) {
      failure = error.what();
    }
  });
  if (!instance) throw DriverUnavailable(failure);
  return instance;
}

bool gpu_available() { return gpu_unavailable_reason().empty(); }

std::string gpu_unavailable_reason() {
  try {
    std::shared_ptr<const Driver> loaded = driver();
    int count = 0;
    loaded->check(loaded->api().cuDeviceGetCount(&count), "cuDeviceGetCount");
    return count > 0 ? std::string() : std::string("the CUDA driver reports no device");
  } catch (const RuntimeError& error) {
    return error.what();
  }
}

}  // namespace quantc::runtime::cuda
