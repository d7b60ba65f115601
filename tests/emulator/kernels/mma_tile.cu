// One warp's tensor-core tile, D = C + A·B, with mma.sync.aligned.m16n8k16.row.col (f32
// accumulate, f16 or bf16 inputs). Each lane loads its fragments from row-major matrices
// in global memory as the PTX ISA's figures for mma.m16n8k16 place them (g = lane / 4,
// t = lane % 4): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 =
// A[g+8][2t+8..]; b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]; c0, c1 = C[g][2t..2t+1], c2, c3 =
// C[g+8][2t..]; D comes back in C's layout. A is 16x16, B 16x8 (K x N), C and D 16x8, all
// row-major; A and B hold raw f16 or bf16 bits.
#include <cstdint>

__device__ __forceinline__ uint32_t pack(uint16_t low, uint16_t high) { return uint32_t(low) | (uint32_t(high) << 16); }

template <bool kBf16>
__device__ __forceinline__ void mma_tile(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  const unsigned lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const uint32_t a0 = pack(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  const uint32_t a1 = pack(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
  const uint32_t a2 = pack(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
  const uint32_t a3 = pack(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
  const uint32_t b0 = pack(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  const uint32_t b1 = pack(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  float d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1], d2 = c[(g + 8) * 8 + 2 * t], d3 = c[(g + 8) * 8 + 2 * t + 1];
  if (kBf16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  d[g * 8 + 2 * t] = d0;
  d[g * 8 + 2 * t + 1] = d1;
  d[(g + 8) * 8 + 2 * t] = d2;
  d[(g + 8) * 8 + 2 * t + 1] = d3;
}

extern "C" __global__ void mma_f16(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  mma_tile<false>(a, b, c, d);
}
extern "C" __global__ void mma_bf16(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  mma_tile<true>(a, b, c, d);
}

// The same tile through shared memory: A (16x16) and B (16x8) copied to shared arrays,
// then the fragments by ldmatrix.x4 (A: lane 8i + r names row r of matrix i, matrices
// rows 0-7 / 8-15 by columns 0-7 / 8-15) and ldmatrix.x2.trans (B: rows k 0-7 and 8-15).
extern "C" __global__ void mma_ldmatrix_f16(const uint16_t* a, const uint16_t* b, const float* c, float* d) {
  __shared__ __align__(16) uint16_t a_tile[256];
  __shared__ __align__(16) uint16_t b_tile[128];
  const unsigned lane = threadIdx.x, g = lane / 4, t = lane % 4;
  for (unsigned i = lane; i < 256; i += 32) a_tile[i] = a[i];
  for (unsigned i = lane; i < 128; i += 32) b_tile[i] = b[i];
  __syncthreads();
  const unsigned matrix = lane / 8;
  const uint16_t* a_row = a_tile + ((matrix & 1) * 8 + lane % 8) * 16 + (matrix / 2) * 8;
  const uint16_t* b_row = b_tile + (lane % 16) * 8;
  const unsigned a_address = static_cast<unsigned>(__cvta_generic_to_shared(a_row));
  const unsigned b_address = static_cast<unsigned>(__cvta_generic_to_shared(b_row));
  uint32_t a0, a1, a2, a3, b0, b1;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
               : "r"(a_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(b_address));
  float d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1], d2 = c[(g + 8) * 8 + 2 * t], d3 = c[(g + 8) * 8 + 2 * t + 1];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  d[g * 8 + 2 * t] = d0;
  d[g * 8 + 2 * t + 1] = d1;
  d[(g + 8) * 8 + 2 * t] = d2;
  d[(g + 8) * 8 + 2 * t + 1] = d3;
}

// Two cp.async groups in flight (16-byte .cg copies of A's rows, then 8-byte .ca copies
// of B's), cp.async.wait_group 1 then 0: the A rows land first, B's with the last wait.
// Then the ldmatrix + mma tile as above, and sums of the staged rows checked per stage.
extern "C" __global__ void mma_async_f16(const uint16_t* a, const uint16_t* b, const float* c, float* d,
                                         unsigned* staged_after_first_wait) {
  __shared__ __align__(16) uint16_t a_tile[256];
  __shared__ __align__(16) uint16_t b_tile[128];
  const unsigned lane = threadIdx.x, g = lane / 4, t = lane % 4;
  const unsigned a_copy = static_cast<unsigned>(__cvta_generic_to_shared(a_tile + lane * 8));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a_copy), "l"(a + lane * 8));
  asm volatile("cp.async.commit_group;");
  for (unsigned i = lane; i < 32; i += 32) {
    const unsigned b_copy = static_cast<unsigned>(__cvta_generic_to_shared(b_tile + i * 4));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(b_copy), "l"(b + i * 4));
  }
  asm volatile("cp.async.commit_group;");
  asm volatile("cp.async.wait_group 1;");
  __syncthreads();
  // The first group (A) has landed; B's group may still be in flight.
  staged_after_first_wait[lane] = a_tile[lane * 8] | (unsigned(a_tile[lane * 8 + 7]) << 16);
  asm volatile("cp.async.wait_group 0;");
  __syncthreads();
  const unsigned matrix = lane / 8;
  const unsigned a_address = static_cast<unsigned>(
      __cvta_generic_to_shared(a_tile + ((matrix & 1) * 8 + lane % 8) * 16 + (matrix / 2) * 8));
  const unsigned b_address = static_cast<unsigned>(__cvta_generic_to_shared(b_tile + (lane % 16) * 8));
  uint32_t a0, a1, a2, a3, b0, b1;
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3)
               : "r"(a_address));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(b_address));
  float d0 = c[g * 8 + 2 * t], d1 = c[g * 8 + 2 * t + 1], d2 = c[(g + 8) * 8 + 2 * t], d3 = c[(g + 8) * 8 + 2 * t + 1];
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  d[g * 8 + 2 * t] = d0;
  d[g * 8 + 2 * t + 1] = d1;
  d[(g + 8) * 8 + 2 * t] = d2;
  d[(g + 8) * 8 + 2 * t + 1] = d3;
}
