// Internal to the reference interpreter: how lane values are held.
//
// Every value of every lane is one 64-bit `Word`. A value of C++ type T occupies the
// low sizeof(T) bytes (the host is little-endian, like the device); the upper bytes are
// don't-care and never read. Type-agnostic operations (Select, shuffles, copies) move
// whole Words; typed kernels go through get<T>/put<T>, which compile to plain moves.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ir/Type.h"

namespace quantc::runtime::reference::detail {

using Word = std::uint64_t;
using Half = _Float16;  // IEEE binary16, GCC/Clang extension on x86-64 and AArch64

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

/// Calls `visitor.template operator()<T>()` with T the C++ type holding a value of
/// `type` (bool, uint8_t, int8_t, uint16_t, uint32_t, int32_t, uint64_t, int64_t,
/// Half, float, double). Storage-only i4/u4 raise std::invalid_argument.
template <class Visitor>
inline decltype(auto) dispatch_type(ir::ScalarType type, Visitor&& visitor) {
  using ir::ScalarType;
  switch (type) {
    case ScalarType::Bool: return visitor.template operator()<bool>();
    case ScalarType::U8: return visitor.template operator()<std::uint8_t>();
    case ScalarType::I8: return visitor.template operator()<std::int8_t>();
    case ScalarType::U16: return visitor.template operator()<std::uint16_t>();
    case ScalarType::U32: return visitor.template operator()<std::uint32_t>();
    case ScalarType::I32: return visitor.template operator()<std::int32_t>();
    case ScalarType::U64: return visitor.template operator()<std::uint64_t>();
    case ScalarType::I64: return visitor.template operator()<std::int64_t>();
    case ScalarType::F16: return visitor.template operator()<Half>();
    case ScalarType::F32: return visitor.template operator()<float>();
    case ScalarType::F64: return visitor.template operator()<double>();
    case ScalarType::I4:
    case ScalarType::U4: break;
  }
  throw std::invalid_argument("storage-only type " + std::string(ir::to_string(type)) +
                              " cannot hold a value; unpack it into u32 first");
}

template <class T>
inline constexpr bool kIsFloat = std::is_same_v<T, Half> || std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace quantc::runtime::reference::detail
