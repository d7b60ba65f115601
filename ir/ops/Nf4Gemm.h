// Fused NF4-dequantize GEMMs: the weight matrix B stays 4-bit in memory and each code
// is dequantized in registers inside the dot product. Semantics and layout follow
// aprender-gpu 0.31.2 `Nf4GemmKernel` / `Nf4GemmTransposeKernel`
// (trueno#108, contract C-NF4-003).
//
// B layout (both ops): B is a k x n matrix of NF4 codes stored column by column in
// blocks of 64 consecutive k (k must be a multiple of 64; blocks_per_column = k/64).
// Block (column c, block j) covers B[64j .. 64j+63, c] and has index c*blocks_per_column
// + j ("column-major block order"):
// - b_scales f32[n * k/64]: element c*blocks_per_column + j is the block's scale;
// - b_nf4 u32[n * k/8]: the block's 32 bytes are bytes (c*blocks_per_column + j)*32 ..
//   +31, byte t holding row 64j+2t in its low nibble and 64j+2t+1 in its high nibble.
//   Read as little-endian u32 words (the layout is byte-identical to the seed's u8
//   buffer), word (c*blocks_per_column + j)*8 + w holds rows 64j+8w+p at bits 4p..4p+3.
//   This is exactly quantize_nf4's output for the column-major flattening of B
//   (element c*k + r) with group_size 64, so quantize_nf4 -> nf4_gemm composes.
// Dequantized B[r, c] = scale * kNf4Table[code] in f32 (one rounding), the code book
// held as an ir::Lookup constant (PTX: a 4-level, 15-selp tree; no shared or global
// memory for it).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/Program.h"
#include "ir/ops/Registry.h"

namespace quantc::ir::ops {

/// How nf4_gemm accumulates its dot products.
enum class Nf4Accumulation : std::uint8_t {
  /// f64 (the seed's GH-561 fix): each term f64(a) * f64(dequant) is exact in f64 and
  /// added with one f64 rounding (an f64 fma); the sum converts to f32 once, rounding
  /// to nearest even. Error: about one f32 rounding of the result.
  F64,
  /// f32 fma: acc = fma(a, dequant, acc) in f32. Faster on GPUs with slow f64, but the
  /// rounding error grows with k. Measured on k = 11008 (one row of A and 64 columns of
  /// B, both uniform in [-1, 1) and B quantized by quantize_nf4; test "nf4_gemm f32
  /// accumulation error on k = 11008"): max |C_f32 - exact| = 2.8e-4 against mean |C| =
  /// 25 (1.0e-7 of the row's sum of |terms|), versus 3.5e-6 for F64 (one f32 rounding of
  /// the result). Both stay well inside the seed's 1e-3 parity tolerance at this size; the
  /// f32 error grows roughly with sqrt(k) to k, F64's does not.
  F32,
};

/// C[m, n] = A[m, k] @ dequant(B_nf4[k, n]).
/// Buffers (bindings in order): a f32[m*k] row-major (k fastest), b_nf4 u32[n*k/8],
/// b_scales f32[n*k/64] (layout above; all read-only), c f32[m*n] row-major (n fastest,
/// read-write). Launch: 256-invocation workgroups along x over columns
/// (ceil(n/256) workgroups) and one workgroup row per output row (m along y); the
/// invocation (col, row) with col < n computes C[row, col], looping over blocks j, then
/// words w, then nibbles p, i.e. over k in ascending order, one accumulation each.
/// Errors (OpError): m, n or k == 0; k % 64 != 0 ("multiple of 64"); m > 65535 (the
/// CUDA grid-y limit); m*k, m*n or n*k/8 over 2^32-1 elements.
Program nf4_gemm(std::uint32_t m, std::uint32_t n, std::uint32_t k,
                 Nf4Accumulation accumulation = Nf4Accumulation::F64);

/// C[m, k] = A[m, n] @ dequant(B_nf4[k, n])^T, i.e. C[i, r] = sum_c A[i, c] * B[r, c]
/// (the backward pass through a frozen NF4 projection). Same B layout and buffers
/// a f32[m*n], b_nf4, b_scales, c f32[m*k] (row-major). Launch: x over the k output
/// columns (256 per workgroup, ceil(k/256) workgroups), y over the m rows; each
/// invocation loops over c = 0..n-1 ascending, accumulating in f64 as nf4_gemm F64
/// does (the seed's transpose kernel also accumulates in f64; unlike the seed, the code
/// book is a register Lookup rather than shared memory).
/// Errors (OpError): as nf4_gemm with m*n, m*k and n*k/8 checked.
Program nf4_gemm_transpose(std::uint32_t m, std::uint32_t n, std::uint32_t k);

/// Registry entries: nf4_gemm (parameter accumulate: "f64" | "f32"), nf4_gemm_transpose.
std::vector<OpInfo> nf4_gemm_ops();

}  // namespace quantc::ir::ops
