// Independent plain-C++ oracles for the quantize/dequantize INT4 and NF4 ops and for
// nf4_gemm and its transpose. They restate the definitions of ir/ops/Quantize.h directly on
// host vectors (std::nearbyint for round-half-to-even, brute-force nearest NF4 code)
// and share no code with the op constructors.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace quantc::tests::quantize_nf4 {

/// The seed's NF4_LOOKUP (oxicuda-dnn 0.1.7), copied independently as f64 values.
extern const std::array<double, 16> kSeedNf4Lookup;

struct Quantized {
  std::vector<std::uint8_t> packed;  // ceil(n/2) bytes, low nibble = even element
  std::vector<float> scale;          // one per group
  std::vector<float> zero_point;     // asymmetric INT4 only
};

/// The 4-bit code of element i of `packed`.
unsigned code_at(const std::vector<std::uint8_t>& packed, std::size_t i);

Quantized quantize_int4(const std::vector<float>& x, std::uint32_t group_size, bool symmetric);
std::vector<float> dequantize_int4(const Quantized& q, std::size_t n, std::uint32_t group_size, bool symmetric);

/// The nearest NF4 code of a normalized value by brute force over all 16 codes
/// (ties to the lower code), NaN -> 7, +inf -> 15, -inf -> 0.
unsigned nearest_nf4_code(float normalized);
Quantized quantize_nf4(const std::vector<float>& x, std::uint32_t group_size);
std::vector<float> dequantize_nf4(const Quantized& q, std::size_t n, std::uint32_t group_size);

/// NF4 weight B (k x n) in the nf4_gemm layout: bytes and per-block scales.
struct Nf4Matrix {
  std::uint32_t k = 0, n = 0;
  std::vector<std::uint8_t> bytes;  // n*k/2
  std::vector<float> scales;        // n*k/64
  bool fp4 = false;                 // bitsandbytes' FP4 code book instead of NF4
  float at(std::uint32_t row, std::uint32_t column) const;  // dequantized B[row, column]
};

/// Quantizes a row-major k x n matrix (element r*n + c) into the nf4_gemm layout.
Nf4Matrix quantize_nf4_matrix(const std::vector<float>& b, std::uint32_t k, std::uint32_t n);
/// Random codes and scales in [0.5, 2) (the layout does not need a source matrix).
Nf4Matrix random_nf4_matrix(std::uint32_t k, std::uint32_t n, std::uint64_t seed);

/// C[m,n] = A[m,k] @ dequant(B): f64 accumulation over k ascending, one rounding to f32
/// at the end (use_f64) or f32 fma accumulation.
std::vector<float> nf4_gemm(const std::vector<float>& a, const Nf4Matrix& b, std::uint32_t m, bool use_f64 = true);
/// C[m,k] = A[m,n] @ dequant(B)^T with f64 accumulation over n ascending.
std::vector<float> nf4_gemm_transpose(const std::vector<float>& a, const Nf4Matrix& b, std::uint32_t m);
/// The seed's parity reference: plain f32 a*w products summed in f32.
std::vector<float> naive_gemm_f32(const std::vector<float>& a, const std::vector<float>& b_row_major,
                                  std::uint32_t m, std::uint32_t k, std::uint32_t n);
/// f64 matmul of f32 inputs (B row-major k x n), as f64.
std::vector<double> matmul_f64(const std::vector<float>& a, const std::vector<float>& b_row_major, std::uint32_t m,
                               std::uint32_t k, std::uint32_t n);

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float low = -1.0f, float high = 1.0f);

}  // namespace quantc::tests::quantize_nf4
