// Expert batch-1 baselines for quantc's `nf4_gemm` at m = 1 (bitsandbytes-style NF4 with one
// f32 absmax per block of 64 k per column):
//
//   c[col] = sum_k a[k] * (NF4[code(k, col)] * absmax[col, k/64])
//
// Two entries, one per accumulation mode of the op (ir/ops/Nf4Gemm.h):
//   nf4_gemv_expert_f64  the op's default, `accumulate: "f64"`: each dequantized weight is
//                        rounded to f32 exactly as the reference rounds it (NF4 value times
//                        absmax, one f32 multiply), each term a*w is formed exactly in f64
//                        and summed in f64; the sum rounds to f32 once. Only the order of the
//                        f64 additions differs from the reference.
//   nf4_gemv_expert_f32  `accumulate: "f32"`: f32 FMAs with absmax factored out of each
//                        32-element half block, c = sum_blocks absmax * sum a*NF4[code].
//
// Buffers, exactly quantc's at m = 1, in the same order:
//   a        f32[k]
//   b_nf4    u32[n*k/8]: column col's block j (k = 64j .. 64j+63) is the 32 bytes at byte
//            (col*(k/64) + j)*32, k = 64j + 2t in the low nibble of byte t, 64j + 2t + 1 in
//            the high nibble (column-major block order: k fastest within a column; low
//            nibble first, where bitsandbytes packs the high nibble first)
//   b_scales f32[n*k/64], element col*(k/64) + j (the absmax)
//   c        f32[n]
// Precondition: k % 64 == 0 (the op's own rule).
//
// Launch: blockDim.x = a multiple of 32, at most 256; each group of L = 2^lanes_per_column_log2
// lanes (L <= 32) owns two adjacent columns, so a CTA owns 2*blockDim.x/L columns and
// gridDim.x = ceil(n / (2*blockDim.x/L)); dynamic shared memory 4.5*k bytes (f32 entry) or
// 8.5*k bytes (f64 entry) for the staged, padded activations.
//
// How, and where the techniques come from (read, not copied):
//  - bitsandbytes' `kgemm_4bit_inference_naive` (csrc/kernels.cu): lanes split the k of a
//    column, each lane loads 16 bytes (32 codes, half an NF4 block) per `ld.global.nc.v4`,
//    the 16-entry code book sits in shared memory (16 f32 in 16 distinct banks: any lookup
//    pattern is conflict-free), the absmax is applied per block, a warp reduction finishes.
//  - Several outputs per warp (llama.cpp MMVQ's rows per CTA, ggml-cuda/mmvq.cu; TensorRT-LLM
//    weightOnlyBatchedGemv's CtaN columns per thread): L lanes per column pair instead of a
//    whole warp per column, so short columns (k = 384: 12 loads of 16 bytes) still use every
//    lane; each lane reuses its activations for both columns of the pair.
//  - Code -> shared address in two instructions: a shift puts the nibble at bits 2..5 and
//    one `lop3` masks it and ORs in the table's (64-byte aligned) shared address; then one
//    `ld.shared.f32`. The activations are staged once per CTA in shared memory (f32 or,
//    for the f64 entry, already converted to f64) and read as `ld.shared.v4.f32` /
//    `ld.shared.v2.f64`; a lane's 32 activations are 128 (256) contiguous bytes, so 16
//    bytes of padding after each such run spread the 8 lanes of a 16-byte access phase
//    over distinct banks (unpadded, they would all hit the same 4 banks).
//  - Deterministic: butterfly `shfl.sync.bfly` over the L lanes of a column, no atomics.
//  - 32-bit index math; the 8 codes of a word are unrolled.
// Cost per weight: 4 instructions in the f32 entry (shift, lop3, ld.shared, fma) and 6 in
// the f64 entry (the f32 multiply by absmax that the reference rounds, cvt.f64.f32, fma.f64),
// so the f64 entry is issue-bound in the roofline model (and, on an H100, bound by FP64 and
// f32->f64 conversion throughput). A 256-entry table of code pairs (one lookup per byte)
// would halve the lookup instructions, but random 8-byte lookups into 2 KiB conflict in
// shared-memory banks on hardware, which the emulator does not model; the 16-entry table
// never conflicts.
#include <cstdint>

namespace {

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Shared address of code book entry `code`, where `shifted` holds the code at bits 2..5:
// (shifted & 0x3C) | base, one lop3 (base is 64-byte aligned).
__device__ __forceinline__ uint32_t entry_address(uint32_t shifted, uint32_t base) {
  uint32_t address;
  asm("lop3.b32 %0, %1, 0x3C, %2, 0xEA;" : "=r"(address) : "r"(shifted), "r"(base));
  return address;
}

// volatile: the compiler sees no memory operand, so only this keeps the load after the
// __syncthreads() that publishes the code book.
__device__ __forceinline__ float load_shared_f32(uint32_t address) {
  float value;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(value) : "r"(address));
  return value;
}

// The NF4 value of code p (0..7) of `word`, from the code book at shared address `base`.
template <int kPosition>
__device__ __forceinline__ float lookup(uint32_t word, uint32_t base) {
  const uint32_t shifted = kPosition == 0 ? word << 2 : word >> (4 * kPosition - 2);
  return load_shared_f32(entry_address(shifted, base));
}

// The NF4 code book (quantc's ir/ops/Quantize.cpp kNf4Table, the QLoRA values), written
// into shared memory by the first 4 threads as one float4 each: the emulator runs no
// .const/.global initializers, and a kernel argument would change the op's buffer list.
__device__ __forceinline__ void write_code_book(float* table) {
  const uint32_t tid = threadIdx.x;
  float4* rows = reinterpret_cast<float4*>(table);
  if (tid == 0) rows[0] = make_float4(-1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f);
  if (tid == 1) rows[1] = make_float4(-0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f);
  if (tid == 2) rows[2] = make_float4(0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f,
                                      0.33791524171829224f);
  if (tid == 3) rows[3] = make_float4(0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f);
}

struct Mapping {
  uint32_t lane_in_column;  // 0 .. L-1: which of the column's 16-byte chunks, modulo L
  uint32_t column;          // first column of the pair
  uint32_t second;          // column + 1, or column when that is past n (loaded, never stored)
  bool first_valid, second_valid;
};

__device__ __forceinline__ Mapping map_threads(uint32_t n, uint32_t lanes_per_column_log2) {
  Mapping m;
  const uint32_t tid = threadIdx.x;
  const uint32_t columns_per_cta = (2 * blockDim.x) >> lanes_per_column_log2;
  m.lane_in_column = tid & ((1u << lanes_per_column_log2) - 1);
  m.column = blockIdx.x * columns_per_cta + 2 * (tid >> lanes_per_column_log2);
  m.first_valid = m.column < n;
  m.second_valid = m.column + 1 < n;
  m.second = m.second_valid ? m.column + 1 : m.column;
  return m;
}

// f32: the two columns' sums of a[k] * NF4[code] over the 8 codes of words w0, w1 (same k:
// 8 consecutive activations at xs, loaded once for both columns).
__device__ __forceinline__ void dot_words_f32(uint32_t w0, uint32_t w1, const float4* xs, uint32_t base, float& acc0,
                                              float& acc1) {
  const float4 xa = xs[0], xb = xs[1];
  acc0 = fmaf(xa.x, lookup<0>(w0, base), acc0);
  acc1 = fmaf(xa.x, lookup<0>(w1, base), acc1);
  acc0 = fmaf(xa.y, lookup<1>(w0, base), acc0);
  acc1 = fmaf(xa.y, lookup<1>(w1, base), acc1);
  acc0 = fmaf(xa.z, lookup<2>(w0, base), acc0);
  acc1 = fmaf(xa.z, lookup<2>(w1, base), acc1);
  acc0 = fmaf(xa.w, lookup<3>(w0, base), acc0);
  acc1 = fmaf(xa.w, lookup<3>(w1, base), acc1);
  acc0 = fmaf(xb.x, lookup<4>(w0, base), acc0);
  acc1 = fmaf(xb.x, lookup<4>(w1, base), acc1);
  acc0 = fmaf(xb.y, lookup<5>(w0, base), acc0);
  acc1 = fmaf(xb.y, lookup<5>(w1, base), acc1);
  acc0 = fmaf(xb.z, lookup<6>(w0, base), acc0);
  acc1 = fmaf(xb.z, lookup<6>(w1, base), acc1);
  acc0 = fmaf(xb.w, lookup<7>(w0, base), acc0);
  acc1 = fmaf(xb.w, lookup<7>(w1, base), acc1);
}

// f64: acc + f64(x) * f64(f32(NF4[code] * absmax)); the product is exact in f64.
template <int kPosition>
__device__ __forceinline__ double term_f64(double x, uint32_t word, uint32_t base, float absmax, double acc) {
  const float weight = __fmul_rn(lookup<kPosition>(word, base), absmax);  // the reference's f32 rounding
  return fma(x, static_cast<double>(weight), acc);
}

template <int kFirst>
__device__ __forceinline__ void terms_f64(double2 x, uint32_t w0, uint32_t w1, uint32_t base, float s0, float s1,
                                          double& acc0, double& acc1) {
  acc0 = term_f64<kFirst>(x.x, w0, base, s0, acc0);
  acc1 = term_f64<kFirst>(x.x, w1, base, s1, acc1);
  acc0 = term_f64<kFirst + 1>(x.y, w0, base, s0, acc0);
  acc1 = term_f64<kFirst + 1>(x.y, w1, base, s1, acc1);
}

__device__ __forceinline__ void dot_words_f64(uint32_t w0, uint32_t w1, const double2* xs, uint32_t base, float s0,
                                              float s1, double& acc0, double& acc1) {
  terms_f64<0>(xs[0], w0, w1, base, s0, s1, acc0, acc1);
  terms_f64<2>(xs[1], w0, w1, base, s0, s1, acc0, acc1);
  terms_f64<4>(xs[2], w0, w1, base, s0, s1, acc0, acc1);
  terms_f64<6>(xs[3], w0, w1, base, s0, s1, acc0, acc1);
}

__device__ __forceinline__ uint4 load_chunk(const uint32_t* b_nf4, uint32_t word_index) {
  return __ldg(reinterpret_cast<const uint4*>(b_nf4 + word_index));
}

}  // namespace

extern "C" __global__ void __launch_bounds__(256)
nf4_gemv_expert_f32(const float* __restrict__ a, const uint32_t* __restrict__ b_nf4,
                    const float* __restrict__ b_scales, float* __restrict__ c, uint32_t n, uint32_t k,
                    uint32_t lanes_per_column_log2) {
  __shared__ __align__(64) float table[16];
  extern __shared__ float4 xs[];  // a: k/4 float4, one float4 of padding after every 8
  write_code_book(table);
  for (uint32_t i = threadIdx.x; i < k / 4; i += blockDim.x) {
    xs[i + i / 8] = __ldg(reinterpret_cast<const float4*>(a) + i);
  }
  __syncthreads();

  const Mapping m = map_threads(n, lanes_per_column_log2);
  const uint32_t base = shared_address(table);
  const uint32_t chunks = k / 32;          // 16-byte chunks (half blocks) per column
  const uint32_t words_per_column = k / 8;
  const uint32_t blocks_per_column = k / 64;
  const uint32_t lanes = 1u << lanes_per_column_log2;
  float acc0 = 0.0f, acc1 = 0.0f;
  if (m.first_valid) {
    for (uint32_t chunk = m.lane_in_column; chunk < chunks; chunk += lanes) {
      const float4* x = xs + chunk * 9;
      const uint4 q0 = load_chunk(b_nf4, m.column * words_per_column + chunk * 4);
      const uint4 q1 = load_chunk(b_nf4, m.second * words_per_column + chunk * 4);
      const float s0 = __ldg(b_scales + m.column * blocks_per_column + chunk / 2);
      const float s1 = __ldg(b_scales + m.second * blocks_per_column + chunk / 2);
      float sum0 = 0.0f, sum1 = 0.0f;
      dot_words_f32(q0.x, q1.x, x, base, sum0, sum1);
      dot_words_f32(q0.y, q1.y, x + 2, base, sum0, sum1);
      dot_words_f32(q0.z, q1.z, x + 4, base, sum0, sum1);
      dot_words_f32(q0.w, q1.w, x + 6, base, sum0, sum1);
      acc0 = fmaf(s0, sum0, acc0);
      acc1 = fmaf(s1, sum1, acc1);
    }
  }
  for (uint32_t mask = lanes / 2; mask >= 1; mask >>= 1) {
    acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, mask);
    acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, mask);
  }
  if (m.lane_in_column == 0) {
    if (m.first_valid) c[m.column] = acc0;
    if (m.second_valid) c[m.column + 1] = acc1;
  }
}

extern "C" __global__ void __launch_bounds__(256)
nf4_gemv_expert_f64(const float* __restrict__ a, const uint32_t* __restrict__ b_nf4,
                    const float* __restrict__ b_scales, float* __restrict__ c, uint32_t n, uint32_t k,
                    uint32_t lanes_per_column_log2) {
  __shared__ __align__(64) float table[16];
  extern __shared__ double2 xd[];  // f64(a): k/2 double2, one double2 of padding after every 16
  write_code_book(table);
  for (uint32_t i = threadIdx.x; i < k / 2; i += blockDim.x) {
    const float2 v = __ldg(reinterpret_cast<const float2*>(a) + i);
    xd[i + i / 16] = make_double2(v.x, v.y);
  }
  __syncthreads();

  const Mapping m = map_threads(n, lanes_per_column_log2);
  const uint32_t base = shared_address(table);
  const uint32_t chunks = k / 32;
  const uint32_t words_per_column = k / 8;
  const uint32_t blocks_per_column = k / 64;
  const uint32_t lanes = 1u << lanes_per_column_log2;
  double acc0 = 0.0, acc1 = 0.0;
  if (m.first_valid) {
    for (uint32_t chunk = m.lane_in_column; chunk < chunks; chunk += lanes) {
      const double2* x = xd + chunk * 17;
      const uint4 q0 = load_chunk(b_nf4, m.column * words_per_column + chunk * 4);
      const uint4 q1 = load_chunk(b_nf4, m.second * words_per_column + chunk * 4);
      const float s0 = __ldg(b_scales + m.column * blocks_per_column + chunk / 2);
      const float s1 = __ldg(b_scales + m.second * blocks_per_column + chunk / 2);
      dot_words_f64(q0.x, q1.x, x, base, s0, s1, acc0, acc1);
      dot_words_f64(q0.y, q1.y, x + 4, base, s0, s1, acc0, acc1);
      dot_words_f64(q0.z, q1.z, x + 8, base, s0, s1, acc0, acc1);
      dot_words_f64(q0.w, q1.w, x + 12, base, s0, s1, acc0, acc1);
    }
  }
  for (uint32_t mask = lanes / 2; mask >= 1; mask >>= 1) {
    acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, mask);
    acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, mask);
  }
  if (m.lane_in_column == 0) {
    if (m.first_valid) c[m.column] = static_cast<float>(acc0);
    if (m.second_valid) c[m.column + 1] = static_cast<float>(acc1);
  }
}
