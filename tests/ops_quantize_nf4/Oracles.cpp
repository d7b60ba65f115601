#include "Oracles.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>

namespace quantc::tests::quantize_nf4 {

const std::array<double, 16> kSeedNf4Lookup = {
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
};

namespace {
constexpr float kEpsilon = 1e-12f;

float table(unsigned code) { return static_cast<float>(kSeedNf4Lookup[code]); }

/// bitsandbytes' FP4 values as its CUDA decode tree writes them (csrc/kernels.cu,
/// dDequantizeFP4Tree), code bit 3 the sign.
float bnb_fp4_table(unsigned code) {
  const std::array<float, 8> tree = {0.0f, 5.208333333e-03f, 0.66666667f, 1.0f, 0.33333333f, 0.5f, 0.16666667f, 0.25f};
  return code < 8 ? tree[code] : -tree[code - 8];
}

std::uint32_t group_count(std::size_t n, std::uint32_t group_size) {
  return static_cast<std::uint32_t>((n + group_size - 1) / group_size);
}

/// Finite elements of group g.
std::vector<float> finite_group(const std::vector<float>& x, std::uint32_t g, std::uint32_t group_size) {
  std::vector<float> values;
  std::size_t end = std::min<std::size_t>(x.size(), std::size_t{g + 1} * group_size);
  for (std::size_t i = std::size_t{g} * group_size; i < end; ++i) {
    if (std::isfinite(x[i])) values.push_back(x[i]);
  }
  return values;
}

float absmax(const std::vector<float>& values) {
  float result = 0.0f;
  for (float v : values) result = std::max(result, std::fabs(v));
  return result;
}

void pack(std::vector<std::uint8_t>& packed, std::size_t i, unsigned code) {
  packed[i / 2] = static_cast<std::uint8_t>(packed[i / 2] | (code << (4 * (i % 2))));
}

float clamp(float value, float low, float high) { return std::min(std::max(value, low), high); }
}  // namespace

unsigned code_at(const std::vector<std::uint8_t>& packed, std::size_t i) {
  return (packed[i / 2] >> (4 * (i % 2))) & 0xFu;
}

Quantized quantize_int4(const std::vector<float>& x, std::uint32_t group_size, bool symmetric) {
  Quantized q;
  q.packed.assign((x.size() + 1) / 2, 0);
  const std::uint32_t groups = group_count(x.size(), group_size);
  for (std::uint32_t g = 0; g < groups; ++g) {
    std::vector<float> finite = finite_group(x, g, group_size);
    float scale = 0.0f, zero = 0.0f;
    if (symmetric) {
      scale = std::max(absmax(finite), kEpsilon) / 7.0f;
    } else {
      float low = finite.empty() ? 0.0f : *std::min_element(finite.begin(), finite.end());
      float high = finite.empty() ? 0.0f : *std::max_element(finite.begin(), finite.end());
      float epsilon = std::max(kEpsilon, std::max(std::fabs(low), std::fabs(high)) * 0x1p-20f);
      float range = std::min(std::max(high - low, epsilon), std::numeric_limits<float>::max());
      scale = range / 15.0f;
      zero = std::nearbyint(-low / scale);
      if (zero == 0.0f) zero = 0.0f;  // +0, never -0
      q.zero_point.push_back(zero);
    }
    q.scale.push_back(scale);
    std::size_t end = std::min<std::size_t>(x.size(), std::size_t{g + 1} * group_size);
    for (std::size_t i = std::size_t{g} * group_size; i < end; ++i) {
      float v = x[i];
      unsigned code;
      if (symmetric) {
        code = std::isnan(v) ? 8u : static_cast<unsigned>(clamp(std::nearbyint(v / scale), -8.0f, 7.0f) + 8.0f);
      } else {
        code = std::isnan(v) ? static_cast<unsigned>(clamp(zero, 0.0f, 15.0f))
                             : static_cast<unsigned>(clamp(std::nearbyint(v / scale) + zero, 0.0f, 15.0f));
      }
      pack(q.packed, i, code);
    }
  }
  return q;
}

std::vector<float> dequantize_int4(const Quantized& q, std::size_t n, std::uint32_t group_size, bool symmetric) {
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t g = i / group_size;
    float offset = symmetric ? 8.0f : q.zero_point[g];
    y[i] = (static_cast<float>(code_at(q.packed, i)) - offset) * q.scale[g];
  }
  return y;
}

unsigned nearest_nf4_code(float normalized) {
  if (std::isnan(normalized)) return 7;
  if (std::isinf(normalized)) return normalized > 0 ? 15 : 0;
  unsigned best = 0;
  for (unsigned code = 1; code < 16; ++code) {
    if (std::fabs(double{normalized} - double{table(code)}) < std::fabs(double{normalized} - double{table(best)})) {
      best = code;
    }
  }
  return best;
}

Quantized quantize_nf4(const std::vector<float>& x, std::uint32_t group_size) {
  Quantized q;
  q.packed.assign((x.size() + 1) / 2, 0);
  const std::uint32_t groups = group_count(x.size(), group_size);
  for (std::uint32_t g = 0; g < groups; ++g) {
    float scale = absmax(finite_group(x, g, group_size));
    q.scale.push_back(scale);
    float divisor = scale > 0.0f ? scale : 1.0f;
    std::size_t end = std::min<std::size_t>(x.size(), std::size_t{g + 1} * group_size);
    for (std::size_t i = std::size_t{g} * group_size; i < end; ++i) pack(q.packed, i, nearest_nf4_code(x[i] / divisor));
  }
  return q;
}

std::vector<float> dequantize_nf4(const Quantized& q, std::size_t n, std::uint32_t group_size) {
  std::vector<float> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = table(code_at(q.packed, i)) * q.scale[i / group_size];
  return y;
}

float Nf4Matrix::at(std::uint32_t row, std::uint32_t column) const {
  std::size_t block = std::size_t{column} * (k / 64) + row / 64;
  std::size_t byte = block * 32 + (row % 64) / 2;
  unsigned code = (bytes[byte] >> (4 * (row % 2))) & 0xFu;
  return scales[block] * (fp4 ? bnb_fp4_table(code) : table(code));
}

Nf4Matrix quantize_nf4_matrix(const std::vector<float>& b, std::uint32_t k, std::uint32_t n) {
  Nf4Matrix result{k, n, std::vector<std::uint8_t>(std::size_t{n} * k / 2), {}};
  for (std::uint32_t column = 0; column < n; ++column) {
    for (std::uint32_t block = 0; block < k / 64; ++block) {
      std::vector<float> values(64);
      for (std::uint32_t r = 0; r < 64; ++r) values[r] = b[std::size_t{block * 64 + r} * n + column];
      Quantized q = quantize_nf4(values, 64);
      result.scales.push_back(q.scale[0]);
      std::copy(q.packed.begin(), q.packed.end(),
                result.bytes.begin() + (std::size_t{column} * (k / 64) + block) * 32);
    }
  }
  return result;
}

Nf4Matrix random_nf4_matrix(std::uint32_t k, std::uint32_t n, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  Nf4Matrix result{k, n, std::vector<std::uint8_t>(std::size_t{n} * k / 2), {}};
  for (auto& byte : result.bytes) byte = static_cast<std::uint8_t>(engine());
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  result.scales.resize(std::size_t{n} * k / 64);
  for (float& s : result.scales) s = scale(engine);
  return result;
}

std::vector<float> nf4_gemm(const std::vector<float>& a, const Nf4Matrix& b, std::uint32_t m, bool use_f64) {
  std::vector<float> c(std::size_t{m} * b.n);
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t column = 0; column < b.n; ++column) {
      double acc64 = 0.0;
      float acc32 = 0.0f;
      for (std::uint32_t r = 0; r < b.k; ++r) {
        float av = a[std::size_t{i} * b.k + r], w = b.at(r, column);
        if (use_f64) {
          acc64 += double{av} * double{w};  // the product is exact in f64
        } else {
          acc32 = std::fma(av, w, acc32);
        }
      }
      c[std::size_t{i} * b.n + column] = use_f64 ? static_cast<float>(acc64) : acc32;
    }
  }
  return c;
}

std::vector<float> nf4_gemm_transpose(const std::vector<float>& a, const Nf4Matrix& b, std::uint32_t m) {
  std::vector<float> c(std::size_t{m} * b.k);
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t r = 0; r < b.k; ++r) {
      double acc = 0.0;
      for (std::uint32_t column = 0; column < b.n; ++column) {
        acc += double{a[std::size_t{i} * b.n + column]} * double{b.at(r, column)};
      }
      c[std::size_t{i} * b.k + r] = static_cast<float>(acc);
    }
  }
  return c;
}

std::vector<float> naive_gemm_f32(const std::vector<float>& a, const std::vector<float>& b_row_major, std::uint32_t m,
                                  std::uint32_t k, std::uint32_t n) {
  std::vector<float> c(std::size_t{m} * n, 0.0f);
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t r = 0; r < k; ++r) {
      float av = a[std::size_t{i} * k + r];
      for (std::uint32_t column = 0; column < n; ++column) {
        float product = av * b_row_major[std::size_t{r} * n + column];
        c[std::size_t{i} * n + column] += product;
      }
    }
  }
  return c;
}

std::vector<double> matmul_f64(const std::vector<float>& a, const std::vector<float>& b_row_major, std::uint32_t m,
                               std::uint32_t k, std::uint32_t n) {
  std::vector<double> c(std::size_t{m} * n, 0.0);
  for (std::uint32_t i = 0; i < m; ++i) {
    for (std::uint32_t r = 0; r < k; ++r) {
      for (std::uint32_t column = 0; column < n; ++column) {
        c[std::size_t{i} * n + column] += double{a[std::size_t{i} * k + r]} * double{b_row_major[std::size_t{r} * n + column]};
      }
    }
  }
  return c;
}

std::vector<float> random_floats(std::size_t count, std::uint64_t seed, float low, float high) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = distribution(engine);
  return values;
}

}  // namespace quantc::tests::quantize_nf4
