#include "Oracles.h"

#include <array>
#include <cmath>
#include <limits>

namespace quantc::tests {

int int4_value(std::uint32_t word, unsigned i) {
  int code = static_cast<int>((word >> (4 * i)) & 0xFu);
  return code >= 8 ? code - 16 : code;
}

std::vector<std::uint32_t> pack_int4(const std::vector<int>& values) {
  std::vector<std::uint32_t> words((values.size() + 7) / 8, 0);
  for (std::size_t c = 0; c < values.size(); ++c) {
    std::uint32_t code = static_cast<std::uint32_t>(values[c]) & 0xFu;
    words[c / 8] |= code << (4 * (c % 8));
  }
  return words;
}

std::vector<std::uint32_t> pack_int4_rows(const std::vector<std::vector<int>>& rows) {
  std::vector<std::uint32_t> words;
  for (const auto& row : rows) {
    std::vector<std::uint32_t> packed = pack_int4(row);
    words.insert(words.end(), packed.begin(), packed.end());
  }
  return words;
}

std::vector<int> unpack_int4_row(const std::vector<std::uint32_t>& words, std::uint32_t row, std::uint32_t cols) {
  const std::uint32_t words_per_row = (cols + 7) / 8;
  std::vector<int> values(cols);
  for (std::uint32_t c = 0; c < cols; ++c) values[c] = int4_value(words[row * words_per_row + c / 8], c % 8);
  return values;
}

std::int32_t int4_dot(const std::vector<std::uint32_t>& lhs, std::uint32_t lhs_word_offset,
                      const std::vector<std::uint32_t>& rhs, std::uint32_t rhs_word_offset, std::uint32_t count) {
  std::uint32_t sum = 0;  // unsigned: wraps modulo 2^32 like the kernel's i32 adds
  for (std::uint32_t c = 0; c < count; ++c) {
    int product = int4_value(lhs[lhs_word_offset + c / 8], c % 8) * int4_value(rhs[rhs_word_offset + c / 8], c % 8);
    sum += static_cast<std::uint32_t>(product);
  }
  return static_cast<std::int32_t>(sum);
}

float subgroup_order_sum(const std::vector<float>& terms) {
  std::array<float, 32> partial{};
  for (std::size_t c = 0; c < terms.size(); ++c) partial[(c / 8) % 32] += terms[c];
  for (unsigned offset = 16; offset >= 1; offset /= 2) {
    std::array<float, 32> next{};
    for (unsigned lane = 0; lane < 32; ++lane) next[lane] = partial[lane] + partial[lane ^ offset];
    partial = next;
  }
  return partial[0];
}

std::vector<float> int4_batched_matvec(const std::vector<std::uint32_t>& weights, const std::vector<float>& x,
                                       const std::vector<float>& row_scales, std::uint32_t batch, std::uint32_t rows,
                                       std::uint32_t cols) {
  std::vector<float> out(std::size_t{batch} * rows);
  for (std::uint32_t r = 0; r < rows; ++r) {
    std::vector<int> w = unpack_int4_row(weights, r, cols);
    for (std::uint32_t b = 0; b < batch; ++b) {
      std::vector<float> terms(cols);
      for (std::uint32_t c = 0; c < cols; ++c) terms[c] = static_cast<float>(w[c]) * x[std::size_t{b} * cols + c];
      out[std::size_t{b} * rows + r] = row_scales[r] * subgroup_order_sum(terms);
    }
  }
  return out;
}

ExactMatvec int4_batched_matvec_exact(const std::vector<std::uint32_t>& weights, const std::vector<float>& x,
                                      const std::vector<float>& row_scales, std::uint32_t batch, std::uint32_t rows,
                                      std::uint32_t cols) {
  ExactMatvec result{std::vector<double>(std::size_t{batch} * rows), std::vector<double>(std::size_t{batch} * rows)};
  for (std::uint32_t r = 0; r < rows; ++r) {
    std::vector<int> w = unpack_int4_row(weights, r, cols);
    for (std::uint32_t b = 0; b < batch; ++b) {
      double sum = 0, magnitude = 0;
      for (std::uint32_t c = 0; c < cols; ++c) {
        double term = double(w[c]) * double(x[std::size_t{b} * cols + c]);
        sum += term;
        magnitude += std::fabs(term);
      }
      result.value[std::size_t{b} * rows + r] = sum * row_scales[r];
      result.magnitude[std::size_t{b} * rows + r] = magnitude * std::fabs(double(row_scales[r]));
    }
  }
  return result;
}

std::vector<float> int4_batched_matmul(const std::vector<std::uint32_t>& weights,
                                       const std::vector<std::uint32_t>& activations,
                                       const std::vector<float>& row_scales, const std::vector<float>& batch_scales,
                                       std::uint32_t batch, std::uint32_t rows, std::uint32_t cols) {
  const std::uint32_t words_per_row = (cols + 7) / 8;
  std::vector<float> out(std::size_t{batch} * rows);
  for (std::uint32_t b = 0; b < batch; ++b) {
    for (std::uint32_t r = 0; r < rows; ++r) {
      std::int32_t dot = int4_dot(weights, r * words_per_row, activations, b * words_per_row, cols);
      out[std::size_t{b} * rows + r] = (static_cast<float>(dot) * row_scales[r]) * batch_scales[b];
    }
  }
  return out;
}

std::vector<float> int4_batched_matmul_top1(const std::vector<std::uint32_t>& weights,
                                            const std::vector<std::uint32_t>& activations,
                                            const std::vector<float>& row_scales,
                                            const std::vector<float>& batch_scales, std::uint32_t batch,
                                            std::uint32_t rows, std::uint32_t cols) {
  std::vector<float> scores = int4_batched_matmul(weights, activations, row_scales, batch_scales, batch, rows, cols);
  std::vector<float> out(2 * std::size_t{batch});
  for (std::uint32_t b = 0; b < batch; ++b) {
    std::uint32_t best = 0;
    for (std::uint32_t r = 1; r < rows; ++r) {
      float candidate = scores[std::size_t{b} * rows + r];
      float incumbent = scores[std::size_t{b} * rows + best];
      // Scanning rows upward, a strict improvement is needed to move: ties keep the lower row.
      if (std::isnan(candidate)) continue;
      if (std::isnan(incumbent) || candidate > incumbent) best = r;
    }
    out[b] = scores[std::size_t{b} * rows + best];
    out[batch + b] = static_cast<float>(best);
  }
  return out;
}

float fp8_e4m3_spec(std::uint8_t code) {
  const float sign = (code & 0x80) ? -1.0f : 1.0f;
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(float(mantissa) / 8.0f, 1 - 7);
  return sign * std::ldexp(1.0f + float(mantissa) / 8.0f, exponent - 7);
}

float fp8_e5m2_spec(std::uint8_t code) {
  const float sign = (code & 0x80) ? -1.0f : 1.0f;
  const int exponent = (code >> 2) & 0x1F;
  const int mantissa = code & 0x3;
  if (exponent == 0x1F) return mantissa == 0 ? sign * std::numeric_limits<float>::infinity()
                                             : std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(float(mantissa) / 4.0f, 1 - 15);
  return sign * std::ldexp(1.0f + float(mantissa) / 4.0f, exponent - 15);
}

float fp8_e4m3_seed(std::uint8_t b) {
  const float sign = (b & 0x80) ? -1.0f : 1.0f;
  const int exp = (b >> 3) & 0x0F;
  const int mant = b & 0x07;
  if (exp == 0) return mant == 0 ? 0.0f : sign * float(mant) * std::ldexp(1.0f, -9);
  if (exp == 0x0F) return mant == 0 ? sign * std::numeric_limits<float>::infinity()
                                    : std::numeric_limits<float>::quiet_NaN();
  return sign * (1.0f + float(mant) / 8.0f) * std::ldexp(1.0f, exp - 7);
}

float fp4_e2m1_spec(std::uint8_t code) {
  const float sign = (code & 0x8) ? -1.0f : 1.0f;
  const int exponent = (code >> 1) & 0x3;
  const int mantissa = code & 0x1;
  if (exponent == 0) return sign * (float(mantissa) / 2.0f);  // subnormal: 2^(1-1) * 0.m
  return sign * std::ldexp(1.0f + float(mantissa) / 2.0f, exponent - 1);
}

namespace {
std::uint32_t nibble_at(const std::vector<std::uint8_t>& bytes, std::size_t element) {
  std::uint8_t byte = bytes[element / 2];
  return (element & 1) == 0 ? (byte & 0x0F) : (byte >> 4);
}
}  // namespace

namespace {
/// RLX's blocked affine dequant-matmul loop, sequential in p (the ops' documented order);
/// `code(p, j)` is the stored integer code of W[p, j] as f32. With `offset`, `zero_points`
/// holds the offsets o and the weight is ggml's Q4_1 form code * s + o (the product
/// rounded, then the sum) instead of RLX's (code - z) * s.
template <class Code>
std::vector<float> blocked_dequant_matmul(const std::vector<float>& x, const Code& code,
                                          const std::vector<float>& scales, const std::vector<float>& zero_points,
                                          std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                          std::uint32_t block_size, bool asymmetric, bool offset = false) {
  std::vector<float> out(std::size_t{m} * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t p = 0; p < k; ++p) {
        std::size_t block = p / block_size;
        float s = scales[block * n + j];
        float z = asymmetric ? zero_points[block * n + j] : 0.0f;
        float dequantized = offset ? code(p, j) * s + zero_points[block * n + j] : (code(p, j) - z) * s;
        acc += x[i * k + p] * dequantized;
      }
      out[i * n + j] = acc;
    }
  }
  return out;
}
}  // namespace

std::vector<float> dequant_matmul_int8(const std::vector<float>& x, const std::vector<std::int8_t>& w,
                                       const std::vector<float>& scales, const std::vector<float>& zero_points,
                                       std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                                       bool asymmetric) {
  auto code = [&](std::size_t p, std::size_t j) { return static_cast<float>(w[p * n + j]); };
  return blocked_dequant_matmul(x, code, scales, zero_points, m, k, n, block_size, asymmetric);
}

std::vector<float> dequant_matmul_int4(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                       const std::vector<float>& scales, const std::vector<float>& zero_points,
                                       std::uint32_t m, std::uint32_t k, std::uint32_t n, std::uint32_t block_size,
                                       bool asymmetric) {
  auto code = [&](std::size_t p, std::size_t j) { return static_cast<float>(nibble_at(w, p * n + j)); };
  return blocked_dequant_matmul(x, code, scales, zero_points, m, k, n, block_size, asymmetric);
}

std::vector<float> dequant_matmul_int8_offset(const std::vector<float>& x, const std::vector<std::int8_t>& w,
                                              const std::vector<float>& scales, const std::vector<float>& offsets,
                                              std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                              std::uint32_t block_size) {
  auto code = [&](std::size_t p, std::size_t j) { return static_cast<float>(w[p * n + j]); };
  return blocked_dequant_matmul(x, code, scales, offsets, m, k, n, block_size, false, true);
}

std::vector<float> dequant_matmul_int4_offset(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                              const std::vector<float>& scales, const std::vector<float>& offsets,
                                              std::uint32_t m, std::uint32_t k, std::uint32_t n,
                                              std::uint32_t block_size) {
  auto code = [&](std::size_t p, std::size_t j) { return static_cast<float>(nibble_at(w, p * n + j)); };
  return blocked_dequant_matmul(x, code, scales, offsets, m, k, n, block_size, false, true);
}

std::vector<float> dequant_matmul_fp8(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                      const std::vector<float>& scales, std::uint32_t m, std::uint32_t k,
                                      std::uint32_t n, bool e5m2) {
  std::vector<float> out(std::size_t{m} * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t p = 0; p < k; ++p) {
        float weight = e5m2 ? fp8_e5m2_spec(w[p * n + j]) : fp8_e4m3_spec(w[p * n + j]);
        acc += x[i * k + p] * weight * scales[j];
      }
      out[i * n + j] = acc;
    }
  }
  return out;
}

std::vector<float> dequant_matmul_nvfp4(const std::vector<float>& x, const std::vector<std::uint8_t>& w,
                                        const std::vector<std::uint8_t>& scales, float global_scale, std::uint32_t m,
                                        std::uint32_t k, std::uint32_t n) {
  constexpr std::size_t kGroup = 16;
  std::vector<float> out(std::size_t{m} * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t p = 0; p < k; ++p) {
        float scale = fp8_e4m3_spec(scales[(p / kGroup) * n + j]);
        float weight = fp4_e2m1_spec(static_cast<std::uint8_t>(nibble_at(w, p * n + j))) * scale * global_scale;
        acc += x[i * k + p] * weight;
      }
      out[i * n + j] = acc;
    }
  }
  return out;
}

}  // namespace quantc::tests
