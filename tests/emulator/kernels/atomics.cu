// Global atomics: atomicAdd on u32 and f32 (atom.global.add), atomicMax on s32
// (atom.global.max.s32), atomicCAS (atom.global.cas.b32) both as a one-shot claim and
// in a compare-and-swap loop computing a float maximum, an f32 add of an immediate,
// and the reductions red.global.add.u32/.f32 and red.global.max.s32. CUDA 13's nvcc
// keeps atom even when the result is unused (the atom -> red rewrite is ptxas's), so
// the red forms are written as inline PTX.
extern "C" __global__ void atomics(const unsigned* u, const float* f, const int* s, unsigned* counters,
                                   float* sums, int* maxima, unsigned* claims, unsigned* old_u, float* old_f,
                                   int* old_s, unsigned* claim_old, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  old_u[i] = atomicAdd(&counters[0], u[i]);  // atom.global.add.u32, result used
  atomicAdd(&counters[1], u[i]);             // atom.global.add.u32, result dropped
  asm volatile("red.global.add.u32 [%0], %1;" ::"l"(&counters[2]), "r"(u[i]) : "memory");
  old_f[i] = atomicAdd(&sums[0], f[i]);  // atom.global.add.f32
  atomicAdd(&sums[1], f[i]);
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(&sums[2]), "f"(f[i]) : "memory");
  atomicAdd(&sums[3], 0.5f);  // an f32 immediate operand
  old_s[i] = atomicMax(&maxima[0], s[i]);  // atom.global.max.s32
  asm volatile("red.global.max.s32 [%0], %1;" ::"l"(&maxima[1]), "r"(s[i]) : "memory");
  // The first thread to reach a slot claims it; every later one reads the winner.
  claim_old[i] = atomicCAS(&claims[i % 8], 0xffffffffu, static_cast<unsigned>(i));
  // A float maximum by compare-and-swap, retried until no other thread intervened.
  unsigned* slot = &claims[8];
  unsigned observed = *slot, assumed;
  do {
    assumed = observed;
    float next = fmaxf(__uint_as_float(assumed), f[i]);
    observed = atomicCAS(slot, assumed, __float_as_uint(next));
  } while (observed != assumed);
}
