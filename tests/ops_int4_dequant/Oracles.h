// Plain-C++ oracles for the packed INT4 and dequant-matmul ops, written from the seeds
// and the format specifications, sharing no code with the op constructors.
#pragma once

#include <cstdint>
#include <vector>

namespace quantc::tests {

// --- packed signed INT4 (vyre-libs 0.6.2 quant::int4) -------------------------------

/// Value i (0..7) of a packed word as a signed integer -8..7 (two's complement nibble).
int int4_value(std::uint32_t word, unsigned i);
/// Packs values -8..7, value c into nibble c%8 of word c/8; padding nibbles are 0.
std::vector<std::uint32_t> pack_int4(const std::vector<int>& values);
/// Packs each row to ceil(cols/8) words (zero padding) and concatenates the rows.
std::vector<std::uint32_t> pack_int4_rows(const std::vector<std::vector<int>>& rows);
/// Row `row` of a packed matrix as integers (ignores padding nibbles).
std::vector<int> unpack_int4_row(const std::vector<std::uint32_t>& words, std::uint32_t row, std::uint32_t cols);

/// sum lhs[i]*rhs[i] over `count` values starting at word offsets, wrapping like i32.
std::int32_t int4_dot(const std::vector<std::uint32_t>& lhs, std::uint32_t lhs_word_offset,
                      const std::vector<std::uint32_t>& rhs, std::uint32_t rhs_word_offset, std::uint32_t count);

/// The documented f32 order of the row-per-subgroup kernels: word w's products go to
/// lane w % 32's partial (increasing column order), then butterfly 16, 8, 4, 2, 1;
/// returns lane 0's sum. `terms[c]` are the already rounded products of column c.
float subgroup_order_sum(const std::vector<float>& terms);

/// out[b*rows + r] = row_scales[r] * sum_c w[r][c] * x[b*cols + c] in the documented order.
std::vector<float> int4_batched_matvec(const std::vector<std::uint32_t>& weights, const std::vector<float>& x,
                                       const std::vector<float>& row_scales, std::uint32_t batch, std::uint32_t rows,
                                       std::uint32_t cols);
/// The same sum in double precision, sequential, plus the sum of |terms| * |scale| for
/// error bounds.
struct ExactMatvec {
  std::vector<double> value, magnitude;
};
ExactMatvec int4_batched_matvec_exact(const std::vector<std::uint32_t>& weights, const std::vector<float>& x,
                                      const std::vector<float>& row_scales, std::uint32_t batch, std::uint32_t rows,
                                      std::uint32_t cols);

/// out[b*rows + r] = (f32(dot(w[r], a[b])) * row_scales[r]) * batch_scales[b].
std::vector<float> int4_batched_matmul(const std::vector<std::uint32_t>& weights,
                                       const std::vector<std::uint32_t>& activations,
                                       const std::vector<float>& row_scales, const std::vector<float>& batch_scales,
                                       std::uint32_t batch, std::uint32_t rows, std::uint32_t cols);

/// First `batch` entries: the best score per batch; next `batch`: its row as f32.
/// Numbers beat NaN, higher beats lower, ties (and all-NaN) go to the lowest row.
std::vector<float> int4_batched_matmul_top1(const std::vector<std::uint32_t>& weights,
                                            const std::vector<std::uint32_t>& activations,
                                            const std::vector<float>& row_scales,
                                            const std::vector<float>& batch_scales, std::uint32_t batch,
                                            std::uint32_t rows, std::uint32_t cols);

// --- FP8 / FP4 decoding from the specifications ----------------------------------

/// OCP 8-bit floating point, E4M3 (bias 7, no infinities, S.1111.111 = NaN).
float fp8_e4m3_spec(std::uint8_t code);
/// OCP 8-bit floating point, E5M2 (bias 15, IEEE-like infinities and NaNs).
float fp8_e5m2_spec(std::uint8_t code);
/// The RLX seed's E4M3 decoder, transcribed (exponent 15 = inf/NaN): kept to show
/// exactly where the seed deviates from the standard.
float fp8_e4m3_seed(std::uint8_t code);
/// FP4 E2M1 (sign, 2 exponent bits with bias 1, 1 mantissa bit; no inf/NaN).
float fp4_e2m1_spec(std::uint8_t code);

// --- dequant matmul (RLX thunk.rs), loops transcribed from the seed ----------------

std::vector<float> dequant_matmul_int8(const std::vector<float>& x, const std::vector<std::int8_t>& w,
                                       const std::vector<float>& scales, const std::vector<float>& zero_points,
                                       std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                                       bool asymmetric);
std::vector<float> dequant_matmul_int4(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                       const std::vector<float>& scales, const std::vector<float>& zero_points,
                                       std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                                       bool asymmetric);
/// The offset mode (BlockAffineMode::Offset, ggml's Q4_1 form): w = code * s + o, the
/// product rounded before the add, in the same sequential loop.
std::vector<float> dequant_matmul_int8_offset(const std::vector<float>& x, const std::vector<std::int8_t>& w,
                                              const std::vector<float>& scales, const std::vector<float>& offsets,
                                              std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                              std::uint32_t block_size);
std::vector<float> dequant_matmul_int4_offset(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                              const std::vector<float>& scales, const std::vector<float>& offsets,
                                              std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                              std::uint32_t block_size);
std::vector<float> dequant_matmul_fp8(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                      const std::vector<float>& scales, std::uint32_t m, std::uint32_t k,
                                      std::uint32_t n, bool e5m2);
std::vector<float> dequant_matmul_nvfp4(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                        const std::vector<std::uint8_t>& scales, float global_scale, std::uint32_t m,
                                        std::uint32_t k, std::uint32_t n);

}  // namespace quantc::tests
