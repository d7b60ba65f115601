// One warp's tensor-core tile, D = C + A·B, with mma.sync.aligned.m16n8k16.row.col (f32
// accumulate, f16 or bf16 inputs). The lanes' fragments follow the PTX ISA's figures for
// mma.m16n8k16 (g = lane / 4, t = lane % 4): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 =
// A[g][2t+8..], a3 = A[g+8][2t+8..]; b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]; c0, c1 =
// C[g][2t..2t+1], c2, c3 = C[g+8][2t..]; D comes back in C's layout. A is 16x16, B 16x8
// (K x N), C and D 16x8, all row-major; A and B hold raw f16 or bf16 bits. The kernels
// differ in how the fragments arrive: straight from global memory (mma_f16, mma_bf16),
// through shared memory and ldmatrix (mma_ldmatrix_f16), or through two cp.async groups
// into shared memory and ldmatrix (mma_async_f16).
#include <cstdint>

__device__ __forceinline__ uint32_t pack(uint16_t low, uint16_t high) { return uint32_t(low) | (uint32_t(high) << 16); }

struct Fragments {
  uint32_t a[4], b[2];
};

/// D = C + A·B from the fragments; C read from and D written to row-major c and d.
template <bool kBf16>
__device__ __forceinline__ void multiply_accumulate(const Fragments& f, const float* c, float* d) {
  const unsigned lane = threadIdx.x, g = lane / 4, t = lane % 4;
  float d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1], d2 = c[(g + 8) * 8 + 2 * t], d3 = c[(g + 8) * 8 + 2 * t + 1];
  if (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(f.a[0]), "r"(f.a[1]), "r"(f.a[2]), "r"(f.a[3]), "r"(f.b[0]), "r"(f.b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(f.a[0]), "r"(f.a[1]), "r"(f.a[2]), "r"(f.a[3]), "r"(f.b[0]), "r"(f.b[1]));
  }
  d[g * 8 + 2 * t] = d0;
  d[g * 8 + 2 * t + 1] = d1;
  d[(g + 8) * 8 + 2 * t] = d2;
  d[(g + 8) * 8 + 2 * t + 1] = d3;
}

/// The fragments of row-major A and B in global memory, element by element.
__device__ __forceinline__ Fragments fragments_from_global(const uint16_t* a, const uint16_t* b) {
  const unsigned lane = threadIdx.x, g = lane / 4, t = lane % 4;
  Fragments f;
  f.a[0] = pack(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  f.a[1] = pack(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
  f.a[2] = pack(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
  f.a[3] = pack(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
  f.b[0] = pack(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  f.b[1] = pack(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  return f;
}

/// The fragments of A (16x16) and B (16x8) staged row-major in shared memory: ldmatrix.x4
/// (lane 8i + r names row r of matrix i; matrices rows 0-7 / 8-15 by columns 0-7 / 8-15)
/// and ldmatrix.x2.trans (B's k rows 0-7 and 8-15).
__device__ __forceinline__ Fragments fragments_from_shared(const uint16_t* a_tile, const uint16_t* b_tile) {
  const unsigned lane = threadIdx.x, matrix = lane / 8;
  const unsigned a_address = static_cast<unsigned>(
      __cvta_generic_to_shared(a_tile + ((matrix & 1) * 8 + lane % 8) * 16 + (matrix / 2) * 8));
  const unsigned b_address = static_cast<unsigned>(__cvta_generic_to_shared(b_tile + (lane % 16) * 8));
  Fragments f;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(f.a[0]), "=r"(f.a[1]), "=r"(f.a[2]), "=r"(f.a[3])
               : "r"(a_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(f.b[0]), "=r"(f.b[1]) : "r"(b_address));
  return f;
}

extern "C" __global__ void mma_f16(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  multiply_accumulate<false>(fragments_from_global(a, b), c, d);
}
extern "C" __global__ void mma_bf16(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  multiply_accumulate<true>(fragments_from_global(a, b), c, d);
}

extern "C" __global__ void mma_ldmatrix_f16(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  __shared__ __align__(16) uint16_t a_tile[256];
  __shared__ __align__(16) uint16_t b_tile[128];
  for (unsigned i = threadIdx.x; i < 256; i += 32) a_tile[i] = a[i];
  for (unsigned i = threadIdx.x; i < 128; i += 32) b_tile[i] = b[i];
  __syncthreads();
  multiply_accumulate<false>(fragments_from_shared(a_tile, b_tile), c, d);
}

// Two cp.async groups in flight (16-byte .cg copies of A's rows, then 8-byte .ca copies of
// B's), cp.async.wait_group 1 then 0: A's rows land first, B's with the last wait.
// `staged_after_first_wait` records two of A's halves per lane after the first wait.
extern "C" __global__ void mma_async_f16(const uint16_t* a, const uint16_t* b, const float* c, float* d,
                                         unsigned* staged_after_first_wait) {
  __shared__ __align__(16) uint16_t a_tile[256];
  __shared__ __align__(16) uint16_t b_tile[128];
  const unsigned lane = threadIdx.x;
  const unsigned a_copy = static_cast<unsigned>(__cvta_generic_to_shared(a_tile + lane * 8));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a_copy), "l"(a + lane * 8));
  asm volatile("cp.async.commit_group;");
  const unsigned b_copy = static_cast<unsigned>(__cvta_generic_to_shared(b_tile + lane * 4));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(b_copy), "l"(b + lane * 4));
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_group 1;");
  __syncthreads();
  staged_after_first_wait[lane] = a_tile[lane * 8] | (unsigned(a_tile[lane * 8 + 7]) << 16);
  asm volatile("cp.async.wait_group 0;");
  __syncthreads();
  multiply_accumulate<false>(fragments_from_shared(a_tile, b_tile), c, d);
}
