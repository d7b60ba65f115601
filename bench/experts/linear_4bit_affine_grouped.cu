// Expert batch-1 baseline for quantc's `linear_4bit_affine_grouped` (GPTQ/AWQ-style affine
// INT4 with one f32 scale and one u32 zero point per group of k and output column):
//
//   out[i] = b[i] + sum_k x[k] * (q[k, i] - zero_point[g, i]) * scale[g, i],  g = k / group_size
//
// Buffers, exactly quantc's (ir/ops/Linear4Bit.h), in the same order:
//   x          f32[in_dim]
//   w          u32[in_dim/8 * out_dim]; word (k/8)*out_dim + i holds q[k..k+7, i], nibble k%8
//              at bits 4*(k%8) (output index fastest: "GPTQ qweight" [K/8, N] order)
//   scale      f32[ceil(in_dim/group_size) * out_dim], element g*out_dim + i
//   zero_point u32[ceil(in_dim/group_size) * out_dim], values 0..15
//   b          f32[out_dim]
//   out        f32[>= out_dim]; only out[0, out_dim) is written (quantc's buffer is padded)
// Preconditions (the host library checks them): in_dim % 8 == 0 (the op's own rule),
// group_size % 8 == 0 (a packed word never straddles two groups), out_dim % 4 == 0 (16-byte
// weight loads). The last group may be partial.
//
// Launch: blockDim.x = L * slots threads (L = 2^lanes_per_row_log2 lanes per row), a
// multiple of 32, at most 256, with slots * words_per_slot >= in_dim/8; gridDim.x =
// ceil(out_dim / (4*L)); dynamic shared memory 4*in_dim + 16*L*(blockDim.x/32) bytes (x',
// then the warps' partial sums). words_per_slot should divide or be a multiple of
// group_size/8, so that all row slots of a warp cross group boundaries together (no
// divergence); the host library picks it (bench/experts/ExpertKernels.cpp).
//
// How, and where the techniques come from (read, not copied):
//  - Tiling for batch 1 at the HBM limit (TensorRT-LLM's weight-only batched GEMV,
//    cpp/tensorrt_llm/kernels/weightOnlyBatchedGemv/kernel.h: a CTA owns a few output
//    columns and splits K across its threads, then reduces): a CTA owns 4*L columns
//    (L = lanes per row); L lanes read one k-word row of those columns with one 16-byte
//    `ld.global.nc.v4.u32` each, so each row segment is 16*L contiguous bytes (L >= 2: whole
//    32-byte sectors). The CTA's blockDim/L "row slots" split the k-words into contiguous
//    ranges of words_per_slot. The weight is output-fastest, so K is split across row
//    slots (lanes and warps), not across the lanes of one column as in llama.cpp's MMVQ.
//  - Magic-number nibble -> float conversion (Marlin's `lop3` dequantization,
//    IST-DASLab/marlin marlin_cuda_kernel.cu `dequant()`, and TensorRT-LLM's
//    weightOnlyBatchedGemv/converter.h): `lop3(word, 0xF << 4i, 0x4B000000)` is the f32
//    2^23 + q*16^i exactly, for nibbles i = 0..3 of the low half-word and, after one shift
//    by 16, of the high half. One `sub.f32` of 2^23 + z*16^i (the zero point folded into
//    the magic subtrahend, computed once per group) leaves (q - z)*16^i exactly, and one FMA
//    accumulates it: three instructions per weight, no I2F conversion, one shift per word.
//    The subtrahends come from the same lop3 applied to z*0x1111 (z in all four nibbles).
//  - The 16^-i position factors go into x once per CTA: x is staged in shared memory as
//    x'[k] = x[k] * 16^-(k%4) (exact powers of two unless |x[k]| < 2^-114 turns subnormal),
//    read back as two `ld.shared.v4.f32` per k-word, shared by the lane's 4 columns.
//  - Scale per group, factored out of the sum (llama.cpp's q4_1 `vec_dot`,
//    ggml-cuda/vecdotq.cuh, applies d and m once per block the same way):
//    acc += s * sum_{k in group} x'[k] * (q - z) * 16^i: one FMA per column per group.
//  - Deterministic reduction, no atomics: butterfly `shfl.sync.bfly` across the row slots of
//    a warp, then the warps' partials through shared memory, summed in warp order by one
//    thread per column, which adds b[i] and stores.
//  - 32-bit index math; the k-word loop is unrolled by 4 so 4 weight loads are in flight.
// Numerics: each term is x[k]*(q - z) rounded once (the reference rounds (q - z)*s, then x
// times that), the scale multiplies each group's sum, and the sums run in another order
// (per lane and group, butterfly, per warp), so results agree with the interpreter within
// the f32 accumulation bound of bench/experts/ExpertKernels.h, not bit for bit.
#include <cstdint>

namespace {

constexpr uint32_t kMagic = 0x4B000000u;  // f32 2^23: the mantissa's unit is 1

// (word & mask) | 2^23 as an f32: one lop3.b32 writing the float register directly (in C++
// nvcc emits and + or + mov.b32, which ptxas fuses, but the emulator counts PTX).
template <uint32_t kMask>
__device__ __forceinline__ float magic(uint32_t word) {
  float result;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=f"(result) : "r"(word), "n"(kMask), "n"(kMagic));
  return result;
}

__device__ __forceinline__ uint4 load_weights(const uint32_t* w, uint32_t index) {
  return __ldg(reinterpret_cast<const uint4*>(w + index));
}

// Adds the 8 weights of one packed word (one column, k = 8*kw .. 8*kw+7) to `acc`.
// xa, xb: x'[8kw .. 8kw+3], x'[8kw+4 .. 8kw+7]; zm[i] = 2^23 + z*16^i.
__device__ __forceinline__ float dot_word(uint32_t word, float4 xa, float4 xb, const float (&zm)[4], float acc) {
  const uint32_t high = word >> 16;
  acc = fmaf(xa.x, magic<0x000Fu>(word) - zm[0], acc);
  acc = fmaf(xa.y, magic<0x00F0u>(word) - zm[1], acc);
  acc = fmaf(xa.z, magic<0x0F00u>(word) - zm[2], acc);
  acc = fmaf(xa.w, magic<0xF000u>(word) - zm[3], acc);
  acc = fmaf(xb.x, magic<0x000Fu>(high) - zm[0], acc);
  acc = fmaf(xb.y, magic<0x00F0u>(high) - zm[1], acc);
  acc = fmaf(xb.z, magic<0x0F00u>(high) - zm[2], acc);
  acc = fmaf(xb.w, magic<0xF000u>(high) - zm[3], acc);
  return acc;
}

// zm[i] = 2^23 + z*16^i as f32 (z <= 15, so the bits stay in the mantissa): z*0x1111
// repeats z in the four nibbles, then the same lop3 as the weights picks nibble i.
__device__ __forceinline__ void zero_magic(uint32_t z, float (&zm)[4]) {
  const uint32_t repeated = z * 0x1111u;
  zm[0] = magic<0x000Fu>(repeated);
  zm[1] = magic<0x00F0u>(repeated);
  zm[2] = magic<0x0F00u>(repeated);
  zm[3] = magic<0xF000u>(repeated);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256)
linear_4bit_affine_grouped_expert(const float* __restrict__ x, const uint32_t* __restrict__ w,
                                  const float* __restrict__ scale, const uint32_t* __restrict__ zero_point,
                                  const float* __restrict__ b, float* __restrict__ out, uint32_t in_dim,
                                  uint32_t out_dim, uint32_t group_size, uint32_t lanes_per_row_log2,
                                  uint32_t words_per_slot) {
  extern __shared__ float4 shared[];
  float4* xs = shared;                                           // x', in_dim/4 float4
  float* partial = reinterpret_cast<float*>(shared + in_dim / 4);  // [warps][4 * lanes_per_row]

  const uint32_t tid = threadIdx.x;
  const uint32_t lanes_per_row = 1u << lanes_per_row_log2;
  const uint32_t columns_per_cta = 4u * lanes_per_row;

  // Stage x' = x * 16^-(k%4) in shared memory (exact: powers of two).
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (uint32_t i = tid; i < in_dim / 4; i += blockDim.x) {
    float4 v = __ldg(x4 + i);
    v.y *= 0.0625f;
    v.z *= 0.00390625f;
    v.w *= 0.000244140625f;
    xs[i] = v;
  }
  __syncthreads();

  const uint32_t quad = tid & (lanes_per_row - 1);  // which 4 columns of the CTA's
  const uint32_t slot = tid >> lanes_per_row_log2;  // which range of k-words
  const uint32_t column = blockIdx.x * columns_per_cta + quad * 4;
  const uint32_t words = in_dim / 8;
  const uint32_t words_per_group = group_size / 8;
  const uint32_t begin = min(slot * words_per_slot, words);
  const uint32_t end = min(begin + words_per_slot, words);

  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (column < out_dim) {
    uint32_t kw = begin;
    while (kw < end) {
      const uint32_t group = kw / words_per_group;
      const uint32_t segment_end = min(end, (group + 1) * words_per_group);
      const uint32_t sidecar = group * out_dim + column;
      const float4 s = __ldg(reinterpret_cast<const float4*>(scale + sidecar));
      const uint4 z = __ldg(reinterpret_cast<const uint4*>(zero_point + sidecar));
      float zm0[4], zm1[4], zm2[4], zm3[4];
      zero_magic(z.x, zm0);
      zero_magic(z.y, zm1);
      zero_magic(z.z, zm2);
      zero_magic(z.w, zm3);
      float g0 = 0.0f, g1 = 0.0f, g2 = 0.0f, g3 = 0.0f;
      uint32_t index = kw * out_dim + column;
#pragma unroll 4
      for (; kw < segment_end; ++kw, index += out_dim) {
        const uint4 q = load_weights(w, index);
        const float4 xa = xs[2 * kw];
        const float4 xb = xs[2 * kw + 1];
        g0 = dot_word(q.x, xa, xb, zm0, g0);
        g1 = dot_word(q.y, xa, xb, zm1, g1);
        g2 = dot_word(q.z, xa, xb, zm2, g2);
        g3 = dot_word(q.w, xa, xb, zm3, g3);
      }
      acc[0] = fmaf(s.x, g0, acc[0]);
      acc[1] = fmaf(s.y, g1, acc[1]);
      acc[2] = fmaf(s.z, g2, acc[2]);
      acc[3] = fmaf(s.w, g3, acc[3]);
    }
  }

  // Row slots of one warp: lanes that differ only in the slot bits, lane >= lanes_per_row.
#pragma unroll
  for (uint32_t mask = 16; mask >= 1; mask >>= 1) {
    if (mask < lanes_per_row) break;
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[c] += __shfl_xor_sync(0xFFFFFFFFu, acc[c], mask);
  }
  const uint32_t warp = tid / 32;
  const uint32_t lane = tid % 32;
  if (lane < lanes_per_row) {
#pragma unroll
    for (int c = 0; c < 4; ++c) partial[warp * columns_per_cta + quad * 4 + c] = acc[c];
  }
  __syncthreads();
  if (tid < columns_per_cta) {
    const uint32_t out_column = blockIdx.x * columns_per_cta + tid;
    if (out_column < out_dim) {
      float sum = 0.0f;
      for (uint32_t warp_index = 0; warp_index < blockDim.x / 32; ++warp_index)
        sum += partial[warp_index * columns_per_cta + tid];
      out[out_column] = b[out_column] + sum;
    }
  }
}
