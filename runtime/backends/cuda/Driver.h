// The CUDA Driver API, loaded at run time.
//
// quantc never links against the driver (libcuda), so `quantc` starts and works (emit,
// check, run on the reference backend) on machines without one. The first GPU operation
// loads the driver library with dlopen and resolves every entry point below with
// cuGetProcAddress (CUDA Driver API, "Driver Entry Point Access"), falling back to dlsym
// of the versioned symbol name ("cuMemAlloc_v2") for drivers that lack it.
//
// Library path: $QUANTC_CUDA_DRIVER when set (e.g. the toolkit's stub
// /usr/local/cuda/lib64/stubs/libcuda.so, which tests use), else "libcuda.so.1" found
// through the dynamic loader's search path.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "runtime/Buffers.h"

namespace quantc::runtime::cuda {

/// A failed driver call: the call (e.g. "cuModuleLoadDataEx"), the CUresult, its name
/// ("CUDA_ERROR_INVALID_PTX") and description (cuGetErrorName / cuGetErrorString), plus
/// any detail (such as the JIT error log) in the message.
class CudaError : public RuntimeError {
 public:
  CudaError(std::string call, CUresult result, std::string name, std::string description, std::string detail = {});
  const std::string& call() const { return call_; }
  CUresult result() const { return result_; }
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }

 private:
  std::string call_;
  CUresult result_;
  std::string name_;
  std::string description_;
};

/// No usable driver: the library is missing, is the toolkit's stub (its calls return
/// CUDA_ERROR_STUB_LIBRARY), lacks a required entry point, or finds no device. The
/// message says which, names the library path, and suggests `--backend reference`.
class DriverUnavailable : public BackendUnavailable {
 public:
  using BackendUnavailable::BackendUnavailable;
};

// Every entry point quantc uses, listed once. Names are the cuda.h names; cuda.h maps some
// to versioned symbols (cuMemAlloc -> cuMemAlloc_v2), which the member types follow.
#define QUANTC_CUDA_DRIVER_ENTRY_POINTS(X) \
  X(cuInit)                                \
  X(cuDriverGetVersion)                    \
  X(cuGetErrorName)                        \
  X(cuGetErrorString)                      \
  X(cuDeviceGetCount)                      \
  X(cuDeviceGet)                           \
  X(cuDeviceGetName)                       \
  X(cuDeviceGetAttribute)                  \
  X(cuDevicePrimaryCtxRetain)              \
  X(cuDevicePrimaryCtxRelease)             \
  X(cuCtxSetCurrent)                       \
  X(cuCtxSynchronize)                      \
  X(cuModuleLoadDataEx)                    \
  X(cuModuleUnload)                        \
  X(cuModuleGetFunction)                   \
  X(cuFuncGetAttribute)                    \
  X(cuFuncSetAttribute)                    \
  X(cuMemAlloc)                            \
  X(cuMemFree)                             \
  X(cuMemcpyHtoDAsync)                     \
  X(cuMemcpyDtoHAsync)                     \
  X(cuMemcpyDtoDAsync)                     \
  X(cuMemsetD8Async)                       \
  X(cuPointerGetAttribute)                 \
  X(cuStreamCreate)                        \
  X(cuStreamDestroy)                       \
  X(cuStreamSynchronize)                   \
  X(cuEventCreate)                         \
  X(cuEventDestroy)                        \
  X(cuEventRecord)                         \
  X(cuEventSynchronize)                    \
  X(cuEventElapsedTime)                    \
  X(cuStreamBeginCapture)                  \
  X(cuStreamEndCapture)                    \
  X(cuGraphInstantiateWithFlags)           \
  X(cuGraphLaunch)                         \
  X(cuGraphExecDestroy)                    \
  X(cuGraphDestroy)                        \
  X(cuLaunchKernel)

/// Function pointers into the loaded driver; all non-null once Driver::load returned.
struct DriverApi {
#define QUANTC_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  QUANTC_CUDA_DRIVER_ENTRY_POINTS(QUANTC_CUDA_MEMBER)
#undef QUANTC_CUDA_MEMBER
};

/// The driver library path the environment selects: $QUANTC_CUDA_DRIVER, else "libcuda.so.1".
std::string driver_library_from_environment();

class Driver {
 public:
  /// dlopens `library_path`, resolves every entry point and calls cuInit(0). Throws
  /// DriverUnavailable when the library cannot be opened (with dlerror's text), is the
  /// toolkit's stub (CUDA_ERROR_STUB_LIBRARY), lacks an entry point (names it: the driver
  /// is older than CUDA 12), or reports no device (CUDA_ERROR_NO_DEVICE); CudaError for
  /// any other cuInit failure. Each call loads afresh (tests point it at different paths);
  /// use `driver()` for the process-wide instance.
  static std::shared_ptr<const Driver> load(const std::string& library_path);

  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const DriverApi& api() const { return api_; }
  const std::string& library_path() const { return library_path_; }
  /// The driver's CUDA version as major*1000 + minor*10 (13000 for 13.0).
  int version() const { return version_; }

  /// Throws CudaError for `result` != CUDA_SUCCESS; `call` names the driver function.
  /// The error strings are looked up only on failure.
  void check(CUresult result, const char* call, const std::string& detail = {}) const {
    if (result != CUDA_SUCCESS) throw_error(result, call, detail);
  }
  /// "CUDA_ERROR_INVALID_PTX", or "CUresult 218" when the driver cannot name it.
  std::string error_name(CUresult result) const;
  std::string error_description(CUresult result) const;

 private:
  Driver() = default;
  [[noreturn]] void throw_error(CUresult result, const char* call, const std::string& detail) const;

  void* handle_ = nullptr;
  std::string library_path_;
  int version_ = 0;
  DriverApi api_;
};

/// The process-wide driver, loaded from driver_library_from_environment() on the first
/// call. A failure is remembered: every later call throws the same DriverUnavailable.
std::shared_ptr<const Driver> driver();

/// Whether a usable driver and at least one device exist (never throws). GPU tests and
/// benchmarks use it to skip with a visible message.
bool gpu_available();
/// Why gpu_available() is false (the DriverUnavailable message), or "" when it is true.
std::string gpu_unavailable_reason();

}  // namespace quantc::runtime::cuda
