// Integer bit manipulation as nvcc and hand-written inline PTX spell it:
// lop3.b32 with the truth table written in lowercase hex, uppercase hex and decimal,
// prmt.b32 in the default mode (__byte_perm, including sign-replicating selector
// nibbles) and in every named mode, and the funnel shifts shf.l/shf.r with .wrap
// and .clamp (__funnelshift_l/lc/r/rc).
#include <cstdint>

extern "C" __global__ void bit_ops(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t x = a[i], y = b[i], z = c[i];
  uint32_t* o = out + 21 * i;
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(x), "r"(y), "r"(z));  // (x & y) | z
  o[0] = r;
  asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r) : "r"(x), "r"(y), "r"(z));  // x ^ y ^ z
  o[1] = r;
  asm("lop3.b32 %0, %1, %2, %3, 0XE8;" : "=r"(r) : "r"(x), "r"(y), "r"(z));  // majority
  o[2] = r;
  asm("lop3.b32 %0, %1, %2, %3, 0xCA;" : "=r"(r) : "r"(x), "r"(y), "r"(z));  // x ? y : z bitwise
  o[3] = r;
  asm("lop3.b32 %0, %1, %2, %3, 120;" : "=r"(r) : "r"(x), "r"(y), "r"(z));  // 0x78: x ^ (y & z)
  o[4] = r;
  // __byte_perm: the selector comes from memory so nvcc cannot fold it.
  o[5] = __byte_perm(x, y, z);
  o[6] = __byte_perm(x, y, 0x3210u);
  o[7] = __byte_perm(x, y, 0x7654u);
  o[8] = __byte_perm(x, y, 0x0123u);
  asm("prmt.b32 %0, %1, %2, 0x8a9b;" : "=r"(r) : "r"(x), "r"(y));  // sign-replicating nibbles
  o[9] = r;
  asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[10] = r;
  asm("prmt.b32.b4e %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[11] = r;
  asm("prmt.b32.rc8 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[12] = r;
  asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[13] = r;
  asm("prmt.b32.ecr %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[14] = r;
  asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[15] = r;
  uint32_t shift = z & 63u;  // 0..63: past 32 the wrap and clamp forms differ
  o[16] = __funnelshift_l(x, y, shift);
  o[17] = __funnelshift_lc(x, y, shift);
  o[18] = __funnelshift_r(x, y, shift);
  o[19] = __funnelshift_rc(x, y, shift);
  // The default mode with a selector from memory, unmasked (__byte_perm clears bit 3 of
  // every nibble, so sign replication is reachable only from PTX).
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
  o[20] = r;
}
