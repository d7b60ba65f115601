// Conversions between f32 and the half formats, and the packing and unpacking of
// half pairs in a 32-bit register: cvt.rn.f16x2.f32 and cvt.rn.bf16x2.f32
// (__floats2half2_rn / __floats2bfloat162_rn), cvt.rn.f16.f32 and cvt.rn.bf16.f32,
// cvt.f32.f16 (__half2float, __half22float2), __bfloat162float (cvt.f32.bf16 on
// sm_90, a mov.b32 {0, %h} shift on sm_80), mov.b32 {%h, %h} both ways.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void half_conversions(const float* f, const unsigned* h, unsigned* out, float* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = f[2 * i], y = f[2 * i + 1];
  unsigned* o = out + 6 * i;
  float* w = wide + 6 * i;
  __half2 packed = __floats2half2_rn(x, y);  // x in the low half
  o[0] = *reinterpret_cast<unsigned*>(&packed);
  __nv_bfloat162 bpacked = __floats2bfloat162_rn(x, y);
  o[1] = *reinterpret_cast<unsigned*>(&bpacked);
  __half hx = __float2half_rn(x);
  __nv_bfloat16 bx = __float2bfloat16_rn(y);
  o[2] = __half_as_ushort(hx) | (static_cast<unsigned>(__bfloat16_as_ushort(bx)) << 16);
  // From the halves of h[i] (bits from memory, NaN payloads and all).
  unsigned bits = h[i];
  __half2 hh = *reinterpret_cast<const __half2*>(&bits);
  float2 unpacked = __half22float2(hh);
  w[0] = unpacked.x;
  w[1] = unpacked.y;
  __nv_bfloat162 bb = *reinterpret_cast<const __nv_bfloat162*>(&bits);
  w[2] = __bfloat162float(__low2bfloat16(bb));
  w[3] = __bfloat162float(__high2bfloat16(bb));
  w[4] = __half2float(__ushort_as_half(static_cast<unsigned short>(bits >> 16)));
  // Swap the halves: mov.b32 {lo, hi} unpack, then mov.b32 {hi, lo} pack.
  __half2 swapped = __halves2half2(__high2half(hh), __low2half(hh));
  o[3] = *reinterpret_cast<unsigned*>(&swapped);
  o[4] = *reinterpret_cast<unsigned*>(&bpacked) ^ bits;
  o[5] = 0;
  w[5] = __low2float(hh) + __high2float(hh);
}
