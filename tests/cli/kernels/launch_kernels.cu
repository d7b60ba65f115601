// Kernels for the `quantc run FILE.ptx` / `quantc profile FILE.ptx` tests
// (tests/cli/cli_tests.cpp). launch_kernels.ptx is this file compiled by
//   nvcc -ptx -arch=sm_80 -O3 launch_kernels.cu -o launch_kernels.ptx   (CUDA 13.0)
// and checked in, so the tests need no nvcc, with one edit: `.version 9.0` lowered to
// `.version 7.0` (every instruction here exists since PTX 7.0, the sm_80 minimum) so
// that drivers older than CUDA 13 load it too.

// y[i] = a * x[i] + b for i < n: a buffer from a file, a zero-filled output buffer, and
// f32, s32 and u32 scalars.
extern "C" __global__ void affine(const float* x, float* y, float a, int b, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + static_cast<float>(b);
}

// Counts the odd values of v[0..n) into *count: a u64 scalar and an atomic.
extern "C" __global__ void count_odd(const int* v, unsigned* count, unsigned long long n) {
  unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  if (i < n && (v[i] & 1)) atomicAdd(count, 1u);
}

// v[i] *= s over a 2-D grid of 2-D blocks, row-major rows of `width` elements: an f64
// scalar, in-place update of a file buffer, and multi-dimensional --grid/--block.
extern "C" __global__ void scale_2d(double* v, double s, unsigned width, unsigned height) {
  unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
  if (col < width && row < height) v[row * width + col] *= s;
}
