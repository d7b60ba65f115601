// Packed half-precision arithmetic as nvcc emits it: add/sub/mul/fma.rn on f16x2 and
// bf16x2, bf16x2 min/max/neg/abs. Built for sm_90 (add.rn.bf16x2, sub.rn.bf16x2,
// mul.rn.bf16x2) and for sm_80, where nvcc spells bf16 add/sub/mul as fma.rn.bf16x2
// with 1.0 / -1.0 / -0.0 constants.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void half2_arith(const __half2* a, const __half2* b, const __half2* c, __half2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 x = a[i], y = b[i], z = c[i];
  __half2* o = out + 4 * i;
  o[0] = __hadd2(x, y);
  o[1] = __hsub2(x, y);
  o[2] = __hmul2(x, y);
  o[3] = __hfma2(x, y, z);
}

extern "C" __global__ void bfloat162_arith(const __nv_bfloat162* a, const __nv_bfloat162* b, const __nv_bfloat162* c,
                                           __nv_bfloat162* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat162 x = a[i], y = b[i], z = c[i];
  __nv_bfloat162* o = out + 8 * i;
  o[0] = __hadd2(x, y);
  o[1] = __hsub2(x, y);
  o[2] = __hmul2(x, y);
  o[3] = __hfma2(x, y, z);
  o[4] = __hmin2(x, y);
  o[5] = __hmax2(x, y);
  o[6] = __hneg2(x);
  o[7] = __habs2(y);
}
