// Marlin-style int4 -> f16 dequantization (IST-DASLab/marlin, dequant()): the 4-bit
// codes are spliced into the mantissa of f16 1024.0 with one lop3 ("magic number"
// 0x6400), then the bias is removed: the low nibbles by sub.f16x2 of {1032, 1032}
// (1024 + 8, for codes centred on 8), the high nibbles, 16 times larger, by an
// fma.rn.f16x2 with {1/16, 1/16} and {-72, -72}. Each pair of dequantized halves is
// then scaled with mul.f16x2 (and, second output, with an fma.rn.f16x2 plus zero).
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ uint32_t lop3_ea(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm volatile("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(a), "r"(b), "r"(c));  // (a & b) | c
  return r;
}

// Dequantizes the 4 nibbles at bits {0-3, 4-7, 16-19, 20-23} of q into two f16x2:
// frag[0] = {n0, n4}, frag[1] = {n1, n5} (nibble k at bits 4k), each minus 8.
__device__ __forceinline__ void dequant(uint32_t q, __half2* frag) {
  const uint32_t LO = 0x000f000f, HI = 0x00f000f0, EX = 0x64006400;
  uint32_t lo = lop3_ea(q, LO, EX);
  uint32_t hi = lop3_ea(q, HI, EX);
  const uint32_t SUB = 0x64086408, MUL = 0x2c002c00, ADD = 0xd480d480;
  frag[0] = __hsub2(*reinterpret_cast<__half2*>(&lo), *reinterpret_cast<const __half2*>(&SUB));
  frag[1] = __hfma2(*reinterpret_cast<__half2*>(&hi), *reinterpret_cast<const __half2*>(&MUL),
                    *reinterpret_cast<const __half2*>(&ADD));
}

// q[i] holds 8 codes; out[16 i ..] gets the 8 unscaled halves (4 x f16x2), the 8
// scaled with mul.f16x2, and the 8 scaled with fma(x, scale, -0).
extern "C" __global__ void marlin_dequant(const uint32_t* q, const __half2* scales, __half2* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t codes = q[i];
  __half2 scale = scales[i];
  __half2 frag[4];
  dequant(codes, frag);
  dequant(codes >> 8, frag + 2);
  __half2* o = out + 12 * i;
  const __half2 minus_zero = __halves2half2(__ushort_as_half(0x8000), __ushort_as_half(0x8000));
  for (int k = 0; k < 4; ++k) {
    o[k] = frag[k];
    o[4 + k] = __hmul2(frag[k], scale);
    o[8 + k] = __hfma2(frag[k], scale, minus_zero);
  }
}
