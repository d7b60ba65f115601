// Float rounding modes, conversions to integers and halves, saturation and min/max
// with NaN; each output slot is one intrinsic so a mismatch names itself.
#include <cuda_fp16.h>

extern "C" __global__ void float_conversions(const float* a, const float* b, const double* d, float* f, int* k,
                                             unsigned short* h, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  float* fo = f + 12 * i;
  int* ko = k + 6 * i;
  fo[0] = __fadd_rz(x, y);
  fo[1] = __fmul_ru(x, y);
  fo[2] = __fdiv_rn(x, y);
  fo[3] = __fmaf_rd(x, y, 1.0f);
  fo[4] = __fsqrt_rn(fabsf(x));
  fo[5] = fminf(x, y);
  fo[6] = fmaxf(x, y);
  fo[7] = __saturatef(x);
  fo[8] = __double2float_rd(d[i]);
  fo[9] = __double2float_ru(d[i]);
  fo[10] = __int2float_rz(static_cast<int>(d[i] * 1e6));
  fo[11] = __half2float(__float2half_rn(x * 1000.0f));
  ko[0] = __float2int_rn(x * 100.0f);
  ko[1] = __float2int_rz(x * 1e10f);
  ko[2] = static_cast<int>(__float2uint_rd(x * 100.0f));
  ko[3] = __float2int_ru(y * 100.0f);
  ko[4] = __double2int_rn(d[i] * 3.0);
  ko[5] = static_cast<int>(static_cast<unsigned char>(fabsf(x) * 100.0f));
  h[i] = __half_as_ushort(__float2half_rn(y));
}
