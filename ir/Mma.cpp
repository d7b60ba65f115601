#include "ir/Mma.h"

#include <bit>
#include <stdexcept>

#include "ir/Arithmetic.h"

namespace quantc::ir::mma {

namespace {

template <class Half>
CFragments multiply(const AFragments& a, const BFragments& b, const CFragments& c) {
  // Gather the whole matrices from the lanes, then compute D and scatter it back.
  float A[kM][kK], B[kK][kN], D[kM][kN];
  for (unsigned lane = 0; lane < kLanes; ++lane) {
    for (unsigned word = 0; word < kAWords; ++word) {
      for (unsigned half = 0; half < 2; ++half) {
        const auto [row, column] = a_element(lane, word, half);
        const Half value{static_cast<std::uint16_t>(a[lane][word] >> (16 * half))};
        A[row][column] = arith::convert<float>(value);
      }
    }
    for (unsigned word = 0; word < kBWords; ++word) {
      for (unsigned half = 0; half < 2; ++half) {
        const auto [k, column] = b_element(lane, word, half);
        const Half value{static_cast<std::uint16_t>(b[lane][word] >> (16 * half))};
        B[k][column] = arith::convert<float>(value);
      }
    }
    for (unsigned element = 0; element < kCElements; ++element) {
      const auto [row, column] = c_element(lane, element);
      D[row][column] = std::bit_cast<float>(c[lane][element]);
    }
  }
  for (unsigned row = 0; row < kM; ++row) {
    for (unsigned column = 0; column < kN; ++column) {
      float d = D[row][column];
      for (unsigned k = 0; k < kK; ++k) d = arith::fma(A[row][k], B[k][column], d);
      D[row][column] = d;
    }
  }
  CFragments result;
  for (unsigned lane = 0; lane < kLanes; ++lane) {
    for (unsigned element = 0; element < kCElements; ++element) {
      const auto [row, column] = c_element(lane, element);
      result[lane][element] = std::bit_cast<std::uint32_t>(D[row][column]);
    }
  }
  return result;
}

}  // namespace

CFragments multiply_accumulate(ScalarType input, const AFragments& a, const BFragments& b, const CFragments& c) {
  switch (input) {
    case ScalarType::F16: return multiply<arith::Float16>(a, b, c);
    case ScalarType::BF16: return multiply<arith::BFloat16>(a, b, c);
    default: throw std::invalid_argument("mma::multiply_accumulate: inputs must be f16 or bf16");
  }
}

}  // namespace quantc::ir::mma
