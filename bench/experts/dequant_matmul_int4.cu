// Expert batch-1 baseline for quantc's `dequant_matmul_int4` at m = 1 (block-quantized
// unsigned INT4 with an f32 scale and, when asymmetric, an f32 zero point per block of k and
// output column):
//
//   out[j] = sum_p x[p] * (q[p, j] - z[p/block_size, j]) * s[p/block_size, j]
//
// Two entries, one per buffer list of the op (ir/ops/DequantMatmul.h):
//   dequant_matmul_int4_expert_asymmetric(x, w, scales, zero_points, out, k, n, block_size, log2 L, rows)
//   dequant_matmul_int4_expert_symmetric (x, w, scales, out, k, n, block_size, log2 L, rows)   (z = 0)
// Buffers, exactly quantc's at m = 1:
//   x           f32[k]
//   w           u8[k*n/2]: element p*n + j is the low (even) / high (odd) nibble of byte
//               (p*n + j)/2, i.e. row p of W is n/2 consecutive bytes, column j fastest
//   scales      f32[ceil(k/block_size)*n], element (p/block_size)*n + j
//   zero_points f32[ceil(k/block_size)*n] (asymmetric only), any f32 values
//   out         f32[n]
// Preconditions (the host library checks them): n % 32 == 0 (16-byte weight loads: row p
// starts at byte p*n/2); any k >= 1 and block_size >= 1 (the last block may be partial).
//
// Launch: blockDim.x = L * slots (L = 2^lanes_per_row_log2 lanes per row), a multiple of
// 32, at most 256, with slots * rows_per_slot >= k; gridDim.x = ceil(n / (32*L)); dynamic
// shared memory 128*blockDim.x bytes (the partial sums). rows_per_slot should divide or be
// a multiple of block_size, so that all row slots of a warp cross block boundaries
// together (no divergence); the host library picks it (bench/experts/ExpertKernels.cpp).
//
// How, and where the techniques come from (read, not copied):
//  - Weight tiling for batch 1 (TensorRT-LLM's weight-only batched GEMV,
//    cpp/tensorrt_llm/kernels/weightOnlyBatchedGemv/kernel.h: a CTA owns a tile of output
//    columns, its threads split K, an epilogue reduces): a lane owns 32 adjacent columns, the
//    16 bytes of one row that one `ld.global.nc.v4.u32` brings; L lanes side by side read
//    16*L contiguous bytes of a row (L >= 2: whole 32-byte sectors); the CTA's blockDim/L
//    row slots split the rows into contiguous ranges of rows_per_slot.
//  - Magic-number conversion (Marlin's `lop3` dequantization, IST-DASLab/marlin
//    marlin_cuda_kernel.cu `dequant()`; TensorRT-LLM weightOnlyBatchedGemv/converter.h):
//    `lop3(word, 0xF << 4i, 0x4B000000)` is the f32 2^23 + q*16^i exactly (nibbles i = 0..3
//    of each half-word, the high half after one shift), one `sub.f32` of 2^23 leaves
//    q*16^i, one FMA accumulates x[p]*q*16^i. Column j always sits at the same nibble
//    position, so its 16^-i factor is applied once per block, exactly (a power of two).
//  - Zero point and scale factored per block (llama.cpp's q4_1 dot product,
//    ggml-cuda/vecdotq.cuh, adds m * sum(y) per block the same way):
//    sum_p x*(q - z)*s = s * (sum_p x*q - z * sum_p x). Per row: one x value (a 4-byte
//    `ld.global.nc`, the same address for the row slot's lanes, L1-resident) and one add for
//    sum_p x serve all 32 columns; per block and column: one load of s (and z), two FMAs.
//  - Deterministic reduction, no atomics: each thread's 32 partial sums go to shared
//    memory (float4 stores), then every thread sums a fixed slice of row slots for one
//    column, and one thread per column adds the slices in order and stores (with fewer
//    than 2 threads per column, each thread sums all slots of its columns): about 80
//    instructions per thread, where a shuffle butterfly of 32 values over a warp's 16 row
//    slots would take 256.
//  - 32-bit index math; the row loop is unrolled by 4 so 4 weight loads are in flight.
// Numerics: the terms and sums are reordered and the zero point is factored out of the
// block's sum, so results agree with the interpreter (which rounds (q - z), then *s, then
// x*w, then adds, in p order) within the f32 accumulation bound of
// bench/experts/ExpertKernels.h, not bit for bit.
#include <cstdint>

namespace {

constexpr uint32_t kMagic = 0x4B000000u;  // f32 2^23: the mantissa's unit is 1
constexpr float kMagicValue = 8388608.0f;

// (word & mask) | 2^23 as an f32, one lop3.b32 (in C++ nvcc emits and + or + mov.b32, which
// ptxas fuses, but the emulator counts PTX).
template <uint32_t kMask>
__device__ __forceinline__ float magic(uint32_t word) {
  float result;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=f"(result) : "r"(word), "n"(kMask), "n"(kMagic));
  return result;
}

// acc[8c .. 8c+7] += xp * q * 16^(i%4) for the 8 nibbles (columns) of one word.
__device__ __forceinline__ void accumulate_word(uint32_t word, float xp, float* acc) {
  const uint32_t high = word >> 16;
  acc[0] = fmaf(xp, magic<0x000Fu>(word) - kMagicValue, acc[0]);
  acc[1] = fmaf(xp, magic<0x00F0u>(word) - kMagicValue, acc[1]);
  acc[2] = fmaf(xp, magic<0x0F00u>(word) - kMagicValue, acc[2]);
  acc[3] = fmaf(xp, magic<0xF000u>(word) - kMagicValue, acc[3]);
  acc[4] = fmaf(xp, magic<0x000Fu>(high) - kMagicValue, acc[4]);
  acc[5] = fmaf(xp, magic<0x00F0u>(high) - kMagicValue, acc[5]);
  acc[6] = fmaf(xp, magic<0x0F00u>(high) - kMagicValue, acc[6]);
  acc[7] = fmaf(xp, magic<0xF000u>(high) - kMagicValue, acc[7]);
}

template <bool kAsymmetric>
__device__ __forceinline__ void gemv(const float* __restrict__ x, const uint8_t* __restrict__ w,
                                     const float* __restrict__ scales, const float* __restrict__ zero_points,
                                     float* __restrict__ out, uint32_t k, uint32_t n, uint32_t block_size,
                                     uint32_t lanes_per_row_log2, uint32_t rows_per_slot) {
  extern __shared__ float4 shared[];  // the partial sums, after the k loop
  const uint32_t tid = threadIdx.x;
  const uint32_t lanes_per_row = 1u << lanes_per_row_log2;
  const uint32_t columns_per_cta = 32u * lanes_per_row;
  const uint32_t slots = blockDim.x >> lanes_per_row_log2;
  const uint32_t strip = tid & (lanes_per_row - 1);  // which 32 columns of the CTA's
  const uint32_t slot = tid >> lanes_per_row_log2;   // which range of rows
  const uint32_t column = blockIdx.x * columns_per_cta + strip * 32;
  const uint32_t begin = min(slot * rows_per_slot, k);
  const uint32_t end = min(begin + rows_per_slot, k);
  const uint32_t row_words = n / 8;  // u32 words per row of W

  float total[32];
#pragma unroll
  for (int j = 0; j < 32; ++j) total[j] = 0.0f;
  if (column < n) {
    const uint4* w4 = reinterpret_cast<const uint4*>(w);
    uint32_t p = begin;
    while (p < end) {
      const uint32_t block = p / block_size;
      const uint32_t segment_end = min(end, (block + 1) * block_size);
      float acc[32];
#pragma unroll
      for (int j = 0; j < 32; ++j) acc[j] = 0.0f;
      float x_sum = 0.0f;
      uint32_t index = (p * row_words + column / 8) / 4;  // uint4 index of (row p, column)
#pragma unroll 4
      for (; p < segment_end; ++p, index += row_words / 4) {
        const uint4 q = __ldg(w4 + index);
        const float xp = __ldg(x + p);
        x_sum += xp;
        accumulate_word(q.x, xp, acc);
        accumulate_word(q.y, xp, acc + 8);
        accumulate_word(q.z, xp, acc + 16);
        accumulate_word(q.w, xp, acc + 24);
      }
      // total += s * (acc * 16^-(j%4) - z * x_sum), four columns per float4 of sidecars.
      const uint32_t sidecar = block * n + column;
#pragma unroll
      for (int g = 0; g < 8; ++g) {
        const float4 s = __ldg(reinterpret_cast<const float4*>(scales + sidecar) + g);
        float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (kAsymmetric) z = __ldg(reinterpret_cast<const float4*>(zero_points + sidecar) + g);
        total[4 * g + 0] = fmaf(s.x, fmaf(-z.x, x_sum, acc[4 * g + 0]), total[4 * g + 0]);
        total[4 * g + 1] = fmaf(s.y, fmaf(-z.y, x_sum, acc[4 * g + 1] * 0.0625f), total[4 * g + 1]);
        total[4 * g + 2] = fmaf(s.z, fmaf(-z.z, x_sum, acc[4 * g + 2] * 0.00390625f), total[4 * g + 2]);
        total[4 * g + 3] = fmaf(s.w, fmaf(-z.w, x_sum, acc[4 * g + 3] * 0.000244140625f), total[4 * g + 3]);
      }
    }
  }

  // Partial sums [slot][column of the CTA] in shared memory.
  float4* partial = shared + (slot * columns_per_cta + strip * 32) / 4;
#pragma unroll
  for (int g = 0; g < 8; ++g)
    partial[g] = make_float4(total[4 * g], total[4 * g + 1], total[4 * g + 2], total[4 * g + 3]);
  __syncthreads();
  const float* partials = reinterpret_cast<const float*>(shared);
  if (blockDim.x < 2 * columns_per_cta) {
    // Few threads (short k): each sums every slot of its columns, in slot order.
    for (uint32_t c = tid; c < columns_per_cta; c += blockDim.x) {
      const uint32_t out_column = blockIdx.x * columns_per_cta + c;
      float result = 0.0f;
      for (uint32_t s = 0; s < slots; ++s) result += partials[s * columns_per_cta + c];
      if (out_column < n) out[out_column] = result;
    }
    return;
  }
  // Thread t sums a fixed slice of slots (part t / columns_per_cta) for column
  // t % columns_per_cta; then one thread per column adds the slices in order.
  const uint32_t parts = blockDim.x / columns_per_cta;  // >= 2, divides slots
  const uint32_t slots_per_part = slots / parts;
  const uint32_t my_column = tid % columns_per_cta;
  const uint32_t part = tid / columns_per_cta;
  float sum = 0.0f;
  for (uint32_t s = part * slots_per_part; s < (part + 1) * slots_per_part; ++s)
    sum += partials[s * columns_per_cta + my_column];
  __syncthreads();
  float* slice = reinterpret_cast<float*>(shared);
  slice[part * columns_per_cta + my_column] = sum;
  __syncthreads();
  if (tid < columns_per_cta) {
    const uint32_t out_column = blockIdx.x * columns_per_cta + tid;
    if (out_column < n) {
      float result = 0.0f;
      for (uint32_t i = 0; i < parts; ++i) result += slice[i * columns_per_cta + tid];
      out[out_column] = result;
    }
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256)
dequant_matmul_int4_expert_asymmetric(const float* __restrict__ x, const uint8_t* __restrict__ w,
                                      const float* __restrict__ scales, const float* __restrict__ zero_points,
                                      float* __restrict__ out, uint32_t k, uint32_t n, uint32_t block_size,
                                      uint32_t lanes_per_row_log2, uint32_t rows_per_slot) {
  gemv<true>(x, w, scales, zero_points, out, k, n, block_size, lanes_per_row_log2, rows_per_slot);
}

extern "C" __global__ void __launch_bounds__(256)
dequant_matmul_int4_expert_symmetric(const float* __restrict__ x, const uint8_t* __restrict__ w,
                                     const float* __restrict__ scales, float* __restrict__ out, uint32_t k,
                                     uint32_t n, uint32_t block_size, uint32_t lanes_per_row_log2,
                                     uint32_t rows_per_slot) {
  gemv<false>(x, w, scales, nullptr, out, k, n, block_size, lanes_per_row_log2, rows_per_slot);
}
