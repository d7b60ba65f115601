// Internal to the reference interpreter: how lane values are held.
//
// Every value of every lane is one 64-bit `Word` (two for 128-bit vectors). A value of
// C++ type T (ir/Arithmetic.h's types: Float16/BFloat16 are their 16-bit encodings)
// occupies the low sizeof(T) bytes (the host is little-endian, like the device); the
// upper bytes are don't-care and never read. Type-agnostic operations (Select,
// shuffles, copies) move whole Words; typed kernels go through get<T>/put<T>, which
// compile to plain moves.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ir/Arithmetic.h"
#include "ir/Type.h"

namespace quantc::runtime::reference::detail {

using Word = std::uint64_t;

template <class T>
inline T get(Word word) {
  T value;
  std::memcpy(&value, &word, sizeof(T));
  return value;
}

template <class T>
inline Word put(T value) {
  Word word = 0;
  std::memcpy(&word, &value, sizeof(T));
  return word;
}

/// A set of active lanes: indices into the workgroup's invocations (linear local id),
/// strictly increasing. `dense` means the set is exactly 0..size-1, which lets kernels
/// run without the index indirection (and vectorise).
struct LaneSpan {
  const std::uint32_t* data = nullptr;
  std::uint32_t size = 0;
  bool dense = false;
  bool empty() const { return size == 0; }
};

/// Calls `body(lane)` for every lane of `lanes`, in increasing order.
template <class Body>
inline void for_each_lane(const LaneSpan& lanes, Body&& body) {
  if (lanes.dense) {
    for (std::uint32_t lane = 0; lane < lanes.size; ++lane) body(lane);
  } else {
    for (std::uint32_t i = 0; i < lanes.size; ++i) body(lanes.data[i]);
  }
}

/// Registers a value of `type` occupies: one 64-bit Word per 64 bits (a u32x4 or f32x4
/// takes two consecutive registers, lanes 0-1 in the first).
inline unsigned words_of(ir::Type type) { return type.bits() <= 64 ? 1 : 2; }

/// One invocation's copy of a vector value: the bytes of its lanes, lane 0 first, as
/// they lie in consecutive registers (`stride` Words apart: Machine::lanes).
struct VectorValue {
  Word words[2] = {0, 0};
  static VectorValue read(const Word* base, std::uint32_t stride, std::uint32_t lane, unsigned count) {
    VectorValue value;
    for (unsigned w = 0; w < count; ++w) value.words[w] = base[w * stride + lane];
    return value;
  }
  void write(Word* base, std::uint32_t stride, std::uint32_t lane, unsigned count) const {
    for (unsigned w = 0; w < count; ++w) base[w * stride + lane] = words[w];
  }
  template <class T>
  T lane(unsigned index) const {
    T value;
    std::memcpy(&value, reinterpret_cast<const std::uint8_t*>(words) + index * sizeof(T), sizeof(T));
    return value;
  }
  template <class T>
  void set_lane(unsigned index, T value) {
    std::memcpy(reinterpret_cast<std::uint8_t*>(words) + index * sizeof(T), &value, sizeof(T));
  }
};

}  // namespace quantc::runtime::reference::detail
