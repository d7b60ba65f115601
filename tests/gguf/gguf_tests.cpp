// The strict GGUF reader and ggml's reference dequantization (runtime/io/Gguf.h):
// hand-built files (valid ones, and every malformation the reader documents), the block
// accessors, and the cross-check against gguf-py (make_reference.py), the Python package
// of the format's reference implementation, which must agree bit for bit.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/io/Gguf.h"
#include "runtime/io/Npy.h"
#include "tests/ProcessFolder.h"

using namespace quantc::runtime;
namespace fs = std::filesystem;

namespace {

// --- a GGUF writer for hand-built files --------------------------------------------------

struct Bytes {
  std::vector<std::uint8_t> data;

  template <class T>
  Bytes& put(T value) {
    const auto* raw = reinterpret_cast<const std::uint8_t*>(&value);
    data.insert(data.end(), raw, raw + sizeof(T));
    return *this;
  }
  Bytes& u8(std::uint8_t value) { return put(value); }
  Bytes& u32(std::uint32_t value) { return put(value); }
  Bytes& u64(std::uint64_t value) { return put(value); }
  Bytes& str(const std::string& text) {
    u64(text.size());
    data.insert(data.end(), text.begin(), text.end());
    return *this;
  }
  Bytes& raw(const std::vector<std::uint8_t>& bytes) {
    data.insert(data.end(), bytes.begin(), bytes.end());
    return *this;
  }
  Bytes& pad_to(std::size_t alignment) {
    while (data.size() % alignment != 0) data.push_back(0);
    return *this;
  }
  std::size_t size() const { return data.size(); }
};

constexpr std::uint32_t kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8,
                        kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12;

Bytes header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
  Bytes bytes;
  bytes.data = {'G', 'G', 'U', 'F'};
  return std::move(bytes.u32(version).u64(tensors).u64(kvs));
}

struct TensorInfo {
  std::string name;
  std::vector<std::uint64_t> ne;
  std::uint32_t type;
  std::uint64_t offset;
};

Bytes& tensor_info(Bytes& bytes, const TensorInfo& info) {
  bytes.str(info.name).u32(static_cast<std::uint32_t>(info.ne.size()));
  for (std::uint64_t extent : info.ne) bytes.u64(extent);
  return bytes.u32(info.type).u64(info.offset);
}

/// A file with no metadata and the given tensors, padded to `alignment` and followed by
/// `data_bytes` bytes of data (value i = i).
std::vector<std::uint8_t> tensors_file(const std::vector<TensorInfo>& infos, std::size_t data_bytes,
                                       std::size_t alignment = 32) {
  Bytes bytes = header(infos.size(), 0);
  for (const TensorInfo& info : infos) tensor_info(bytes, info);
  bytes.pad_to(alignment);
  for (std::size_t i = 0; i < data_bytes; ++i) bytes.u8(static_cast<std::uint8_t>(i));
  return bytes.data;
}

/// A file with one metadata entry (raw value bytes after the key) and no tensors.
std::vector<std::uint8_t> metadata_file(const std::string& key, std::uint32_t type, const Bytes& value) {
  Bytes bytes = header(0, 1);
  bytes.str(key).u32(type).raw(value.data);
  return bytes.data;
}

/// The valid file most tests start from: metadata of every value type (nested array
/// included), then an F32 [4, 2] tensor and a Q4_0 [64, 1] tensor, the last tensor ending
/// exactly at the end of the file (so any shorter prefix is truncated).
std::vector<std::uint8_t> valid_file(std::uint32_t version = 3) {
  Bytes bytes = header(2, 15, version);
  bytes.str("general.architecture").u32(kString).str("llama");
  bytes.str("general.alignment").u32(kU32).u32(32);
  bytes.str("a.u8").u32(kU8).u8(250);
  bytes.str("a.i8").u32(kI8).put<std::int8_t>(-7);
  bytes.str("a.u16").u32(kU16).put<std::uint16_t>(65535);
  bytes.str("a.i16").u32(kI16).put<std::int16_t>(-32768);
  bytes.str("a.i32").u32(kI32).put<std::int32_t>(-5);
  bytes.str("a.f32").u32(kF32).put<float>(0.25f);
  bytes.str("a.bool").u32(kBool).u8(1);
  bytes.str("a.u64").u32(kU64).u64(~std::uint64_t{0});
  bytes.str("a.i64").u32(kI64).put<std::int64_t>(-1);
  bytes.str("a.f64").u32(kF64).put<double>(-2.5);
  bytes.str("a.strings").u32(kArray).u32(kString).u64(2).str("x").str("yz");
  bytes.str("a.ints").u32(kArray).u32(kI32).u64(3).put<std::int32_t>(1).put<std::int32_t>(-2).put<std::int32_t>(3);
  // [[1, 2], []] as u16 arrays in an array
  bytes.str("a.nested").u32(kArray).u32(kArray).u64(2);
  bytes.u32(kU16).u64(2).put<std::uint16_t>(1).put<std::uint16_t>(2);
  bytes.u32(kU16).u64(0);
  tensor_info(bytes, {"weight.f32", {4, 2}, 0, 0});
  tensor_info(bytes, {"weight.q4_0", {64, 1}, 2, 32});
  bytes.pad_to(32);
  for (int i = 0; i < 8; ++i) bytes.put<float>(static_cast<float>(i) - 3.5f);
  // Two Q4_0 blocks: d = 0.5 (f16 0x3800), codes 0..15 then 15..0; d = -2 (0xC000), all 8s.
  bytes.put<std::uint16_t>(0x3800);
  for (int j = 0; j < 16; ++j) bytes.u8(static_cast<std::uint8_t>(j | ((15 - j) << 4)));
  bytes.put<std::uint16_t>(0xC000);
  for (int j = 0; j < 16; ++j) bytes.u8(0x88);
  return bytes.data;
}

std::string error_of(const std::vector<std::uint8_t>& bytes) {
  try {
    GgufFile::parse(bytes, "test.gguf");
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "(accepted)";
}

std::uint32_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }

}  // namespace

// --- valid files -------------------------------------------------------------------------

TEST_CASE("a GGUF v3 file with metadata of every type and two tensors parses", "[gguf]") {
  const auto file = GgufFile::parse(valid_file(), "valid.gguf");
  CHECK(file.version() == 3);
  CHECK(file.alignment() == 32);
  REQUIRE(file.metadata().size() == 15);
  CHECK(file.metadata()[0].key == "general.architecture");
  CHECK(file.value("general.architecture").as_string() == "llama");
  CHECK(file.value("a.u8").as_uint() == 250);
  CHECK(file.value("a.i8").as_int() == -7);
  CHECK(file.value("a.u16").as_uint() == 65535);
  CHECK(file.value("a.i16").as_int() == -32768);
  CHECK(file.value("a.i32").as_int() == -5);
  CHECK(file.value("a.f32").as_float() == 0.25);
  CHECK(file.value("a.bool").as_bool());
  CHECK(file.value("a.u64").as_uint() == ~std::uint64_t{0});
  CHECK(file.value("a.i64").as_int() == -1);
  CHECK(file.value("a.f64").as_float() == -2.5);
  const GgufValue& strings = file.value("a.strings");
  CHECK(strings.type == GgufValueType::Array);
  CHECK(strings.element_type == GgufValueType::String);
  CHECK(strings.array_strings == std::vector<std::string>{"x", "yz"});
  CHECK(strings.element(1).as_string() == "yz");
  const GgufValue& ints = file.value("a.ints");
  CHECK(ints.element_count == 3);
  CHECK(ints.element(1).as_int() == -2);
  CHECK(ints.to_string() == "[1, -2, 3]");
  const GgufValue& nested = file.value("a.nested");
  REQUIRE(nested.array_values.size() == 2);
  CHECK(nested.array_values[0].element_type == GgufValueType::UInt16);
  CHECK(nested.element(0).element(1).as_uint() == 2);
  CHECK(nested.array_values[1].element_count == 0);
  CHECK(nested.to_string() == "[[1, 2], []]");
  CHECK(file.find("a.missing") == nullptr);
  CHECK_THROWS_WITH(file.value("a.missing"), Catch::Contains("valid.gguf: no metadata key 'a.missing'"));

  // Accessors refuse the wrong type and name it.
  CHECK_THROWS_WITH(file.value("a.u8").as_string(), Catch::Contains("is a u8, not a string"));
  CHECK_THROWS_WITH(file.value("a.i8").as_uint(), Catch::Contains("-7 is negative"));
  CHECK_THROWS_WITH(file.value("a.u64").as_int(), Catch::Contains("does not fit in int64"));
  CHECK_THROWS_WITH(file.value("a.f32").as_bool(), Catch::Contains("is a f32, not a bool"));
  CHECK_THROWS_WITH(file.value("a.strings").as_float(), Catch::Contains("is a array, not a float"));
  CHECK_THROWS_WITH(ints.element(3), Catch::Contains("index 3 is out of range for 3 elements"));
  CHECK_THROWS_WITH(file.value("a.u8").element(0), Catch::Contains("not an array"));

  REQUIRE(file.tensors().size() == 2);
  const GgufTensor& f32 = file.tensor("weight.f32");
  CHECK(f32.type == GgmlType::F32);
  CHECK(f32.ne == std::vector<std::uint64_t>{4, 2});
  CHECK(f32.shape() == std::vector<std::uint64_t>{2, 4});
  CHECK(f32.element_count() == 8);
  CHECK(f32.row_count() == 2);
  CHECK(f32.row_bytes() == 16);
  CHECK(f32.byte_size() == 32);
  CHECK(f32.offset == 0);
  CHECK(f32.file_offset == file.data_offset());
  CHECK(file.data_offset() % 32 == 0);
  CHECK(file.to_f32("weight.f32") == std::vector<float>{-3.5f, -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f});

  const GgufTensor& q4 = file.tensor("weight.q4_0");
  CHECK(q4.type == GgmlType::Q4_0);
  CHECK(q4.byte_size() == 36);
  CHECK(q4.row_bytes() == 36);
  CHECK(q4.offset == 32);
  const auto values = file.to_f32("weight.q4_0");
  REQUIRE(values.size() == 64);
  for (int j = 0; j < 16; ++j) {
    CHECK(values[j] == 0.5f * static_cast<float>(j - 8));        // low nibbles: elements 0..15
    CHECK(values[16 + j] == 0.5f * static_cast<float>(7 - j));   // high nibbles: elements 16..31
    CHECK(values[32 + j] == -0.0f);                               // (8 - 8) * -2
    CHECK(std::signbit(values[32 + j]));
  }
  const auto block = gguf_block<GgmlBlockQ4_0>(q4.bytes, 0);
  CHECK(block.d == 0x3800);
  CHECK(block.quant(0) == 0);
  CHECK(block.quant(16) == 15);
  CHECK(block.element(17) == 0.5f * 6.0f);
  CHECK_THROWS_WITH(gguf_block<GgmlBlockQ4_0>(q4.bytes, 2), Catch::Contains("block 2 of Q4_0 is past the end of 36 bytes"));

  CHECK(file.contains("weight.f32"));
  CHECK_FALSE(file.contains("weight"));
  CHECK_THROWS_WITH(file.tensor("weight"), Catch::Contains("no tensor named 'weight' (2 tensors present: weight.f32, "
                                                           "weight.q4_0)"));
}

TEST_CASE("GGUF version 2 files parse like version 3", "[gguf]") {
  const auto file = GgufFile::parse(valid_file(2), "v2.gguf");
  CHECK(file.version() == 2);
  CHECK(file.to_f32("weight.q4_0") == GgufFile::parse(valid_file(3), "v3.gguf").to_f32("weight.q4_0"));
}

TEST_CASE("the default alignment is 32 and general.alignment overrides it with gaps allowed between tensors", "[gguf]") {
  // No general.alignment: the data section starts at the next multiple of 32.
  auto file = GgufFile::parse(tensors_file({{"t", {8}, 0, 0}}, 32), "default.gguf");
  CHECK(file.alignment() == 32);
  CHECK(file.data_offset() % 32 == 0);
  CHECK(file.tensor("t").bytes.size() == 32);

  // general.alignment = 8, and a gap between tensors (allowed, as gguf-py allows it).
  Bytes bytes = header(2, 1);
  bytes.str("general.alignment").u32(kU32).u32(8);
  tensor_info(bytes, {"b", {2}, 0, 16});
  tensor_info(bytes, {"a", {2}, 0, 0});
  bytes.pad_to(8);
  const std::size_t data_offset = bytes.size();
  for (int i = 0; i < 6; ++i) bytes.put<float>(static_cast<float>(i));
  file = GgufFile::parse(bytes.data, "align8.gguf");
  CHECK(file.alignment() == 8);
  CHECK(file.data_offset() == data_offset);
  CHECK(file.tensors()[0].name == "b");  // file order, not offset order
  CHECK(file.to_f32("b") == std::vector<float>{4.0f, 5.0f});
  CHECK(file.to_f32("a") == std::vector<float>{0.0f, 1.0f});

  // A file without tensors needs no data section, nor its padding.
  const auto empty = GgufFile::parse(header(0, 0).data, "empty.gguf");
  CHECK(empty.tensors().empty());
  CHECK(empty.metadata().empty());
}

TEST_CASE("zero-sized and scalar tensors", "[gguf]") {
  const auto file = GgufFile::parse(
      tensors_file({{"empty", {0, 3}, 12, 0}, {"scalar", {}, 0, 0}, {"also_empty", {256, 0}, 14, 32}}, 32), "z.gguf");
  CHECK(file.tensor("empty").element_count() == 0);
  CHECK(file.tensor("empty").bytes.empty());
  CHECK(file.to_f32("empty").empty());
  CHECK(file.tensor("scalar").element_count() == 1);
  CHECK(file.tensor("scalar").shape().empty());
  CHECK(file.tensor("scalar").row_bytes() == 4);
  CHECK(file.to_f32("scalar").size() == 1);
  CHECK(file.to_f32("also_empty").empty());
}

// --- malformed files ---------------------------------------------------------------------

TEST_CASE("every truncation of a valid GGUF file is a clean error", "[gguf]") {
  const auto bytes = valid_file();
  REQUIRE(error_of(bytes) == "(accepted)");
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    INFO("prefix of " << length << " of " << bytes.size() << " bytes");
    const std::string error = error_of(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + length));
    CHECK_THAT(error, Catch::StartsWith("test.gguf: invalid GGUF file: ") && Catch::Contains("truncated"));
  }
  // The messages name the field being read.
  CHECK_THAT(error_of(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 6)),
             Catch::Contains("header: truncated at byte 4 of 6: the version needs 4 bytes"));
  CHECK_THAT(error_of(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 40)),
             Catch::Contains("header: 15 metadata entries need at least 14 bytes each but only 16 bytes follow"));
  CHECK_THAT(error_of(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 240)),
             Catch::Contains("metadata entry 9: truncated at byte 235 of 240: key needs 8 bytes"));
  CHECK_THAT(error_of(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 250)),
             Catch::Contains("metadata key 'a.u64': truncated at byte 248 of 250: value type needs 4 bytes"));
  CHECK_THAT(error_of(std::vector<std::uint8_t>(bytes.begin(), bytes.end() - 1)),
             Catch::Contains("tensor 'weight.q4_0': data at offset 32 of 36 bytes reaches past the end of the 67-byte "
                             "data section (truncated file?)"));
}

TEST_CASE("bad magic or version or byte order is refused with the reason", "[gguf]") {
  auto bytes = valid_file();
  bytes[0] = 'g';
  CHECK_THAT(error_of(bytes), Catch::Contains("bad magic 'gGUF'") && Catch::Contains("starts with 'GGUF'"));
  CHECK_THAT(error_of({'G', 'G', 'M', 'L', 0, 0, 0, 0}), Catch::Contains("bad magic 'GGML' (bytes 47 47 4d 4c)"));
  CHECK_THAT(error_of(valid_file(1)), Catch::Contains("version 1 is not supported"));
  CHECK_THAT(error_of(valid_file(0)), Catch::Contains("unsupported version 0 (this reader supports versions 2 and 3)"));
  CHECK_THAT(error_of(valid_file(4)), Catch::Contains("unsupported version 4"));
  CHECK_THAT(error_of(valid_file(0x03000000)),
             Catch::Contains("version field 0x03000000") && Catch::Contains("big-endian") &&
                 Catch::Contains("gguf_convert_endian.py"));
  CHECK_THAT(error_of(header(0, ~std::uint64_t{0}).data),
             Catch::Contains("18446744073709551615 metadata entries need at least 14 bytes each but only 0 bytes follow"));
  CHECK_THAT(error_of(header(1ull << 40, 0).data), Catch::Contains("1099511627776 tensor infos need at least 25 bytes"));
}

TEST_CASE("malformed metadata is refused naming the key", "[gguf]") {
  struct Case {
    std::vector<std::uint8_t> file;
    std::string expected;
  };
  Bytes one_byte;
  one_byte.u8(2);
  Bytes deep;  // 9 arrays, each holding one array, the innermost one an empty u8 array
  for (int level = 0; level < 8; ++level) deep.u32(kArray).u64(1);
  deep.u32(kU8).u64(0);
  Bytes eight_deep;
  for (int level = 0; level < 7; ++level) eight_deep.u32(kArray).u64(1);
  eight_deep.u32(kU8).u64(0);
  Bytes duplicate = header(0, 2);
  duplicate.str("k").u32(kU8).u8(1).str("k").u32(kU8).u8(2);
  Bytes empty_key = header(0, 1);
  empty_key.str("").u32(kU32).u32(1);
  Bytes long_key = header(0, 1);
  long_key.str(std::string(65536, 'k')).u32(kU8).u8(1);
  const std::vector<Case> cases = {
      {duplicate.data, "metadata key 'k': the key appears twice (entries 0 and 1)"},
      {empty_key.data, "metadata entry 0: the key is empty"},
      {long_key.data, "metadata entry 0: key of 65536 bytes is longer than 65535 bytes"},
      {metadata_file("k", 13, one_byte), "metadata key 'k': unknown value type 13 (known: 0 u8, 1 i8"},
      {metadata_file("k", kBool, one_byte), "metadata key 'k': bool value 2 is neither 0 nor 1"},
      {metadata_file("k", kArray, Bytes().u32(kBool).u64(3).u8(0).u8(1).u8(7)),
       "metadata key 'k' element [2]: bool value 7 is neither 0 nor 1"},
      {metadata_file("k", kArray, Bytes().u32(kArray).u64(2).u32(kString).u64(1).str("x").u32(99)),
       "metadata key 'k' element [1]: unknown array element type 99"},
      {metadata_file("k", kArray, Bytes().u32(kString).u64(2).str("x").u64(~std::uint64_t{0})),
       "metadata key 'k' element [1]: truncated at byte"},
      {metadata_file("k", kArray, deep), "metadata key 'k' element [0][0][0][0][0][0][0][0]: arrays nested deeper than 8"},
      {metadata_file("k", kArray, Bytes().u32(kU64).u64(1ull << 61)),
       "array of 2305843009213693952 u64 elements needs at least 8 bytes per element but only 0 bytes remain"},
      {metadata_file("k", kArray, Bytes().u32(kArray).u64(~std::uint64_t{0})),
       "array of 18446744073709551615 array elements needs at least 12 bytes per element"},
      {metadata_file("k", kString, Bytes().u64(100).u8('a')), "string value of 100 bytes reaches past the end"},
      {metadata_file("general.alignment", kU64, Bytes().u64(32)),
       "metadata key 'general.alignment': the alignment is a u64; it must be a u32"},
      {metadata_file("general.alignment", kU32, Bytes().u32(48)),
       "alignment 48 is not a power of two (ggml and gguf-py require a non-zero power of two"},
      {metadata_file("general.alignment", kU32, Bytes().u32(0)), "alignment 0 is not a power of two"},
  };
  for (const Case& item : cases) {
    INFO(item.expected);
    CHECK_THAT(error_of(item.file), Catch::StartsWith("test.gguf: invalid GGUF file: ") && Catch::Contains(item.expected));
  }
  // Eight levels is the limit, not past it.
  CHECK(GgufFile::parse(metadata_file("k", kArray, eight_deep), "deep.gguf").value("k").element_count == 1);
}

TEST_CASE("a file of over 2^20 arrays nested in arrays is refused before they are held", "[gguf]") {
  const std::uint64_t count = kGgufMaxNestedArrays + 1;
  Bytes value;
  value.u32(kArray).u64(count);
  value.data.resize(value.data.size() + count * 12);  // room for that many empty u8 arrays
  CHECK_THAT(error_of(metadata_file("k", kArray, value)),
             Catch::Contains("more than 1048576 arrays nested in arrays in all"));
}

TEST_CASE("malformed tensor infos are refused naming the tensor", "[gguf]") {
  struct Case {
    std::vector<std::uint8_t> file;
    std::string expected;
  };
  const std::uint64_t big = 1ull << 32;
  Bytes long_name = header(1, 0);
  tensor_info(long_name, {std::string(65, 'n'), {1}, 0, 0});
  Bytes five_dims = header(1, 0);
  tensor_info(five_dims, {"t", {1, 1, 1, 1, 1}, 0, 0});
  const std::vector<Case> cases = {
      {tensors_file({{"t", {4}, 0, 0}, {"t", {4}, 0, 32}}, 64), "tensor 't': the name appears twice (tensor infos 0 and 1)"},
      {tensors_file({{"", {4}, 0, 0}}, 16), "tensor info 0: the tensor name is empty"},
      {long_name.data, "tensor info 0: tensor name of 65 bytes is longer than 64 bytes"},
      {five_dims.data, "tensor 't': n_dims 5 exceeds ggml's maximum of 4"},
      {tensors_file({{"t", {big, big}, 0, 0}}, 0), "tensor 't': dimensions ne = [4294967296, 4294967296] overflow"},
      {tensors_file({{"t", {2, 1ull << 62}, 0, 0}}, 0), "dimensions ne = [2, 4611686018427387904] overflow ggml's int64"},
      {tensors_file({{"t", {1ull << 63}, 0, 0}}, 0), "dimensions ne = [9223372036854775808] overflow"},
      {tensors_file({{"t", {1ull << 61, 2}, 0, 0}}, 0), "ne = [2305843009213693952, 2] of F32 overflows a 64-bit byte count"},
      {tensors_file({{"t", {4}, 4, 0}}, 16), "tensor 't': unknown ggml type 4 (known: F32 (0), F16 (1), Q4_0 (2)"},
      {tensors_file({{"t", {4}, 99, 0}}, 16), "unknown ggml type 99"},
      {tensors_file({{"t", {48, 2}, 2, 0}}, 64), "tensor 't': row length ne[0] = 48 is not a multiple of Q4_0's block size 32"},
      {tensors_file({{"t", {128}, 12, 0}}, 144), "row length ne[0] = 128 is not a multiple of Q4_K's block size 256"},
      {tensors_file({{"t", {}, 2, 0}}, 18), "row length ne[0] = 1 is not a multiple of Q4_0's block size 32"},
      {tensors_file({{"t", {4}, 0, 16}}, 64), "tensor 't': data offset 16 is not a multiple of the alignment 32"},
      {tensors_file({{"a", {16}, 0, 0}, {"b", {4}, 0, 32}}, 64),
       "tensor 'b': data [32, 48) overlaps tensor 'a' at [0, 64)"},
      {tensors_file({{"a", {8}, 0, 32}, {"b", {16}, 0, 0}}, 64), "tensor 'a': data [32, 64) overlaps tensor 'b' at [0, 64)"},
      {tensors_file({{"t", {4}, 0, 32}}, 40), "tensor 't': data at offset 32 of 16 bytes reaches past the end of the "
                                              "40-byte data section (truncated file?)"},
      {tensors_file({{"t", {4}, 0, 1ull << 63}}, 16), "data at offset 9223372036854775808 of 16 bytes reaches past"},
      {tensors_file({{"t", {1ull << 40}, 0, 0}}, 16), "data at offset 0 of 4398046511104 bytes reaches past"},
  };
  for (const Case& item : cases) {
    INFO(item.expected);
    CHECK_THAT(error_of(item.file), Catch::StartsWith("test.gguf: invalid GGUF file: ") && Catch::Contains(item.expected));
  }
  // Zero-sized tensors overlap nothing, wherever they point.
  CHECK_NOTHROW(GgufFile::parse(tensors_file({{"a", {16}, 0, 0}, {"z", {0}, 0, 32}}, 64), "z.gguf"));
}

TEST_CASE("known types without a dequantizer load and only dequantization refuses them", "[gguf]") {
  // Q5_0 (6): 32 elements in 22 bytes; IQ2_XXS (16): 256 in 66.
  const auto file = GgufFile::parse(tensors_file({{"q5", {64}, 6, 0}, {"iq", {256}, 16, 64}}, 130), "mixed.gguf");
  CHECK(file.tensor("q5").type == GgmlType::Q5_0);
  CHECK(file.tensor("q5").byte_size() == 44);
  CHECK(file.tensor("iq").byte_size() == 66);
  CHECK_THROWS_WITH(file.to_f32("q5"), Catch::Contains("mixed.gguf: tensor 'q5' has type Q5_0 (6), which cannot be "
                                                       "dequantized; supported types are F32, F16, BF16, Q4_0, Q4_1, "
                                                       "Q8_0, Q4_K, Q5_K, Q6_K"));
  std::vector<float> out(32);
  CHECK_THROWS_WITH(dequantize_row(GgmlType::IQ2_XXS, {}, out), Catch::Contains("cannot dequantize ggml type IQ2_XXS (16)"));
}

TEST_CASE("open maps a file and reports missing files and folders and empty files", "[gguf]") {
  const fs::path directory = quantc_test::temporary_process_folder("quantc_gguf_");
  fs::create_directories(directory);
  const fs::path path = directory / "model.gguf";
  {
    const auto bytes = valid_file();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const auto file = GgufFile::open(path.string());
  CHECK(file.label() == path.string());
  CHECK(file.to_f32("weight.f32").size() == 8);
  CHECK_THROWS_WITH(GgufFile::open((directory / "absent.gguf").string()), Catch::Contains("cannot open GGUF file"));
  CHECK_THROWS_WITH(GgufFile::open(directory.string()), Catch::Contains("not a regular file (it is a folder)"));
  std::ofstream(directory / "empty.gguf").close();
  CHECK_THROWS_WITH(GgufFile::open((directory / "empty.gguf").string()), Catch::Contains("the file is empty"));
  fs::resize_file(path, 40);
  CHECK_THROWS_WITH(GgufFile::open(path.string()),
                    Catch::Contains(path.string() + ": invalid GGUF file: header: 15 metadata entries"));
  fs::remove_all(directory);
}

// --- types, f16 and blocks ---------------------------------------------------------------

TEST_CASE("the ggml type table has the names and block and type sizes of gguf-py", "[gguf]") {
  CHECK(ggml_type_name(GgmlType::Q4_K) == "Q4_K");
  CHECK(ggml_block_size(GgmlType::Q4_K) == 256);
  CHECK(ggml_type_size(GgmlType::Q4_K) == 144);
  CHECK(ggml_type_size(GgmlType::Q5_K) == 176);
  CHECK(ggml_type_size(GgmlType::Q6_K) == 210);
  CHECK(ggml_type_size(GgmlType::Q4_0) == 18);
  CHECK(ggml_type_size(GgmlType::Q4_1) == 20);
  CHECK(ggml_type_size(GgmlType::Q8_0) == 34);
  CHECK(ggml_type_size(GgmlType::BF16) == 2);
  CHECK(ggml_type_size(GgmlType::IQ1_M) == 56);
  CHECK(ggml_type_from_id(30) == GgmlType::BF16);
  CHECK_THROWS_WITH(ggml_type_from_id(31), Catch::Contains("unknown ggml type 31 (known: F32 (0)"));
  CHECK(ggml_type_dequantizable(GgmlType::Q6_K));
  CHECK_FALSE(ggml_type_dequantizable(GgmlType::Q3_K));
  CHECK(gguf_value_type_name(GgufValueType::Array) == "array");
}

TEST_CASE("f16 widens exactly and a signalling NaN comes out quiet as in ggml", "[gguf]") {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const std::uint32_t exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
    const float value = ggml_fp16_to_f32(static_cast<std::uint16_t>(bits));
    INFO("f16 bits 0x" << std::hex << bits);
    CHECK(std::signbit(value) == ((bits & 0x8000) != 0));
    if (exponent == 31) {
      if (mantissa == 0) {
        CHECK(std::isinf(value));
      } else {
        // Quiet, with the payload in the top of the mantissa.
        CHECK((bits_of(value) & 0x7FFFFFFF) == (0x7FC00000u | (mantissa << 13)));
      }
    } else {
      const double expected = std::ldexp(exponent == 0 ? mantissa : (mantissa | 0x400), exponent == 0 ? -24 : static_cast<int>(exponent) - 25);
      CHECK(std::fabs(static_cast<double>(value)) == expected);
    }
  }
  CHECK(bits_of(ggml_fp16_to_f32(0x7C01)) == 0x7FC02000u);
  CHECK(bits_of(ggml_fp16_to_f32(0xFE00)) == 0xFFC00000u);
  CHECK(bits_of(ggml_bf16_to_f32(0x7F81)) == 0x7F810000u);  // bf16 keeps even a signalling NaN
  CHECK(ggml_bf16_to_f32(0x3F80) == 1.0f);
}

TEST_CASE("K-quant 6-bit scales and mins unpack as get_scale_min_k4", "[gguf]") {
  // Pack 8 scales and 8 mins (6 bits each) into the 12 bytes as the layout describes.
  const std::uint8_t scale[8] = {1, 62, 33, 7, 63, 17, 40, 5};
  const std::uint8_t min[8] = {0, 9, 63, 31, 2, 48, 21, 60};
  std::uint8_t packed[kGgmlKScaleSize] = {};
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<std::uint8_t>((scale[j] & 63) | ((scale[j + 4] >> 4) << 6));
    packed[j + 4] = static_cast<std::uint8_t>((min[j] & 63) | ((min[j + 4] >> 4) << 6));
    packed[j + 8] = static_cast<std::uint8_t>((scale[j + 4] & 15) | ((min[j + 4] & 15) << 4));
  }
  for (int j = 0; j < 8; ++j) {
    INFO("sub-block " << j);
    CHECK(ggml_k4_scale_min(packed, j).scale == scale[j]);
    CHECK(ggml_k4_scale_min(packed, j).min == min[j]);
  }

  // A Q4_K block with those scales: element i of sub-block j is d * sc_j * q - dmin * m_j.
  GgmlBlockQ4_K block{};
  block.d = 0x3C00;     // 1.0
  block.dmin = 0x3800;  // 0.5
  std::memcpy(block.scales, packed, sizeof packed);
  for (int i = 0; i < 128; ++i) block.qs[i] = static_cast<std::uint8_t>((i * 7) & 0xFF);
  for (int i = 0; i < 256; ++i) {
    const int j = i / 32;
    CHECK(block.element(i) == static_cast<float>(scale[j]) * static_cast<float>(block.quant(i)) - 0.5f * static_cast<float>(min[j]));
  }
  CHECK(block.quant(0) == 0);
  CHECK(block.quant(1) == 7);
  CHECK(block.quant(32) == 0);  // high nibble of qs[0]
  CHECK(block.quant(33) == 0);  // high nibble of qs[1] = 7
  CHECK(block.quant(35) == 1);  // high nibble of qs[3] = 21
  CHECK(block.quant(64) == ((32 * 7) & 0x0F));

  // Q5_K: the fifth bit of element i is bit i / 32 of qh[i % 32].
  GgmlBlockQ5_K q5{};
  q5.qh[3] = 0x81;  // elements 3 (bit 0) and 7 * 32 + 3 = 227 (bit 7)
  CHECK(q5.quant(3) == 16);
  CHECK(q5.quant(227) == 16);
  CHECK(q5.quant(35) == 0);

  // Q6_K: element 200 is in half 1 (r = 72): ql[64 + 8] high nibble, qh[32 + 8] bits 4-5.
  GgmlBlockQ6_K q6{};
  q6.ql[72] = 0xA0;
  q6.qh[40] = 0x30;
  q6.scales[200 / 16] = -3;
  q6.d = 0x4000;  // 2.0
  CHECK(q6.quant(200) == (0xA | (3 << 4)));
  CHECK(q6.element(200) == (2.0f * -3.0f) * static_cast<float>((0xA | (3 << 4)) - 32));
}

TEST_CASE("dequantize_row checks the sizes it is given", "[gguf]") {
  std::vector<float> out(31);
  std::vector<std::uint8_t> bytes(18);
  CHECK_THROWS_WITH(dequantize_row(GgmlType::Q4_0, bytes, out),
                    Catch::Contains("31 elements of Q4_0 need 0 bytes (a multiple of 32 elements, 18 bytes per block) "
                                    "but 18 bytes were given"));
  out.resize(64);
  CHECK_THROWS_WITH(dequantize_row(GgmlType::Q4_0, bytes, out), Catch::Contains("need 36 bytes"));
  out.resize(32);
  CHECK_NOTHROW(dequantize_row(GgmlType::Q4_0, bytes, out));
}

// --- the cross-check against gguf-py -----------------------------------------------------

namespace {

bool gguf_py_required() {
  for (const char* variable : {"QUANTC_REQUIRE_PTXAS", "QUANTC_REQUIRE_GGUF_PY"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && std::string(value) == "1") return true;
  }
  return false;
}

/// Runs make_reference.py into `out`; returns its exit status and output.
std::pair<int, std::string> run_make_reference(const fs::path& out) {
  const std::string command = "PYTHONPATH='" QUANTC_GGUF_PYTHONPATH "' '" QUANTC_GGUF_PYTHON "' '" QUANTC_SOURCE_DIR
                              "/tests/gguf/make_reference.py' --out '" +
                              out.string() + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  while (std::size_t read = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, read);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

void check_metadata(const GgufValue& value, const std::string& kind, const nlohmann::json& expected) {
  if (kind == "u8" || kind == "u16" || kind == "u32" || kind == "u64") {
    CHECK(gguf_value_type_name(value.type) == kind);
    CHECK(value.as_uint() == expected.get<std::uint64_t>());
  } else if (kind == "i8" || kind == "i16" || kind == "i32" || kind == "i64") {
    CHECK(gguf_value_type_name(value.type) == kind);
    CHECK(value.as_int() == expected.get<std::int64_t>());
  } else if (kind == "f32") {
    CHECK(value.type == GgufValueType::Float32);
    CHECK(value.as_float() == static_cast<double>(static_cast<float>(expected.get<double>())));
  } else if (kind == "f64") {
    CHECK(value.type == GgufValueType::Float64);
    CHECK(value.as_float() == expected.get<double>());
  } else if (kind == "bool") {
    CHECK(value.as_bool() == expected.get<bool>());
  } else if (kind == "string") {
    CHECK(value.as_string() == expected.get<std::string>());
  } else {
    REQUIRE(kind == "array");
    REQUIRE(value.type == GgufValueType::Array);
    REQUIRE(value.element_count == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const nlohmann::json& item = expected[i];
      // gguf-py's writer infers the element type: str -> string, list -> array,
      // float -> f32, bool -> bool, int -> i32.
      const std::string item_kind = item.is_string()    ? "string"
                                    : item.is_array()   ? "array"
                                    : item.is_boolean() ? "bool"
                                    : item.is_number_float() ? "f32"
                                                             : "i32";
      check_metadata(value.element(i), item_kind, item);
    }
  }
}

}  // namespace

TEST_CASE("files written by gguf-py read back with their metadata and dequantize bit for bit as gguf-py does", "[gguf]") {
  const fs::path out = quantc_test::process_folder(fs::path(QUANTC_BINARY_DIR) / "gguf_reference", "");
  fs::remove_all(out);
  const auto [status, output] = run_make_reference(out);
  if (status == 3 || status == 127) {
    std::string said = output;
    while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.pop_back();
    const std::string reason = "gguf-py (pip package gguf 0.19.0) cannot be run with " QUANTC_GGUF_PYTHON
                               " (PYTHONPATH " QUANTC_GGUF_PYTHONPATH "): " + said +
                               " (scripts/setup.sh installs it)";
    if (gguf_py_required()) FAIL(reason << " (QUANTC_REQUIRE_PTXAS=1 or QUANTC_REQUIRE_GGUF_PY=1: a failure, not a skip)");
    WARN("SKIPPED: " << reason << "; set QUANTC_REQUIRE_GGUF_PY=1 to fail instead");
    return;
  }
  INFO(output);
  REQUIRE(status == 0);
  std::ifstream manifest_file(out / "manifest.json");
  const nlohmann::json manifest = nlohmann::json::parse(manifest_file);
  INFO("gguf-py " << manifest["gguf_version"].get<std::string>());

  std::map<std::string, GgufFile> files;
  for (const auto& [name, alignment] : manifest["alignments"].items()) {
    GgufFile file = GgufFile::open((out / name).string());
    CHECK(file.version() == 3);
    CHECK(file.alignment() == alignment.get<std::uint64_t>());
    CHECK(file.value("general.architecture").as_string() == "quantc-test");
    for (const nlohmann::json& entry : manifest["metadata"]) {
      const std::string key = entry["key"].get<std::string>();
      INFO(name << ": metadata key " << key);
      const GgufValue* value = file.find(key);
      REQUIRE(value != nullptr);
      check_metadata(*value, entry["type"].get<std::string>(), entry["value"]);
    }
    files.emplace(name, std::move(file));
  }

  std::map<std::string, int> tensors_per_type;
  for (const nlohmann::json& row : manifest["tensors"]) {
    const std::string name = row["name"].get<std::string>();
    const GgufFile& file = files.at(row["file"].get<std::string>());
    INFO(row["file"].get<std::string>() << ": tensor " << name);
    const GgufTensor& tensor = file.tensor(name);
    CHECK(ggml_type_name(tensor.type) == row["type"].get<std::string>());
    CHECK(tensor.shape() == row["shape"].get<std::vector<std::uint64_t>>());
    const NpyArray expected = read_npy((out / row["npy"].get<std::string>()).string());
    REQUIRE(expected.buffer.element == quantc::ir::ScalarType::F32);
    CHECK(expected.shape == tensor.shape());
    const std::vector<float> values = file.to_f32(name);
    REQUIRE(values.size() * 4 == expected.buffer.bytes.size());
    std::size_t mismatches = 0, first = 0;
    const std::vector<float> reference = expected.buffer.as<float>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (bits_of(values[i]) != bits_of(reference[i]) && mismatches++ == 0) first = i;
    }
    if (mismatches != 0) {
      FAIL_CHECK(mismatches << " of " << values.size() << " elements differ; the first, element " << first << ", is 0x"
                            << std::hex << bits_of(values[first]) << " (" << values[first] << ") but gguf-py gives 0x"
                            << bits_of(reference[first]) << " (" << reference[first] << ")");
    }
    ++tensors_per_type[row["type"].get<std::string>()];
  }
  // Every dequantizable type was covered, with several tensors each.
  for (const char* type : {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K"}) {
    INFO(type);
    CHECK(tensors_per_type[type] >= 2);
  }
  fs::remove_all(out);
}
