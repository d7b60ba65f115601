// The strict GGUF reader and ggml's reference dequantization (format and rules in
// Gguf.h). Compiled with -ffp-contract=off (runtime/io/CMakeLists.txt): the reference
// rounds every product and sum on its own, and a fused multiply-add would change bits.
#include "runtime/io/Gguf.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <numeric>

#include "runtime/io/MappedFile.h"

namespace quantc::runtime {
namespace {

// --- ggml types: gguf-py 0.19.0's GGMLQuantizationType and GGML_QUANT_SIZES -------------

struct TypeEntry {
  GgmlType type;
  const char* name;
  std::uint64_t block_size;  // elements per block
  std::uint64_t type_size;   // bytes per block
  bool dequantizable;
};

constexpr std::uint64_t QK_K = kGgmlQK_K;

constexpr std::array<TypeEntry, 34> kTypes{{
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", 32, 2 + 16, true},
    {GgmlType::Q4_1, "Q4_1", 32, 2 + 2 + 16, true},
    {GgmlType::Q5_0, "Q5_0", 32, 2 + 4 + 16, false},
    {GgmlType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16, false},
    {GgmlType::Q8_0, "Q8_0", 32, 2 + 32, true},
    {GgmlType::Q8_1, "Q8_1", 32, 4 + 4 + 32, false},
    {GgmlType::Q2_K, "Q2_K", 256, 2 + 2 + QK_K / 16 + QK_K / 4, false},
    {GgmlType::Q3_K, "Q3_K", 256, 2 + QK_K / 4 + QK_K / 8 + 12, false},
    {GgmlType::Q4_K, "Q4_K", 256, 2 + 2 + QK_K / 2 + 12, true},
    {GgmlType::Q5_K, "Q5_K", 256, 2 + 2 + QK_K / 2 + QK_K / 8 + 12, true},
    {GgmlType::Q6_K, "Q6_K", 256, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16, true},
    {GgmlType::Q8_K, "Q8_K", 256, 4 + QK_K + QK_K / 8, false},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 2 + QK_K / 4, false},
    {GgmlType::IQ2_XS, "IQ2_XS", 256, 2 + QK_K / 4 + QK_K / 32, false},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 2 + QK_K / 4 + QK_K / 8, false},
    {GgmlType::IQ1_S, "IQ1_S", 256, 2 + QK_K / 8 + QK_K / 16, false},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 2 + 16, false},
    {GgmlType::IQ3_S, "IQ3_S", 256, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, false},
    {GgmlType::IQ2_S, "IQ2_S", 256, 2 + QK_K / 4 + QK_K / 16, false},
    {GgmlType::IQ4_XS, "IQ4_XS", 256, 2 + 2 + QK_K / 2 + QK_K / 64, false},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, false},
    {GgmlType::IQ1_M, "IQ1_M", 256, QK_K / 8 + QK_K / 16 + QK_K / 32, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
    {GgmlType::TQ1_0, "TQ1_0", 256, 2 + 4 * 13, false},
    {GgmlType::TQ2_0, "TQ2_0", 256, 2 + 64, false},
    {GgmlType::MXFP4, "MXFP4", 32, 1 + 16, false},
    {GgmlType::NVFP4, "NVFP4", 64, 4 + 32, false},
    {GgmlType::Q1_0, "Q1_0", 128, 2 + 16, false},
}};

const TypeEntry* find_type(std::uint32_t id) {
  for (const TypeEntry& entry : kTypes) {
    if (static_cast<std::uint32_t>(entry.type) == id) return &entry;
  }
  return nullptr;
}

const TypeEntry& entry_for(GgmlType type) {
  const TypeEntry* entry = find_type(static_cast<std::uint32_t>(type));
  if (entry == nullptr) throw RuntimeError(fmt::format("ggml type id {} is not a GgmlType", static_cast<std::uint32_t>(type)));
  return *entry;
}

std::string known_type_names() {
  std::string names;
  for (const TypeEntry& entry : kTypes) {
    names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", entry.name, static_cast<std::uint32_t>(entry.type));
  }
  return names;
}

// --- metadata value types ----------------------------------------------------------------

constexpr std::uint32_t kValueTypeCount = 13;
constexpr std::array<const char*, kValueTypeCount> kValueTypeNames{
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

/// Bytes of one value of a fixed-size type; 0 for string and array.
std::uint64_t value_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::UInt8: case GgufValueType::Int8: case GgufValueType::Bool: return 1;
    case GgufValueType::UInt16: case GgufValueType::Int16: return 2;
    case GgufValueType::UInt32: case GgufValueType::Int32: case GgufValueType::Float32: return 4;
    case GgufValueType::UInt64: case GgufValueType::Int64: case GgufValueType::Float64: return 8;
    case GgufValueType::String: case GgufValueType::Array: return 0;
  }
  return 0;
}

/// The fewest bytes one value of `type` takes in the file: a string is at least its
/// 8-byte length, an array its 4-byte element type and 8-byte count.
std::uint64_t min_encoded_size(GgufValueType type) {
  if (type == GgufValueType::String) return 8;
  if (type == GgufValueType::Array) return 12;
  return value_size(type);
}

template <class T>
T load(const std::uint8_t* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));  // GGUF fields are packed, not aligned
  return value;
}

/// Sets the scalar member of `value` from the `value_size(type)` bytes at `bytes`.
void decode_scalar(GgufValue& value, GgufValueType type, const std::uint8_t* bytes) {
  value.type = type;
  switch (type) {
    case GgufValueType::UInt8: value.uint_value = load<std::uint8_t>(bytes); break;
    case GgufValueType::Bool: value.uint_value = load<std::uint8_t>(bytes); break;
    case GgufValueType::UInt16: value.uint_value = load<std::uint16_t>(bytes); break;
    case GgufValueType::UInt32: value.uint_value = load<std::uint32_t>(bytes); break;
    case GgufValueType::UInt64: value.uint_value = load<std::uint64_t>(bytes); break;
    case GgufValueType::Int8: value.int_value = load<std::int8_t>(bytes); break;
    case GgufValueType::Int16: value.int_value = load<std::int16_t>(bytes); break;
    case GgufValueType::Int32: value.int_value = load<std::int32_t>(bytes); break;
    case GgufValueType::Int64: value.int_value = load<std::int64_t>(bytes); break;
    case GgufValueType::Float32: value.float_value = load<float>(bytes); break;
    case GgufValueType::Float64: value.float_value = load<double>(bytes); break;
    case GgufValueType::String: case GgufValueType::Array: break;
  }
}

/// `text` for a message: printable ASCII kept, other bytes as \xNN, cut at 80 bytes.
std::string printable(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 80; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7F && byte != '\\') {
      out += static_cast<char>(byte);
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  if (text.size() > 80) out += fmt::format("... ({} bytes)", text.size());
  return out;
}

// --- the parser --------------------------------------------------------------------------

constexpr std::uint64_t kMaxKeyBytes = 65535;       // the spec's limit on a key
constexpr std::uint64_t kMaxTensorNameBytes = 64;   // the spec's limit on a tensor name
constexpr std::uint32_t kMaxDims = 4;               // GGML_MAX_DIMS
constexpr std::uint64_t kDefaultAlignment = 32;     // GGUF_DEFAULT_ALIGNMENT
constexpr std::uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;   // key length, a 1-byte key, type, a 1-byte value
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;  // name length, a 1-byte name, n_dims, type, offset

class Parser {
 public:
  Parser(std::span<const std::uint8_t> file, const std::string& label) : file_(file), label_(label) {}

  [[noreturn]] void fail(const std::string& problem) const {
    std::string where = where_;
    if (!indices_.empty()) {
      where += " element ";
      for (std::uint64_t index : indices_) where += fmt::format("[{}]", index);
    }
    throw RuntimeError(fmt::format("{}: invalid GGUF file: {}{}", label_, where.empty() ? "" : where + ": ", problem));
  }

  void set_where(std::string where) { where_ = std::move(where); }
  std::uint64_t position() const { return position_; }
  std::uint64_t remaining() const { return file_.size() - position_; }

  /// Fails unless `count` more bytes exist; `what` names the field.
  void need(std::uint64_t count, const char* what) const {
    if (count > remaining()) {
      fail(fmt::format("truncated at byte {} of {}: {} needs {} bytes (truncated file?)", position_, file_.size(), what,
                       count));
    }
  }

  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    const T value = load<T>(file_.data() + position_);
    position_ += sizeof(T);
    return value;
  }

  const std::uint8_t* take(std::uint64_t count, const char* what) {
    need(count, what);
    const std::uint8_t* start = file_.data() + position_;
    position_ += count;
    return start;
  }

  /// A string: u64 length, then the bytes. `limit` (0: none) is checked before the bytes.
  std::string read_string(const char* what, std::uint64_t limit, const char* limit_reason) {
    const auto length = read<std::uint64_t>(what);
    if (limit != 0 && length > limit) {
      fail(fmt::format("{} of {} bytes is longer than {} bytes, {}", what, length, limit, limit_reason));
    }
    if (length > remaining()) {
      fail(fmt::format("truncated at byte {} of {}: {} of {} bytes reaches past the end of the file (truncated file?)",
                       position_, file_.size(), what, length));
    }
    const std::uint8_t* bytes = take(length, what);
    return std::string(reinterpret_cast<const char*>(bytes), length);
  }

  GgufValueType read_value_type(const char* what) {
    const auto id = read<std::uint32_t>(what);
    if (id >= kValueTypeCount) {
      std::string known;
      for (std::uint32_t i = 0; i < kValueTypeCount; ++i) known += fmt::format("{}{} {}", i ? ", " : "", i, kValueTypeNames[i]);
      fail(fmt::format("unknown {} {} (known: {})", what, id, known));
    }
    return static_cast<GgufValueType>(id);
  }

  /// One value of `type`; `depth` is how many arrays enclose it.
  GgufValue read_value(GgufValueType type, int depth) {
    GgufValue value;
    value.type = type;
    if (type == GgufValueType::String) {
      value.string = read_string("string value", 0, "");
      return value;
    }
    if (type != GgufValueType::Array) {
      const std::uint8_t* bytes = take(value_size(type), "value");
      decode_scalar(value, type, bytes);
      if (type == GgufValueType::Bool && value.uint_value > 1) {
        fail(fmt::format("bool value {} is neither 0 nor 1", value.uint_value));
      }
      return value;
    }
    if (depth + 1 > kGgufMaxArrayDepth) {
      fail(fmt::format("arrays nested deeper than {} levels", kGgufMaxArrayDepth));
    }
    value.element_type = read_value_type("array element type");
    value.element_count = read<std::uint64_t>("array element count");
    const std::uint64_t min_size = min_encoded_size(value.element_type);
    if (value.element_count > remaining() / min_size) {
      fail(fmt::format("array of {} {} elements needs at least {} bytes per element but only {} bytes remain "
                       "(truncated file?)",
                       value.element_count, kValueTypeNames[static_cast<std::uint32_t>(value.element_type)], min_size,
                       remaining()));
    }
    if (value.element_type == GgufValueType::String) {
      value.array_strings.reserve(value.element_count);
      indices_.push_back(0);
      for (std::uint64_t i = 0; i < value.element_count; ++i) {
        indices_.back() = i;
        value.array_strings.push_back(read_string("string element", 0, ""));
      }
      indices_.pop_back();
    } else if (value.element_type == GgufValueType::Array) {
      nested_arrays_ += value.element_count;
      if (nested_arrays_ > kGgufMaxNestedArrays) {
        fail(fmt::format("more than {} arrays nested in arrays in all; refusing to hold them", kGgufMaxNestedArrays));
      }
      value.array_values.reserve(value.element_count);
      indices_.push_back(0);
      for (std::uint64_t i = 0; i < value.element_count; ++i) {
        indices_.back() = i;
        value.array_values.push_back(read_value(GgufValueType::Array, depth + 1));
      }
      indices_.pop_back();
    } else {
      const std::uint64_t byte_count = value.element_count * min_size;  // bounded by remaining() above
      const std::uint8_t* bytes = take(byte_count, "array elements");
      if (value.element_type == GgufValueType::Bool) {
        for (std::uint64_t i = 0; i < byte_count; ++i) {
          if (bytes[i] > 1) {
            indices_.push_back(i);
            fail(fmt::format("bool value {} is neither 0 nor 1", bytes[i]));
          }
        }
      }
      value.array_bytes.assign(bytes, bytes + byte_count);
    }
    return value;
  }

 private:
  std::span<const std::uint8_t> file_;
  const std::string& label_;
  std::uint64_t position_ = 0;
  std::string where_;
  std::vector<std::uint64_t> indices_;  // array element path of the value being read
  std::uint64_t nested_arrays_ = 0;
};

// --- dequantization ----------------------------------------------------------------------

template <class Block>
void dequantize_blocks(std::span<const std::uint8_t> bytes, float* out) {
  const std::uint64_t blocks = bytes.size() / sizeof(Block);
  for (std::uint64_t b = 0; b < blocks; ++b) {
    const Block block = gguf_block<Block>(bytes, b);
    for (int i = 0; i < Block::block_size; ++i) out[i] = block.element(i);
    out += Block::block_size;
  }
}

}  // namespace

// --- types -------------------------------------------------------------------------------

std::string_view ggml_type_name(GgmlType type) { return entry_for(type).name; }
std::uint64_t ggml_block_size(GgmlType type) { return entry_for(type).block_size; }
std::uint64_t ggml_type_size(GgmlType type) { return entry_for(type).type_size; }
bool ggml_type_dequantizable(GgmlType type) { return entry_for(type).dequantizable; }

GgmlType ggml_type_from_id(std::uint32_t id) {
  const TypeEntry* entry = find_type(id);
  if (entry == nullptr) throw RuntimeError(fmt::format("unknown ggml type {} (known: {})", id, known_type_names()));
  return entry->type;
}

std::string ggml_dequantizable_type_names() { return "F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K"; }

std::string_view gguf_value_type_name(GgufValueType type) {
  const auto id = static_cast<std::uint32_t>(type);
  return id < kValueTypeCount ? kValueTypeNames[id] : "invalid";
}

// --- f16 / bf16 --------------------------------------------------------------------------

float ggml_fp16_to_f32(std::uint16_t bits) {
  const std::uint32_t sign = std::uint32_t{bits & 0x8000u} << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;
  std::uint32_t result;
  if (exponent == 0x1F) {
    // Infinity, or NaN with its payload in the top of the f32 mantissa, made quiet.
    result = sign | 0x7F800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u);
  } else if (exponent != 0) {
    result = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    result = sign;  // signed zero
  } else {
    // Subnormal: mantissa * 2^-24, a normal f32; shift the leading one into bit 10.
    int f32_exponent = 127 - 14;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --f32_exponent;
    }
    result = sign | (static_cast<std::uint32_t>(f32_exponent) << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(result);
}

float ggml_bf16_to_f32(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

// --- blocks ------------------------------------------------------------------------------

GgmlScaleMin ggml_k4_scale_min(const std::uint8_t (&scales)[kGgmlKScaleSize], int j) {
  if (j < 4) return {static_cast<std::uint8_t>(scales[j] & 63), static_cast<std::uint8_t>(scales[j + 4] & 63)};
  return {static_cast<std::uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4)),
          static_cast<std::uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))};
}

float GgmlBlockQ4_0::element(int i) const { return static_cast<float>(quant(i) - 8) * ggml_fp16_to_f32(d); }

float GgmlBlockQ4_1::element(int i) const {
  const float product = static_cast<float>(quant(i)) * ggml_fp16_to_f32(d);
  return product + ggml_fp16_to_f32(m);
}

float GgmlBlockQ8_0::element(int i) const { return static_cast<float>(qs[i]) * ggml_fp16_to_f32(d); }

namespace {
/// Element i of a Q4_K/Q5_K super-block: (d * scale) * q - dmin * min, each product and
/// the difference rounded to f32, as dequantize_row_q4_K / _q5_K compute it.
template <class Block>
float scale_min_element(const Block& block, int i) {
  const GgmlScaleMin sm = block.scale_min(i / 32);
  const float d1 = ggml_fp16_to_f32(block.d) * static_cast<float>(sm.scale);
  const float m1 = ggml_fp16_to_f32(block.dmin) * static_cast<float>(sm.min);
  const float product = d1 * static_cast<float>(block.quant(i));
  return product - m1;
}
}  // namespace

float GgmlBlockQ4_K::element(int i) const { return scale_min_element(*this, i); }

float GgmlBlockQ5_K::element(int i) const { return scale_min_element(*this, i); }

float GgmlBlockQ6_K::element(int i) const {
  const float scale = ggml_fp16_to_f32(d) * static_cast<float>(scales[i / 16]);
  return scale * static_cast<float>(quant(i) - 32);
}

void dequantize_row(GgmlType type, std::span<const std::uint8_t> bytes, std::span<float> out) {
  const TypeEntry& entry = entry_for(type);
  if (!entry.dequantizable) {
    throw RuntimeError(fmt::format("cannot dequantize ggml type {} ({}): supported types are {}", entry.name,
                                   static_cast<std::uint32_t>(type), ggml_dequantizable_type_names()));
  }
  if (out.size() % entry.block_size != 0 || bytes.size() != out.size() / entry.block_size * entry.type_size) {
    throw RuntimeError(fmt::format("dequantize_row: {} elements of {} need {} bytes (a multiple of {} elements, "
                                   "{} bytes per block) but {} bytes were given",
                                   out.size(), entry.name, out.size() / entry.block_size * entry.type_size,
                                   entry.block_size, entry.type_size, bytes.size()));
  }
  float* destination = out.data();
  switch (type) {
    case GgmlType::F32:
      if (!out.empty()) std::memcpy(destination, bytes.data(), bytes.size());
      break;
    case GgmlType::F16:
      for (std::size_t i = 0; i < out.size(); ++i) destination[i] = ggml_fp16_to_f32(load<std::uint16_t>(&bytes[2 * i]));
      break;
    case GgmlType::BF16:
      for (std::size_t i = 0; i < out.size(); ++i) destination[i] = ggml_bf16_to_f32(load<std::uint16_t>(&bytes[2 * i]));
      break;
    case GgmlType::Q4_0: dequantize_blocks<GgmlBlockQ4_0>(bytes, destination); break;
    case GgmlType::Q4_1: dequantize_blocks<GgmlBlockQ4_1>(bytes, destination); break;
    case GgmlType::Q8_0: dequantize_blocks<GgmlBlockQ8_0>(bytes, destination); break;
    case GgmlType::Q4_K: dequantize_blocks<GgmlBlockQ4_K>(bytes, destination); break;
    case GgmlType::Q5_K: dequantize_blocks<GgmlBlockQ5_K>(bytes, destination); break;
    case GgmlType::Q6_K: dequantize_blocks<GgmlBlockQ6_K>(bytes, destination); break;
    default: throw RuntimeError(fmt::format("dequantize_row: no routine for {}", entry.name));
  }
}

// --- values ------------------------------------------------------------------------------

namespace {

bool is_unsigned(GgufValueType type) {
  return type == GgufValueType::UInt8 || type == GgufValueType::UInt16 || type == GgufValueType::UInt32 ||
         type == GgufValueType::UInt64;
}

bool is_signed(GgufValueType type) {
  return type == GgufValueType::Int8 || type == GgufValueType::Int16 || type == GgufValueType::Int32 ||
         type == GgufValueType::Int64;
}

[[noreturn]] void wrong_type(const GgufValue& value, const char* wanted) {
  throw RuntimeError(fmt::format("GGUF metadata value {} is a {}, not {}", value.to_string(3), gguf_value_type_name(value.type),
                                 wanted));
}

}  // namespace

std::uint64_t GgufValue::as_uint() const {
  if (is_unsigned(type)) return uint_value;
  if (is_signed(type)) {
    if (int_value < 0) throw RuntimeError(fmt::format("GGUF metadata value {} is negative, not an unsigned integer", int_value));
    return static_cast<std::uint64_t>(int_value);
  }
  wrong_type(*this, "an integer");
}

std::int64_t GgufValue::as_int() const {
  if (is_signed(type)) return int_value;
  if (is_unsigned(type)) {
    if (uint_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw RuntimeError(fmt::format("GGUF metadata value {} does not fit in int64", uint_value));
    }
    return static_cast<std::int64_t>(uint_value);
  }
  wrong_type(*this, "an integer");
}

double GgufValue::as_float() const {
  if (type == GgufValueType::Float32 || type == GgufValueType::Float64) return float_value;
  wrong_type(*this, "a float");
}

bool GgufValue::as_bool() const {
  if (type == GgufValueType::Bool) return uint_value != 0;
  wrong_type(*this, "a bool");
}

const std::string& GgufValue::as_string() const {
  if (type == GgufValueType::String) return string;
  wrong_type(*this, "a string");
}

GgufValue GgufValue::element(std::uint64_t index) const {
  if (type != GgufValueType::Array) wrong_type(*this, "an array");
  if (index >= element_count) {
    throw RuntimeError(fmt::format("GGUF array index {} is out of range for {} elements", index, element_count));
  }
  if (element_type == GgufValueType::String) {
    GgufValue value;
    value.type = GgufValueType::String;
    value.string = array_strings[index];
    return value;
  }
  if (element_type == GgufValueType::Array) return array_values[index];
  GgufValue value;
  decode_scalar(value, element_type, array_bytes.data() + index * value_size(element_type));
  return value;
}

std::string GgufValue::to_string(std::size_t max_elements) const {
  switch (type) {
    case GgufValueType::UInt8: case GgufValueType::UInt16: case GgufValueType::UInt32: case GgufValueType::UInt64:
      return std::to_string(uint_value);
    case GgufValueType::Int8: case GgufValueType::Int16: case GgufValueType::Int32: case GgufValueType::Int64:
      return std::to_string(int_value);
    case GgufValueType::Float32: case GgufValueType::Float64: return fmt::format("{}", float_value);
    case GgufValueType::Bool: return uint_value ? "true" : "false";
    case GgufValueType::String: return "'" + printable(string) + "'";
    case GgufValueType::Array: {
      std::string text = "[";
      for (std::uint64_t i = 0; i < element_count; ++i) {
        if (i == max_elements) {
          text += fmt::format(", ... ({} elements)", element_count);
          break;
        }
        text += (i ? ", " : "") + element(i).to_string(max_elements);
      }
      return text + "]";
    }
  }
  return "?";
}

// --- tensors -----------------------------------------------------------------------------

std::uint64_t GgufTensor::element_count() const {
  std::uint64_t count = 1;
  for (std::uint64_t extent : ne) count *= extent;  // validated not to overflow
  return count;
}

std::uint64_t GgufTensor::byte_size() const { return element_count() / ggml_block_size(type) * ggml_type_size(type); }

std::uint64_t GgufTensor::row_count() const {
  std::uint64_t rows = 1;
  for (std::size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  return rows;
}

std::uint64_t GgufTensor::row_bytes() const {
  const std::uint64_t row_length = ne.empty() ? 1 : ne[0];
  return row_length / ggml_block_size(type) * ggml_type_size(type);
}

std::vector<std::uint64_t> GgufTensor::shape() const { return {ne.rbegin(), ne.rend()}; }

// --- the file ----------------------------------------------------------------------------

void GgufFile::validate(std::span<const std::uint8_t> file) {
  Parser parser(file, label_);

  // Header.
  parser.set_where("header");
  const std::uint8_t* magic = parser.take(4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    parser.fail(fmt::format("bad magic '{}' (bytes {:02x} {:02x} {:02x} {:02x}); a GGUF file starts with 'GGUF'",
                            printable(std::string_view(reinterpret_cast<const char*>(magic), 4)), magic[0], magic[1],
                            magic[2], magic[3]));
  }
  version_ = parser.read<std::uint32_t>("the version");
  if (version_ != 0 && (version_ & 0xFFFFu) == 0) {
    parser.fail(fmt::format("version field 0x{:08x} reads as a byte-swapped small number: a big-endian GGUF file, "
                            "which this reader does not support (convert it with gguf-py's gguf_convert_endian.py)",
                            version_));
  }
  if (version_ == 1) {
    parser.fail("version 1 is not supported (it has 32-bit counts and is obsolete, as in ggml); re-convert the "
                "model with a current llama.cpp or gguf-py to get version 3");
  }
  if (version_ != 2 && version_ != 3) {
    parser.fail(fmt::format("unsupported version {} (this reader supports versions 2 and 3)", version_));
  }
  const auto tensor_count = parser.read<std::uint64_t>("the tensor count");
  const auto kv_count = parser.read<std::uint64_t>("the metadata key/value count");
  if (kv_count > parser.remaining() / kMinKeyValueBytes) {
    parser.fail(fmt::format("{} metadata entries need at least {} bytes each but only {} bytes follow (truncated file?)",
                            kv_count, kMinKeyValueBytes, parser.remaining()));
  }
  if (tensor_count > parser.remaining() / kMinTensorInfoBytes) {
    parser.fail(fmt::format("{} tensor infos need at least {} bytes each but only {} bytes follow (truncated file?)",
                            tensor_count, kMinTensorInfoBytes, parser.remaining()));
  }

  // Metadata.
  metadata_.reserve(kv_count);
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    parser.set_where(fmt::format("metadata entry {}", i));
    std::string key = parser.read_string("key", kMaxKeyBytes, "the format's limit for keys");
    if (key.empty()) parser.fail("the key is empty");
    parser.set_where(fmt::format("metadata key '{}'", printable(key)));
    if (metadata_index_.count(key) != 0) {
      parser.fail(fmt::format("the key appears twice (entries {} and {})", metadata_index_.at(key), i));
    }
    const GgufValueType type = parser.read_value_type("value type");
    GgufValue value = parser.read_value(type, 0);
    metadata_index_.emplace(key, metadata_.size());
    metadata_.push_back({std::move(key), std::move(value)});
  }
  if (const GgufValue* alignment = find("general.alignment")) {
    parser.set_where("metadata key 'general.alignment'");
    if (alignment->type != GgufValueType::UInt32) {
      parser.fail(fmt::format("the alignment is a {}; it must be a u32", gguf_value_type_name(alignment->type)));
    }
    if (!std::has_single_bit(alignment->uint_value)) {
      parser.fail(fmt::format("alignment {} is not a power of two (ggml and gguf-py require a non-zero power of two; "
                              "the default is 32)",
                              alignment->uint_value));
    }
    alignment_ = alignment->uint_value;
  } else {
    alignment_ = kDefaultAlignment;
  }

  // Tensor infos.
  tensors_.reserve(tensor_count);
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    parser.set_where(fmt::format("tensor info {}", i));
    GgufTensor tensor;
    tensor.name = parser.read_string("tensor name", kMaxTensorNameBytes, "the format's limit for tensor names");
    if (tensor.name.empty()) parser.fail("the tensor name is empty");
    parser.set_where(fmt::format("tensor '{}'", printable(tensor.name)));
    if (tensor_index_.count(tensor.name) != 0) {
      parser.fail(fmt::format("the name appears twice (tensor infos {} and {})", tensor_index_.at(tensor.name), i));
    }
    const auto n_dims = parser.read<std::uint32_t>("n_dims");
    if (n_dims > kMaxDims) parser.fail(fmt::format("n_dims {} exceeds ggml's maximum of {}", n_dims, kMaxDims));
    std::uint64_t element_count = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto extent = parser.read<std::uint64_t>("a dimension");
      tensor.ne.push_back(extent);
      if (__builtin_mul_overflow(element_count, extent, &element_count) ||
          element_count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        parser.fail(fmt::format("dimensions ne = [{}{}] overflow ggml's int64 element count", fmt::join(tensor.ne, ", "),
                                d + 1 < n_dims ? ", ..." : ""));
      }
    }
    const auto type_id = parser.read<std::uint32_t>("the ggml type");
    const TypeEntry* entry = find_type(type_id);
    if (entry == nullptr) {
      parser.fail(fmt::format("unknown ggml type {} (known: {}; dequantizable: {})", type_id, known_type_names(),
                              ggml_dequantizable_type_names()));
    }
    tensor.type = entry->type;
    const std::uint64_t row_length = tensor.ne.empty() ? 1 : tensor.ne[0];
    if (row_length % entry->block_size != 0) {
      parser.fail(fmt::format("row length ne[0] = {} is not a multiple of {}'s block size {}", row_length, entry->name,
                              entry->block_size));
    }
    std::uint64_t byte_size = 0;
    if (__builtin_mul_overflow(element_count / entry->block_size, entry->type_size, &byte_size)) {
      parser.fail(fmt::format("ne = [{}] of {} overflows a 64-bit byte count", fmt::join(tensor.ne, ", "), entry->name));
    }
    tensor.offset = parser.read<std::uint64_t>("the data offset");
    if (tensor.offset % alignment_ != 0) {
      parser.fail(fmt::format("data offset {} is not a multiple of the alignment {}", tensor.offset, alignment_));
    }
    tensor_index_.emplace(tensor.name, tensors_.size());
    tensors_.push_back(std::move(tensor));
  }

  // The data section starts at the next multiple of the alignment.
  const std::uint64_t infos_end = parser.position();
  data_offset_ = (infos_end + alignment_ - 1) / alignment_ * alignment_;
  if (tensors_.empty()) return;
  parser.set_where("");
  if (data_offset_ > file.size()) {
    parser.fail(fmt::format("truncated at byte {} of {}: the data section would start at byte {} (truncated file?)",
                            infos_end, file.size(), data_offset_));
  }
  const std::uint64_t data_size = file.size() - data_offset_;
  for (GgufTensor& tensor : tensors_) {
    parser.set_where(fmt::format("tensor '{}'", printable(tensor.name)));
    const std::uint64_t size = tensor.byte_size();
    if (tensor.offset > data_size || size > data_size - tensor.offset) {
      parser.fail(fmt::format("data at offset {} of {} bytes reaches past the end of the {}-byte data section "
                              "(truncated file?)",
                              tensor.offset, size, data_size));
    }
    tensor.file_offset = data_offset_ + tensor.offset;
    tensor.bytes = file.subspan(tensor.file_offset, size);
  }

  // No two tensors share a byte (zero-sized ones occupy none).
  std::vector<std::size_t> order(tensors_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return tensors_[a].offset != tensors_[b].offset ? tensors_[a].offset < tensors_[b].offset : a < b;
  });
  const GgufTensor* previous = nullptr;
  for (std::size_t index : order) {
    const GgufTensor& tensor = tensors_[index];
    if (tensor.bytes.empty()) continue;
    if (previous != nullptr && tensor.offset < previous->offset + previous->bytes.size()) {
      parser.set_where(fmt::format("tensor '{}'", printable(tensor.name)));
      parser.fail(fmt::format("data [{}, {}) overlaps tensor '{}' at [{}, {})", tensor.offset,
                              tensor.offset + tensor.bytes.size(), printable(previous->name), previous->offset,
                              previous->offset + previous->bytes.size()));
    }
    previous = &tensor;
  }
}

GgufFile GgufFile::parse(std::vector<std::uint8_t> bytes, const std::string& label) {
  GgufFile file;
  file.label_ = label;
  FileBytes owned = own_bytes(std::move(bytes));
  file.storage_ = owned.storage;
  file.validate(owned.bytes);
  return file;
}

GgufFile GgufFile::open(const std::string& path) {
  FileBytes mapped = map_file(path, "GGUF");
  GgufFile file;
  file.label_ = path;
  file.storage_ = mapped.storage;
  file.validate(mapped.bytes);
  return file;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto found = metadata_index_.find(key);
  return found == metadata_index_.end() ? nullptr : &metadata_[found->second].value;
}

const GgufValue& GgufFile::value(const std::string& key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) {
    throw RuntimeError(fmt::format("{}: no metadata key '{}' ({} keys present)", label_, key, metadata_.size()));
  }
  return *value;
}

bool GgufFile::contains(const std::string& name) const { return tensor_index_.count(name) != 0; }

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  auto found = tensor_index_.find(name);
  if (found == tensor_index_.end()) {
    std::string some;
    std::size_t listed = 0;
    for (const GgufTensor& tensor : tensors_) {
      if (listed++ == 5) {
        some += ", ...";
        break;
      }
      some += (some.empty() ? "" : ", ") + printable(tensor.name);
    }
    throw RuntimeError(fmt::format("{}: no tensor named '{}' ({} tensors present: {})", label_, printable(name),
                                   tensors_.size(), some));
  }
  return tensors_[found->second];
}

std::vector<float> GgufFile::to_f32(const std::string& name) const {
  const GgufTensor& tensor = this->tensor(name);
  if (!ggml_type_dequantizable(tensor.type)) {
    throw RuntimeError(fmt::format("{}: tensor '{}' has type {} ({}), which cannot be dequantized; supported types are {}",
                                   label_, printable(name), ggml_type_name(tensor.type),
                                   static_cast<std::uint32_t>(tensor.type), ggml_dequantizable_type_names()));
  }
  std::vector<float> values(tensor.element_count());
  dequantize_row(tensor.type, tensor.bytes, values);
  return values;
}

}  // namespace quantc::runtime
