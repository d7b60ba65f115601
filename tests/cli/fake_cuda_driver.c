/* A fake CUDA driver for the CLI tests (QUANTC_CUDA_DRIVER=<this library>): it has one
 * "device", allocates host memory for device memory and copies faithfully, but its
 * kernel launches do nothing. So `quantc run --backend cuda --compare reference` runs
 * two backends that really disagree, which is how the tests check that a --compare
 * mismatch fails. Every entry point quantc resolves is here (cuda.h maps the base names
 * to the exported _v2 symbols); none checks its arguments beyond what the tests need. */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
EXPORT CUresult cuDriverGetVersion(int* version) { *version = CUDA_VERSION; return CUDA_SUCCESS; }
EXPORT CUresult cuGetErrorName(CUresult error, const char** name) { (void)error; *name = "CUDA_ERROR_FAKE"; return CUDA_SUCCESS; }
EXPORT CUresult cuGetErrorString(CUresult error, const char** text) { (void)error; *text = "fake driver"; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetCount(int* count) { *count = 1; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) { *device = ordinal; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  (void)device;
  strncpy(name, "quantc fake device", (size_t)length);
  if (length > 0) name[length - 1] = '\0';
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  (void)device;
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 8; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
    default: *value = 65536; break;
  }
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  (void)device;
  *context = (CUcontext)(uintptr_t)0x1000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) { (void)device; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSetCurrent(CUcontext context) { (void)context; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int count, CUjit_option* options,
                                   void** values) {
  (void)image, (void)count, (void)options, (void)values;
  *module = (CUmodule)(uintptr_t)0x2000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuModuleUnload(CUmodule module) { (void)module; return CUDA_SUCCESS; }
EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  (void)module, (void)name;
  *function = (CUfunction)(uintptr_t)0x3000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  (void)function;
  *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : attribute == CU_FUNC_ATTRIBUTE_NUM_REGS ? 32 : 0;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  (void)function, (void)attribute, (void)value;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  void* memory = calloc(1, bytes ? bytes : 1);
  if (memory == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree(CUdeviceptr pointer) { free((void*)(uintptr_t)pointer); return CUDA_SUCCESS; }
EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr destination, const void* source, size_t bytes, CUstream stream) {
  (void)stream;
  memcpy((void*)(uintptr_t)destination, source, bytes);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoHAsync(void* destination, CUdeviceptr source, size_t bytes, CUstream stream) {
  (void)stream;
  memcpy(destination, (const void*)(uintptr_t)source, bytes);
  return CUDA_SUCCESS;
}
EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr pointer) {
  (void)data, (void)attribute, (void)pointer;
  return CUDA_ERROR_INVALID_VALUE;
}
EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  (void)flags;
  *stream = (CUstream)(uintptr_t)0x4000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy(CUstream stream) { (void)stream; return CUDA_SUCCESS; }
EXPORT CUresult cuStreamSynchronize(CUstream stream) { (void)stream; return CUDA_SUCCESS; }
EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  (void)flags;
  *event = (CUevent)(uintptr_t)0x5000;
  return CUDA_SUCCESS;
}
EXPORT CUresult cuEventDestroy(CUevent event) { (void)event; return CUDA_SUCCESS; }
EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) { (void)event, (void)stream; return CUDA_SUCCESS; }
EXPORT CUresult cuEventSynchronize(CUevent event) { (void)event; return CUDA_SUCCESS; }
EXPORT CUresult cuEventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  (void)start, (void)end;
  *milliseconds = 0.0f;
  return CUDA_SUCCESS;
}
/* The fake GPU computes nothing: output buffers keep what was copied in. */
EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                               unsigned int block_x, unsigned int block_y, unsigned int block_z,
                               unsigned int shared_bytes, CUstream stream, void** parameters, void** extra) {
  (void)function, (void)grid_x, (void)grid_y, (void)grid_z, (void)block_x, (void)block_y, (void)block_z;
  (void)shared_bytes, (void)stream, (void)parameters, (void)extra;
  return CUDA_SUCCESS;
}
