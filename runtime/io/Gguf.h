// GGUF files: the model format of ggml and llama.cpp. Sources: the specification in
// ggml's docs/gguf.md ("File Structure") and the reference implementations, ggml's
// gguf.cpp (the C reader) and the `gguf` Python package (gguf-py; constants.py gives
// the type ids and GGML_QUANT_SIZES, gguf_reader.py the reader). Layout, all integers
// little-endian, fields packed without alignment unless stated:
//
//   u32 magic          "GGUF" as bytes (0x47 0x47 0x55 0x46)
//   u32 version        2 or 3 (identical for little-endian files; version 1 used 32-bit
//                      counts and is refused, as ggml refuses it)
//   u64 tensor_count
//   u64 metadata_kv_count
//   metadata_kv_count x { string key; u32 value_type; value }
//   tensor_count x      { string name; u32 n_dims; u64 ne[n_dims]; u32 ggml_type; u64 offset }
//   padding to a multiple of ALIGNMENT, then the data section to the end of the file
//
// where a string is { u64 length in bytes; that many bytes, UTF-8, no terminator }, and
// a value is, by value_type: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool (one
// byte, 0 or 1), 8 string, 9 array { u32 element type; u64 element count; the elements,
// each a value of that type, arrays included }, 10 u64, 11 i64, 12 f64. ALIGNMENT is the
// u32 metadata value "general.alignment", 32 when absent. A tensor's ne[0] is its row
// length, the fastest-varying index (ggml order: numpy's shape is ne reversed); its data
// is ne[1] * ne[2] * ne[3] rows of ne[0] / block_size blocks, each type_size bytes, and
// starts `offset` bytes into the data section.
//
// The reader is strict, because the file comes from the internet: every malformed or
// truncated file is a RuntimeError "<file>: invalid GGUF file: <problem>" naming the
// metadata key or tensor where there is one, never an out-of-bounds read or an
// allocation the file's size does not justify. It checks
//   - the magic; the version is 2 or 3 (a big-endian file, whose version reads as
//     0x0?000000, and version 1 get their own messages);
//   - every field lies inside the file ("truncated at byte B reading ..."); counts of
//     keys, tensors and array elements are no larger than the bytes left could hold;
//   - metadata: keys are 1..65535 bytes and unique; value types are the 13 above; a bool
//     is 0 or 1; arrays nest at most kGgufMaxArrayDepth deep and hold at most
//     kGgufMaxNestedArrays arrays-of-arrays elements in all (memory bound);
//     general.alignment, when present, is a u32 and a non-zero power of two (as ggml and
//     gguf-py require; the spec also asks for a multiple of 8, which neither enforces);
//   - tensors: names are 1..64 bytes (the spec's limit) and unique; n_dims <= 4; the
//     element count fits in int64 (ggml's limit); the type is a ggml type gguf-py 0.19.0
//     knows (an unknown id is an error naming the known ones; a known type this reader
//     cannot dequantize still loads, and only dequantization refuses it); ne[0] is a
//     multiple of the type's block size; byte size = elements / block_size * type_size
//     without overflow; the offset is a multiple of ALIGNMENT; the tensor's bytes lie
//     inside the file; no two tensors' bytes overlap (gaps are allowed, as in gguf-py;
//     ggml additionally requires the tensors in offset order, each padded to ALIGNMENT).
//
// Dequantization (dequantize_row, GgufFile::to_f32) reproduces the reference
// implementation, the dequantize_row_* functions of llama.cpp's ggml/src/ggml-quants.c on
// the block_* layouts of ggml/src/ggml-common.h, bit for bit: f16 scales are widened exactly, and every product and sum
// is rounded to f32 on its own, in the reference's order, never fused into an FMA (the
// file is compiled with -ffp-contract=off); gguf-py's gguf.quants.dequantize computes the
// same and is the cross-check (tests/gguf/). Written from the format description; no
// code is taken from llama.cpp.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Buffers.h"

namespace quantc::runtime {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

// --- ggml tensor types -------------------------------------------------------------------

/// ggml tensor types, with the ids of ggml.h's `enum ggml_type` (gguf-py's
/// GGMLQuantizationType). Ids 4, 5, 31-33 and 36-38 were removed from the format.
enum class GgmlType : std::uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
  TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41,
};

/// The type's name as ggml and gguf-py spell it ("Q4_K", "BF16", ...). Throws
/// RuntimeError for a value that is not one of the enumerators.
std::string_view ggml_type_name(GgmlType type);
/// Elements per block (1 for F32/F16/BF16 and the integer types, 32 for Q4_0/Q4_1/Q8_0,
/// 256 (QK_K) for the K-quants), from gguf-py's GGML_QUANT_SIZES. Throws like
/// ggml_type_name.
std::uint64_t ggml_block_size(GgmlType type);
/// Bytes per block (4 for F32, 18 for Q4_0, 144 for Q4_K, ...), from GGML_QUANT_SIZES.
/// Throws like ggml_type_name.
std::uint64_t ggml_type_size(GgmlType type);
/// True for the types dequantize_row handles: F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K,
/// Q5_K, Q6_K.
bool ggml_type_dequantizable(GgmlType type);
/// The type with id `id`; throws RuntimeError naming the id and listing the known types
/// ("name (id)") when there is none.
GgmlType ggml_type_from_id(std::uint32_t id);
/// "F32, F16, BF16, Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K": the dequantizable types, for
/// messages.
std::string ggml_dequantizable_type_names();

// --- f16 / bf16 --------------------------------------------------------------------------

/// The IEEE binary16 value with bit pattern `bits`, widened to f32 exactly (every f16
/// is an f32: normals, subnormals, zeros and infinities keep their value and sign). A
/// NaN keeps its sign and payload (shifted into the top of the f32 mantissa) and comes
/// out quiet, as ggml's GGML_FP16_TO_FP32 (and the F16C instruction) produce it.
float ggml_fp16_to_f32(std::uint16_t bits);
/// The bfloat16 value with bit pattern `bits`: the f32 whose top 16 bits these are
/// (exact, NaN payloads kept), as ggml's GGML_BF16_TO_FP32.
float ggml_bf16_to_f32(std::uint16_t bits);

// --- quantized blocks --------------------------------------------------------------------
//
// The block structs of ggml-common.h (the reference layouts), byte for byte: a tensor of
// such a type is a plain array of its blocks, block b covering elements
// [b * block_size, (b + 1) * block_size) of the flattened tensor (ne[0] fastest; a row
// never shares a block with the next one, since ne[0] is a multiple of block_size). A
// block's bytes need not be aligned in the file: read one with gguf_block<Block>(), which
// copies it. f16 fields hold the raw bit pattern (ggml_half); widen with
// ggml_fp16_to_f32. Each struct's element(i) is element i of the block (0 <= i <
// block_size, not checked) exactly as ggml's dequantize_row_* (ggml-quants.c, the
// reference) computes it, and its quant(i) gives the integer code a converter repacks into
// other layouts (e.g. quantc's int4-affine-grouped or int8 buffers).

/// Elements per K-quant super-block (ggml's QK_K).
inline constexpr int kGgmlQK_K = 256;
/// Bytes of a Q4_K/Q5_K super-block's packed 6-bit scales and mins (K_SCALE_SIZE).
inline constexpr int kGgmlKScaleSize = 12;

/// The 6-bit scale and min of sub-block j (0..7) of a Q4_K or Q5_K super-block, unpacked
/// from its 12 `scales` bytes as ggml's get_scale_min_k4 does: for j < 4, scale =
/// scales[j] & 63 and min = scales[j + 4] & 63; for j >= 4, the low 4 bits come from
/// scales[j + 4] (scale: low nibble, min: high nibble) and the top 2 bits from the top
/// bits of scales[j - 4] (scale) and scales[j] (min).
struct GgmlScaleMin {
  std::uint8_t scale = 0, min = 0;  // each 0..63
};
GgmlScaleMin ggml_k4_scale_min(const std::uint8_t (&scales)[kGgmlKScaleSize], int j);

/// The 4-bit code of element i of a 32-element Q4_0/Q4_1 block: the low nibble of qs[i]
/// for i < 16, the high nibble of qs[i - 16] otherwise (ggml's block layout).
constexpr int ggml_q4_code(const std::uint8_t (&qs)[16], int i) { return i < 16 ? qs[i] & 0x0F : qs[i - 16] >> 4; }

/// Q4_0 (block_q4_0, 18 bytes): 32 elements, value = d * (q - 8) with q a 4-bit code.
struct GgmlBlockQ4_0 {
  static constexpr GgmlType type = GgmlType::Q4_0;
  static constexpr int block_size = 32;  // QK4_0
  std::uint16_t d;                       // scale, f16 bits
  std::uint8_t qs[block_size / 2];       // element i < 16: low nibble of qs[i]; i >= 16: high nibble of qs[i - 16]

  /// The 4-bit code q of element i (0..15).
  int quant(int i) const { return ggml_q4_code(qs, i); }
  /// (q - 8) * d, as dequantize_row_q4_0.
  float element(int i) const;
};

/// Q4_1 (block_q4_1, 20 bytes): 32 elements, value = d * q + m with q a 4-bit code.
struct GgmlBlockQ4_1 {
  static constexpr GgmlType type = GgmlType::Q4_1;
  static constexpr int block_size = 32;  // QK4_1
  std::uint16_t d;                       // scale, f16 bits
  std::uint16_t m;                       // offset (the block's minimum), f16 bits
  std::uint8_t qs[block_size / 2];       // nibbles as in GgmlBlockQ4_0

  int quant(int i) const { return ggml_q4_code(qs, i); }
  /// q * d + m, as dequantize_row_q4_1 (product rounded, then the sum).
  float element(int i) const;
};

/// Q8_0 (block_q8_0, 34 bytes): 32 elements, value = d * qs[i] with qs signed bytes.
struct GgmlBlockQ8_0 {
  static constexpr GgmlType type = GgmlType::Q8_0;
  static constexpr int block_size = 32;  // QK8_0
  std::uint16_t d;                       // scale, f16 bits
  std::int8_t qs[block_size];            // element i's code, -128..127

  int quant(int i) const { return qs[i]; }
  /// qs[i] * d, as dequantize_row_q8_0.
  float element(int i) const;
};

/// Q4_K (block_q4_K, 144 bytes): a super-block of 256 elements in 8 sub-blocks of 32.
/// Sub-block j has a 6-bit scale sc_j and min m_j (ggml_k4_scale_min); element i of
/// sub-block j = (d * sc_j) * q - (dmin * m_j), q its 4-bit code.
struct GgmlBlockQ4_K {
  static constexpr GgmlType type = GgmlType::Q4_K;
  static constexpr int block_size = kGgmlQK_K;
  std::uint16_t d;                           // super-block scale for the sub-block scales, f16 bits
  std::uint16_t dmin;                        // super-block scale for the sub-block mins, f16 bits
  std::uint8_t scales[kGgmlKScaleSize];      // 8 scales and 8 mins, 6 bits each (ggml_k4_scale_min)
  std::uint8_t qs[block_size / 2];           // codes: elements 64k + l (l < 32) in the low nibble of
                                             // qs[32k + l], elements 64k + 32 + l in its high nibble

  GgmlScaleMin scale_min(int sub_block) const { return ggml_k4_scale_min(scales, sub_block); }
  /// The 4-bit code q of element i (0..15).
  int quant(int i) const { return (qs[32 * (i / 64) + i % 32] >> (i % 64 < 32 ? 0 : 4)) & 0x0F; }
  /// As dequantize_row_q4_K: (d * sc) * q - dmin * m, each product rounded.
  float element(int i) const;
};

/// Q5_K (block_q5_K, 176 bytes): as Q4_K with a fifth bit per code: q = (4-bit code) +
/// 16 * (bit i / 32 of qh[i % 32]), 0..31.
struct GgmlBlockQ5_K {
  static constexpr GgmlType type = GgmlType::Q5_K;
  static constexpr int block_size = kGgmlQK_K;
  std::uint16_t d;                           // f16 bits, as in GgmlBlockQ4_K
  std::uint16_t dmin;                        // f16 bits
  std::uint8_t scales[kGgmlKScaleSize];      // as in GgmlBlockQ4_K
  std::uint8_t qh[block_size / 8];           // high bits: element i's is bit (i / 32) of qh[i % 32]
  std::uint8_t qs[block_size / 2];           // low 4 bits, laid out as GgmlBlockQ4_K::qs

  GgmlScaleMin scale_min(int sub_block) const { return ggml_k4_scale_min(scales, sub_block); }
  /// The 5-bit code q of element i (0..31).
  int quant(int i) const {
    return ((qs[32 * (i / 64) + i % 32] >> (i % 64 < 32 ? 0 : 4)) & 0x0F) | (((qh[i % 32] >> (i / 32)) & 1) << 4);
  }
  /// As dequantize_row_q5_K: (d * sc) * q - dmin * m.
  float element(int i) const;
};

/// Q6_K (block_q6_K, 210 bytes): a super-block of 256 elements in 16 sub-blocks of 16,
/// each with a signed 8-bit scale; element i = (d * scales[i / 16]) * (q - 32), q a
/// 6-bit code whose low 4 bits are in ql and top 2 bits in qh.
struct GgmlBlockQ6_K {
  static constexpr GgmlType type = GgmlType::Q6_K;
  static constexpr int block_size = kGgmlQK_K;
  std::uint8_t ql[block_size / 2];   // low 4 bits: for half h = i / 128 and r = i % 128, byte
                                     // ql[64h + r % 64], low nibble when r < 64, else high
  std::uint8_t qh[block_size / 4];   // top 2 bits: bits 2 * (r / 32) of qh[32h + r % 32]
  std::int8_t scales[block_size / 16];  // sub-block scales, one per 16 elements
  std::uint16_t d;                   // super-block scale, f16 bits

  /// The 6-bit code q of element i (0..63); the weight is (q - 32) times the scale.
  int quant(int i) const {
    const int h = i / 128, r = i % 128;
    const int low = (ql[64 * h + r % 64] >> (r < 64 ? 0 : 4)) & 0x0F;
    const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 0x03;
    return low | (high << 4);
  }
  /// As dequantize_row_q6_K: (d * scales[i / 16]) * (q - 32).
  float element(int i) const;
};

static_assert(sizeof(GgmlBlockQ4_0) == 18 && sizeof(GgmlBlockQ4_1) == 20 && sizeof(GgmlBlockQ8_0) == 34);
static_assert(sizeof(GgmlBlockQ4_K) == 144 && sizeof(GgmlBlockQ5_K) == 176 && sizeof(GgmlBlockQ6_K) == 210);

/// Block `index` of a tensor's bytes (`bytes` as GgufTensor::bytes), copied out (the
/// data need not be aligned). Throws RuntimeError when the block reaches past `bytes`.
template <class Block>
Block gguf_block(std::span<const std::uint8_t> bytes, std::uint64_t index) {
  if (index >= bytes.size() / sizeof(Block)) {
    throw RuntimeError("GGUF block " + std::to_string(index) + " of " + std::string(ggml_type_name(Block::type)) +
                       " is past the end of " + std::to_string(bytes.size()) + " bytes");
  }
  Block block;
  std::memcpy(&block, bytes.data() + index * sizeof(Block), sizeof(Block));
  return block;
}

/// Dequantizes `out.size()` elements of type `type` from `bytes` into `out`, as ggml's
/// dequantize_row_<type> does (F32 is copied, F16 and BF16 are widened exactly).
/// `out.size()` must be a multiple of the type's block size and `bytes.size()` exactly
/// out.size() / block_size * type_size. Throws RuntimeError naming the type and the
/// dequantizable types for any other type, and naming both sizes when they disagree.
void dequantize_row(GgmlType type, std::span<const std::uint8_t> bytes, std::span<float> out);

// --- metadata ----------------------------------------------------------------------------

/// Metadata value types, with the format's ids (gguf_metadata_value_type).
enum class GgufValueType : std::uint32_t {
  UInt8 = 0, Int8 = 1, UInt16 = 2, Int16 = 3, UInt32 = 4, Int32 = 5, Float32 = 6, Bool = 7,
  String = 8, Array = 9, UInt64 = 10, Int64 = 11, Float64 = 12,
};

/// "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64",
/// "i64", "f64" (ggml's short names; "string" and "array" spelled out).
std::string_view gguf_value_type_name(GgufValueType type);

/// Deepest nesting of arrays the reader accepts: an array value is depth 1, an array of
/// arrays depth 2, ...
inline constexpr int kGgufMaxArrayDepth = 8;
/// Most arrays-inside-arrays the reader holds for one file (each costs a GgufValue, far
/// more than its 12 bytes in the file).
inline constexpr std::uint64_t kGgufMaxNestedArrays = std::uint64_t{1} << 20;

/// One metadata value. `type` says which members hold it:
///   UInt8, UInt16, UInt32, UInt64, Bool  -> uint_value (Bool: 0 or 1)
///   Int8, Int16, Int32, Int64            -> int_value
///   Float32, Float64                     -> float_value (Float32 widened exactly)
///   String                               -> string (the stored bytes; UTF-8 by the spec,
///                                           not validated: vocabularies may hold any bytes)
///   Array -> element_type and element_count, and the elements in one of
///            array_bytes   (a scalar element type: element_count * size bytes, as stored,
///                           little-endian; element(i) decodes one),
///            array_strings (String elements), array_values (Array elements).
struct GgufValue {
  GgufValueType type = GgufValueType::UInt8;
  std::uint64_t uint_value = 0;
  std::int64_t int_value = 0;
  double float_value = 0;
  std::string string;
  GgufValueType element_type = GgufValueType::UInt8;
  std::uint64_t element_count = 0;
  std::vector<std::uint8_t> array_bytes;
  std::vector<std::string> array_strings;
  std::vector<GgufValue> array_values;

  /// The value of an unsigned integer type (u8..u64), or of a signed one (i8..i64) that
  /// is not negative. Throws RuntimeError naming the type (or the negative value)
  /// otherwise.
  std::uint64_t as_uint() const;
  /// The value of a signed integer type, or an unsigned one up to INT64_MAX. Throws
  /// RuntimeError otherwise.
  std::int64_t as_int() const;
  /// The value of f32 or f64. Throws RuntimeError for any other type.
  double as_float() const;
  /// The value of a bool. Throws RuntimeError for any other type.
  bool as_bool() const;
  /// The bytes of a string. Throws RuntimeError for any other type.
  const std::string& as_string() const;
  /// Element `index` of an array, as a value of its element type (a copy). Throws
  /// RuntimeError when this is not an array or `index` >= element_count.
  GgufValue element(std::uint64_t index) const;
  /// A short rendering for messages and listings: numbers, quoted strings, arrays as
  /// [a, b, ...] cut after `max_elements` elements.
  std::string to_string(std::size_t max_elements = 8) const;
};

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

// --- tensors and the file ----------------------------------------------------------------

/// One tensor of an opened file. `bytes` points into the file's mapping (or owned copy)
/// and stays valid while the GgufFile that returned it is alive.
struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  /// Dimensions in GGUF order: ne[0] is the row length and varies fastest; ne.size() is
  /// the file's n_dims (0..4; 0 is a scalar). numpy's shape is ne reversed (shape()).
  std::vector<std::uint64_t> ne;
  std::uint64_t offset = 0;       // bytes from the start of the data section (a multiple of the alignment)
  std::uint64_t file_offset = 0;  // bytes from the start of the file
  std::span<const std::uint8_t> bytes;  // the tensor's data: byte_size() bytes

  /// Product of ne (1 for a scalar), in elements; validated to fit in int64.
  std::uint64_t element_count() const;
  /// Elements / block size * type size, in bytes.
  std::uint64_t byte_size() const;
  /// Rows (product of ne[1..], 1 for 0- and 1-D tensors).
  std::uint64_t row_count() const;
  /// Bytes per row: ne[0] / block size * type size (a scalar is one row of one element).
  std::uint64_t row_bytes() const;
  /// ne reversed: the row-major (last index fastest) shape numpy, safetensors and quantc
  /// buffers use.
  std::vector<std::uint64_t> shape() const;
};

/// A parsed, validated GGUF file. Cheap to move; the data is memory-mapped (open) or
/// owned (parse), never copied on access.
class GgufFile {
 public:
  /// Maps `path` read-only and validates it (rules in the file comment). Throws
  /// RuntimeError naming the path for a missing/unreadable file, a folder, an empty file
  /// and every format error.
  static GgufFile open(const std::string& path);
  /// Validates an in-memory file; `label` names it in error messages. Used by the fuzz
  /// target and by tests.
  static GgufFile parse(std::vector<std::uint8_t> bytes, const std::string& label);

  const std::string& label() const { return label_; }
  /// The format version: 2 or 3.
  std::uint32_t version() const { return version_; }
  /// The data alignment in bytes: general.alignment, else 32.
  std::uint64_t alignment() const { return alignment_; }
  /// Bytes from the start of the file to the data section: the end of the tensor infos
  /// rounded up to a multiple of alignment() (in a file without tensors, whose padding
  /// may be missing, it can lie past the end of the file).
  std::uint64_t data_offset() const { return data_offset_; }

  /// The metadata in file order.
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  /// The value of `key`, or nullptr when the file has no such key.
  const GgufValue* find(const std::string& key) const;
  /// The value of `key`; throws RuntimeError naming the file and the key when absent.
  const GgufValue& value(const std::string& key) const;

  /// Tensors in file (tensor-info) order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const;
  /// The tensor called `name`; throws RuntimeError naming the file and the tensor, with a
  /// few present names, when it is absent.
  const GgufTensor& tensor(const std::string& name) const;

  /// The tensor's element_count() values as f32, in the file's order (ne[0] fastest,
  /// i.e. row-major over shape()), dequantized by dequantize_row. Throws RuntimeError
  /// naming the file, the tensor and the dequantizable types when its type is not one of
  /// them, and when the tensor is absent.
  std::vector<float> to_f32(const std::string& name) const;

 private:
  GgufFile() = default;
  void validate(std::span<const std::uint8_t> file);

  std::string label_;
  std::shared_ptr<const void> storage_;  // the mapping or the owned bytes
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::map<std::string, std::size_t> metadata_index_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, std::size_t> tensor_index_;
};

}  // namespace quantc::runtime
