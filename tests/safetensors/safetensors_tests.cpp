// The strict safetensors reader and the writer (runtime/io/Safetensors.h).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "runtime/io/Safetensors.h"

using namespace quantc::runtime;
namespace fs = std::filesystem;

namespace {

std::vector<std::uint8_t> read_bytes(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(file), {});
}

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<std::uint8_t> with_header(const std::string& header, std::size_t data_bytes) {
  std::vector<std::uint8_t> file(8 + header.size() + data_bytes);
  std::uint64_t size = header.size();
  std::memcpy(file.data(), &size, 8);
  std::memcpy(file.data() + 8, header.data(), header.size());
  return file;
}

std::string error_of(const std::vector<std::uint8_t>& bytes) {
  try {
    SafetensorsFile::parse(bytes, "test.safetensors");
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("writer output parses back with names, dtypes, shapes, values and metadata") {
  std::vector<SafetensorsTensorData> tensors = {
      {"w", SafetensorsDtype::U32, {2, 1}, {1, 0, 0, 0, 0xEF, 0xCD, 0xAB, 0x89}},
      {"scale", SafetensorsDtype::F32, {3}, f32_bytes({0.5f, -1.0f, 3.0f})},
      {"empty", SafetensorsDtype::U8, {0}, {}},
  };
  auto bytes = to_safetensors_bytes(tensors, {{"scheme", "nf4"}});
  std::uint64_t header_size;
  std::memcpy(&header_size, bytes.data(), 8);
  CHECK(header_size % 8 == 0);  // padded so data is 8-byte aligned
  auto file = SafetensorsFile::parse(bytes, "written");
  REQUIRE(file.tensors().size() == 3);
  CHECK(file.metadata().at("scheme") == "nf4");
  const auto& w = file.tensor("w");
  CHECK(w.dtype == SafetensorsDtype::U32);
  CHECK(w.shape == std::vector<std::uint64_t>{2, 1});
  CHECK(w.begin == 0);
  CHECK(w.end == 8);
  CHECK(w.bytes[7] == 0x89);
  CHECK(file.to_f32("scale") == std::vector<float>{0.5f, -1.0f, 3.0f});
  CHECK(file.tensor("empty").element_count() == 0);
  CHECK_THROWS_WITH(file.tensor("nope"), Catch::Contains("no tensor named 'nope'"));
  CHECK_THROWS_WITH(file.to_f32("w"), Catch::Contains("dtype U32"));
}

TEST_CASE("writer rejects inconsistent tensors") {
  CHECK_THROWS_WITH(to_safetensors_bytes({{"a", SafetensorsDtype::F32, {2}, {0, 0, 0, 0}}}),
                    Catch::Contains("has 4 bytes but dtype F32 and shape [2] need 8"));
  CHECK_THROWS_WITH(to_safetensors_bytes({{"a", SafetensorsDtype::U8, {1}, {0}}, {"a", SafetensorsDtype::U8, {1}, {0}}}),
                    Catch::Contains("given twice"));
  CHECK_THROWS_WITH(to_safetensors_bytes({{"__metadata__", SafetensorsDtype::U8, {1}, {0}}}),
                    Catch::Contains("invalid tensor name"));
}

TEST_CASE("F16, BF16 and F64 convert exactly to f32") {
  // F16 1.0, -2.0, 2^-24 (smallest subnormal), +inf; BF16 1.0, -3.0.
  std::vector<std::uint8_t> half = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x00, 0x7C};
  std::vector<std::uint8_t> bf16 = {0x80, 0x3F, 0x40, 0xC0};
  double wide[2] = {0.1, -1e300};
  std::vector<std::uint8_t> f64(16);
  std::memcpy(f64.data(), wide, 16);
  auto file = SafetensorsFile::parse(to_safetensors_bytes({{"h", SafetensorsDtype::F16, {4}, half},
                                                           {"b", SafetensorsDtype::BF16, {2}, bf16},
                                                           {"d", SafetensorsDtype::F64, {2}, f64}}),
                                     "halfs");
  auto h = file.to_f32("h");
  CHECK(h[0] == 1.0f);
  CHECK(h[1] == -2.0f);
  CHECK(h[2] == std::ldexp(1.0f, -24));
  CHECK(std::isinf(h[3]));
  CHECK(file.to_f32("b") == std::vector<float>{1.0f, -3.0f});
  auto d = file.to_f32("d");
  CHECK(d[0] == 0.1f);
  CHECK(std::isinf(d[1]));
}

TEST_CASE("malformed headers are rejected with the tensor and the problem") {
  CHECK_THAT(error_of({1, 2, 3}), Catch::Contains("3 bytes is too short"));
  CHECK_THAT(error_of(with_header("{}", 0)).empty(), Catch::Predicate<bool>([](bool ok) { return ok; }));
  auto truncated = with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 12);
  CHECK_THAT(error_of(truncated), Catch::Contains("tensor 'a'") && Catch::Contains("past the data section of 12 bytes"));
  // One byte short is a truncated tensor, not a file with trailing bytes.
  auto one_short = with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 15);
  CHECK_THAT(error_of(one_short), Catch::Contains("tensor 'a'") && Catch::Contains("past the data section of 15 bytes"));
  CHECK_THAT(error_of(with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16)),
             Catch::Contains("hold 16 bytes but dtype F32 and shape [3] need 12"));
  CHECK_THAT(error_of(with_header(R"({"a":{"dtype":"Q4","shape":[3],"data_offsets":[0,3]}})", 3)),
             Catch::Contains("unknown dtype 'Q4'"));
  CHECK_THAT(error_of(with_header(R"({"a":{"dtype":"U8","shape":[18446744073709551615,2],"data_offsets":[0,2]}})", 2)),
             Catch::Contains("overflows a 64-bit element count"));
  CHECK_THAT(error_of(with_header(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                  R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
                                  3)),
             Catch::Contains("tensor 'b'") && Catch::Contains("overlap"));
  CHECK_THAT(error_of(with_header(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 2)),
             Catch::Contains("trailing bytes"));
  std::vector<std::uint8_t> huge(16, 0xFF);
  CHECK_THAT(error_of(huge), Catch::Contains("exceeds the 8 bytes after the length field"));
}

TEST_CASE("every seed-corpus file parses (valid_*) or throws RuntimeError (invalid_*)") {
  const fs::path corpus = fs::path(QUANTC_SOURCE_DIR) / "tests/fuzz/corpus/safetensors";
  REQUIRE(fs::is_directory(corpus));
  int valid = 0, invalid = 0;
  for (const auto& item : fs::directory_iterator(corpus)) {
    const std::string name = item.path().filename().string();
    INFO(name);
    const std::string error = error_of(read_bytes(item.path()));
    if (name.rfind("valid_", 0) == 0) {
      CHECK(error.empty());
      ++valid;
    } else {
      CHECK_THAT(error, Catch::Contains("test.safetensors"));
      ++invalid;
    }
  }
  CHECK(valid >= 5);
  CHECK(invalid >= 15);
}

TEST_CASE("open maps a file from disk and reports missing files") {
  const fs::path path = fs::temp_directory_path() / "quantc_safetensors_test.safetensors";
  write_safetensors(path.string(), {{"x", SafetensorsDtype::F32, {2}, f32_bytes({1.5f, 2.5f})}});
  auto file = SafetensorsFile::open(path.string());
  CHECK(file.to_f32("x") == std::vector<float>{1.5f, 2.5f});
  fs::remove(path);
  CHECK_THROWS_WITH(SafetensorsFile::open(path.string()), Catch::Contains("cannot open"));
}
