// The .npy reader and writer (runtime/io/Npy.h): the header grammar (what NumPy writes
// and reads is accepted, what it rejects is rejected), headers up to the format's
// limits without a crash, and data sizes checked exactly.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <string>

#include "runtime/io/Npy.h"

using quantc::ir::ScalarType;
using quantc::runtime::HostBuffer;
using quantc::runtime::NpyArray;
using quantc::runtime::parse_npy;
using quantc::runtime::parse_npy_header;
using quantc::runtime::RuntimeError;
using quantc::runtime::to_npy_bytes;

namespace {

/// A version 1 (or 2) file around `header` and `data_bytes` bytes of data.
std::string npy_file(const std::string& header, std::size_t data_bytes, int version = 1) {
  std::string file("\x93NUMPY", 6);
  file += static_cast<char>(version);
  file += '\0';
  const std::size_t length_bytes = version == 1 ? 2 : 4;
  for (std::size_t i = 0; i < length_bytes; ++i) file += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header;
  file.append(data_bytes, '\x01');
  return file;
}

std::string header_error(const std::string& header) {
  try {
    parse_npy_header(header);
  } catch (const RuntimeError& error) {
    return error.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("the .npy header parser accepts what numpy.save writes and NumPy reads", "[npy]") {
  auto header = parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + std::string(20, ' ') + "\n");
  CHECK(header.descr == "<f4");
  CHECK_FALSE(header.fortran_order);
  CHECK(header.shape == std::vector<std::uint64_t>{2, 3});
  CHECK(parse_npy_header("{'descr':'|u1','fortran_order':True,'shape':(5,)}").shape == std::vector<std::uint64_t>{5});
  CHECK(parse_npy_header("{'descr': '<i8', 'fortran_order': False, 'shape': ()}").shape.empty());
  CHECK(parse_npy_header("{\"shape\": (2, 3,), \"descr\": \"<f8\", \"fortran_order\": True}").shape ==
        std::vector<std::uint64_t>{2, 3});
  CHECK(parse_npy_header("{\n\t'descr' : '<f2' ,\n 'fortran_order' : False ,\n 'shape' : ( 4 , ) ,\n}\n").shape ==
        std::vector<std::uint64_t>{4});
  CHECK(parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3L, 4L), }").shape ==
        std::vector<std::uint64_t>{3, 4});  // written by Python 2's NumPy
  CHECK(parse_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551615,), }").shape ==
        std::vector<std::uint64_t>{UINT64_MAX});
}

TEST_CASE("the .npy header parser rejects malformed dicts and names the problem", "[npy]") {
  struct Case {
    std::string header, expected;
  };
  const std::string ok_descr = "'descr': '<f4', ";
  const std::string ok_order = "'fortran_order': False, ";
  const std::vector<Case> cases = {
      {"{" + ok_descr + ok_order + "'shape': (64,,), }", "expected a dimension"},
      {"{" + ok_descr + ok_order + "'shape': (,), }", "expected a dimension"},
      {"{" + ok_descr + ok_order + "'shape': (5), }", "'shape' (5) is an integer, not a tuple"},
      {"{" + ok_descr + ok_order + "'shape': (-1,), }", "negative"},
      {"{" + ok_descr + ok_order + "'shape': (01,), }", "leading zero"},
      {"{" + ok_descr + ok_order + "'shape': (1.5,), }", "decimal integer"},
      {"{" + ok_descr + ok_order + "'shape': (18446744073709551616,), }", "exceeds 2^64-1"},
      {"{" + ok_descr + ok_order + "'shape': [2, 3], }", "a tuple for 'shape'"},
      {"{" + ok_descr + ok_order + "'shape': (2, 3), 'shape': (6,), }", "the key 'shape' appears twice"},
      {"{" + ok_descr + ok_descr + ok_order + "'shape': (6,), }", "the key 'descr' appears twice"},
      {"{" + ok_descr + "'shape': (6,), }", "missing key(s) 'fortran_order'"},
      {"{}", "missing key(s) 'descr', 'fortran_order', 'shape'"},
      {"{" + ok_descr + ok_order + "'shape': (6,), 'extra': 1}", "unknown key 'extra'"},
      {"{" + ok_descr + ok_order + "'shape': (6,), } x", "unexpected text after the header dict"},
      {"{" + ok_descr + ok_order + "'shape': (6,), }}", "unexpected text after the header dict"},
      {"{" + ok_descr + "'fortran_order': false, 'shape': (6,)}", "must be True or False"},
      {"{" + ok_descr + "'fortran_order': Falsey, 'shape': (6,)}", "must be True or False"},
      {"{'descr': [('a', '<f4')], " + ok_order + "'shape': (6,)}", "structured dtype"},
      {"{'descr': '<f4, " + ok_order + "'shape': (6,)}", "expected ',' or '}'"},
      {"{'descr': '<f4", "unterminated string"},
      {"{'descr' '<f4', " + ok_order + "'shape': (6,)}", "expected ':'"},
      {"{" + ok_descr + ok_order + "'shape': (6,) 'x'}", "expected ',' or '}'"},
      {"", "must be a dict"},
      {"[1, 2]", "must be a dict"},
      {"{" + ok_descr + ok_order + "'shape': (6", "expected ',' or ')' in the shape tuple"},
      {std::string("{'descr': '<f4'\0, ", 17) + ok_order + "'shape': (6,)}", "\\x00"},
  };
  for (const Case& test : cases) {
    INFO(test.header);
    const std::string message = header_error(test.header);
    CHECK_THAT(message, Catch::StartsWith("malformed .npy header: ") && Catch::Contains(test.expected));
  }
}

TEST_CASE("headers up to the format's limits parse without a crash in linear time", "[npy]") {
  // About 60 KB of shape (version 1's 16-bit length) and 2 MB (version 2): the regex
  // reader this parser replaced overflowed the stack on headers of about 26 KB.
  for (std::size_t dims : {std::size_t{15'000}, std::size_t{500'000}}) {
    std::string shape = "(2";
    for (std::size_t i = 1; i < dims; ++i) shape += ", 1";
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "), }\n";
    NpyArray array = parse_npy(npy_file(header, 8, header.size() > 0xffff ? 2 : 1), "big.npy");
    CHECK(array.shape.size() == dims);
    CHECK(array.buffer.count() == 2);
  }
  // Deep nesting, long runs of spaces, of commas and an unterminated tuple: errors, not crashes.
  CHECK_THAT(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(60'000, '(')),
             Catch::Contains("expected a dimension"));
  CHECK_THAT(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1" + std::string(60'000, ',') + ")}"),
             Catch::Contains("expected a dimension"));
  CHECK_THAT(header_error("{'descr': '" + std::string(60'000, 'a')), Catch::Contains("unterminated string"));
  CHECK(parse_npy_header("{" + std::string(1 << 20, ' ') + "'descr': '<f4', 'fortran_order': False, 'shape': (),}")
            .shape.empty());
}

TEST_CASE("a .npy whose data is one element short or long is rejected with both byte counts", "[npy]") {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }\n";
  CHECK(parse_npy(npy_file(header, 32), "ok.npy").buffer.count() == 8);
  auto message = [&](std::size_t bytes) {
    try {
      parse_npy(npy_file(header, bytes), "x.npy");
    } catch (const RuntimeError& error) {
      return std::string(error.what());
    }
    return std::string("(accepted)");
  };
  CHECK_THAT(message(28), Catch::StartsWith("x.npy: shape (2, 4) of '<f4' needs 8 elements (32 bytes) of data, "
                                            "found 28 bytes (truncated)"));
  CHECK_THAT(message(36), Catch::Contains("needs 8 elements (32 bytes) of data, found 36 bytes (trailing bytes)"));
  CHECK_THAT(message(31), Catch::Contains("found 31 bytes"));
  // A shape whose byte count overflows is named, not allocated.
  CHECK_THROWS_WITH(parse_npy(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 8),
                              "x.npy"),
                    Catch::Contains("overflows a 64-bit element count"));
  CHECK_THROWS_WITH(parse_npy(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 8),
                              "x.npy"),
                    Catch::Contains("overflows a 64-bit byte count"));
  CHECK_THROWS_WITH(parse_npy(npy_file(header, 32).substr(0, 40), "cut.npy"),
                    Catch::Contains("truncated .npy header: it declares"));
  CHECK_THROWS_WITH(parse_npy(npy_file(header, 32, 4), "v4.npy"), Catch::Contains("unsupported .npy format version 4"));
  CHECK_THROWS_WITH(parse_npy(npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (8,)}", 32), "be.npy"),
                    Catch::Contains("unsupported dtype '>f4'"));
  CHECK_THROWS_WITH(parse_npy(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 4)}", 32), "f.npy"),
                    Catch::Contains("Fortran-order"));
}

TEST_CASE("to_npy_bytes writes version 1 or version 2 for huge headers and checks the shape", "[npy]") {
  NpyArray array{HostBuffer::from(ScalarType::F32, std::vector<float>{1, 2, 3, 4, 5, 6}), {2, 3}};
  std::string bytes = to_npy_bytes(array);
  CHECK(bytes[6] == '\x01');
  CHECK(bytes.size() % 64 == 24);  // 64-byte aligned header, then 6 floats
  NpyArray back = parse_npy(bytes, "round.npy");
  CHECK(back.shape == array.shape);
  CHECK(back.buffer.bytes == array.buffer.bytes);

  NpyArray wide{HostBuffer::from(ScalarType::U8, std::vector<std::uint8_t>{7}), std::vector<std::uint64_t>(30'000, 1)};
  std::string wide_bytes = to_npy_bytes(wide);
  CHECK(wide_bytes[6] == '\x02');
  CHECK(parse_npy(wide_bytes, "wide.npy").shape.size() == 30'000);

  NpyArray wrong{HostBuffer::from(ScalarType::F32, std::vector<float>{1, 2, 3}), {2, 2}};
  CHECK_THROWS_WITH(to_npy_bytes(wrong), Catch::Contains("shape (2, 2) holds 4 elements but the buffer has 3"));
}

TEST_CASE("read_npy names a missing file and a folder", "[npy]") {
  CHECK_THROWS_WITH(quantc::runtime::read_npy("/nonexistent/x.npy"),
                    Catch::Contains("/nonexistent/x.npy: cannot open .npy file: No such file or directory"));
  CHECK_THROWS_WITH(quantc::runtime::read_npy(std::filesystem::temp_directory_path().string()),
                    Catch::Contains("is a folder, not a .npy file"));
}

namespace {
/// numpy.save(f, numpy.arange(8, dtype=numpy.float32).astype(ml_dtypes.bfloat16)) with
/// NumPy 2.4 and ml_dtypes 0.6, byte for byte: the descriptor is bfloat16's dtype.str,
/// '<V2', and the data the bf16 bit patterns of 0..7.
std::string ml_dtypes_bfloat16_file() {
  std::string file("\x93NUMPY\x01\x00\x76\x00", 10);
  std::string header = "{'descr': '<V2', 'fortran_order': False, 'shape': (8,), }";
  header.append(117 - header.size(), ' ');
  file += header + "\n";
  const unsigned char data[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x40, 0x40, 0x40,
                                0x80, 0x40, 0xa0, 0x40, 0xc0, 0x40, 0xe0, 0x40};
  file.append(reinterpret_cast<const char*>(data), sizeof data);
  return file;
}
}  // namespace

TEST_CASE("bf16 arrays: ml_dtypes' '<V2' is read as bf16 and written back byte for byte as numpy.save writes it",
          "[npy]") {
  const std::string numpy_bytes = ml_dtypes_bfloat16_file();
  REQUIRE(numpy_bytes.size() == 144);
  NpyArray array = parse_npy(numpy_bytes, "bf16.npy");
  CHECK(array.buffer.element == ScalarType::BF16);
  CHECK(array.shape == std::vector<std::uint64_t>{8});
  CHECK(array.buffer.as<std::uint16_t>() ==
        std::vector<std::uint16_t>{0x0000, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0, 0x40c0, 0x40e0});  // 0..7
  CHECK(to_npy_bytes(array) == numpy_bytes);
  CHECK(quantc::runtime::npy_dtype(ScalarType::BF16) == "<V2");
  // f16 is NumPy's own float16.
  NpyArray half{HostBuffer::from(ScalarType::F16, std::vector<std::uint16_t>{0x3c00, 0xc000}), {}};
  std::string half_bytes = to_npy_bytes(half);
  CHECK(half_bytes.find("'descr': '<f2'") != std::string::npos);
  NpyArray back = parse_npy(half_bytes, "f16.npy");
  CHECK(back.buffer.element == ScalarType::F16);
  CHECK(back.buffer.as<std::uint16_t>() == std::vector<std::uint16_t>{0x3c00, 0xc000});
  // Other void types are no float: a 4-byte void is refused, naming the bf16 descriptor.
  CHECK_THROWS_WITH(parse_npy(npy_file("{'descr': '<V4', 'fortran_order': False, 'shape': (2,)}", 8), "v4.npy"),
                    Catch::Contains("unsupported dtype '<V4'") && Catch::Contains("ml_dtypes.bfloat16 ('<V2')"));
}
