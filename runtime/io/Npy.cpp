#include "runtime/io/Npy.h"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>

namespace quantc::runtime {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct DtypeEntry {
  const char* descr;
  ir::ScalarType element;
};

// Byte-order-free types use '|'; NumPy also writes '<' for them on some paths.
constexpr std::array<DtypeEntry, 13> kDtypes{{
    {"|b1", ir::ScalarType::Bool}, {"|u1", ir::ScalarType::U8},   {"|i1", ir::ScalarType::I8},
    {"<u1", ir::ScalarType::U8},   {"<i1", ir::ScalarType::I8},   {"<u2", ir::ScalarType::U16},
    {"<u4", ir::ScalarType::U32},  {"<i4", ir::ScalarType::I32},  {"<u8", ir::ScalarType::U64},
    {"<i8", ir::ScalarType::I64},  {"<f2", ir::ScalarType::F16},  {"<f4", ir::ScalarType::F32},
    {"<f8", ir::ScalarType::F64},
}};

std::optional<ir::ScalarType> element_for(const std::string& descr) {
  for (const DtypeEntry& entry : kDtypes) {
    if (descr == entry.descr) return entry.element;
  }
  return std::nullopt;
}

std::string read_all(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw RuntimeError(fmt::format("{}: cannot open .npy file", path));
  return std::string(std::istreambuf_iterator<char>(file), {});
}

std::vector<std::uint64_t> parse_shape(const std::string& text, const std::string& path) {
  std::vector<std::uint64_t> shape;
  if (text.find_first_not_of("0123456789, ") != std::string::npos) {
    throw RuntimeError(fmt::format("{}: malformed shape '({})' in .npy header", path, text));
  }
  static const std::regex number(R"(\d+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it) {
    try {
      shape.push_back(std::stoull(it->str()));
    } catch (const std::out_of_range&) {  // stoull's error for a dimension over 2^64 - 1
      throw RuntimeError(fmt::format("{}: dimension {} in .npy header does not fit in 64 bits", path, it->str()));
    }
  }
  return shape;
}

}  // namespace

std::string npy_dtype(ir::ScalarType element) {
  for (const DtypeEntry& entry : kDtypes) {
    if (entry.element == element) return entry.descr;
  }
  throw RuntimeError(fmt::format("no NumPy dtype for element type {}", ir::to_string(element)));
}

NpyArray read_npy(const std::string& path) {
  std::string data = read_all(path);
  if (data.size() < 10 || data.compare(0, 6, kMagic, 6) != 0) {
    throw RuntimeError(fmt::format("{}: not a .npy file (bad magic); save arrays with numpy.save", path));
  }
  const auto major = static_cast<std::uint8_t>(data[6]);
  std::size_t header_length = 0, header_start = 0;
  if (major == 1) {
    header_length = static_cast<std::uint8_t>(data[8]) | (static_cast<std::size_t>(static_cast<std::uint8_t>(data[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) throw RuntimeError(fmt::format("{}: truncated .npy header", path));
    for (int i = 3; i >= 0; --i) header_length = (header_length << 8) | static_cast<std::uint8_t>(data[8 + i]);
    header_start = 12;
  } else {
    throw RuntimeError(fmt::format("{}: unsupported .npy format version {}", path, major));
  }
  if (header_start + header_length > data.size()) throw RuntimeError(fmt::format("{}: truncated .npy header", path));
  const std::string header = data.substr(header_start, header_length);

  static const std::regex descr_pattern(R"('descr'\s*:\s*'([^']*)')");
  static const std::regex order_pattern(R"('fortran_order'\s*:\s*(True|False))");
  static const std::regex shape_pattern(R"('shape'\s*:\s*\(([^)]*)\))");
  std::smatch descr, order, shape_match;
  if (!std::regex_search(header, descr, descr_pattern) || !std::regex_search(header, order, order_pattern) ||
      !std::regex_search(header, shape_match, shape_pattern)) {
    throw RuntimeError(fmt::format("{}: malformed .npy header: {}", path, header));
  }
  std::optional<ir::ScalarType> element = element_for(descr[1].str());
  if (!element) {
    throw RuntimeError(fmt::format("{}: unsupported dtype '{}'; use a little-endian bool, (u)int8/16/32/64, float16/32/64",
                                   path, descr[1].str()));
  }
  NpyArray array;
  array.shape = parse_shape(shape_match[1].str(), path);
  if (order[1].str() == "True" && array.shape.size() > 1) {
    throw RuntimeError(fmt::format("{}: Fortran-order arrays are not supported; save with numpy.ascontiguousarray", path));
  }
  std::uint64_t count = 1;
  for (std::uint64_t dim : array.shape) {
    if (dim != 0 && count > UINT64_MAX / dim) throw RuntimeError(fmt::format("{}: shape overflows", path));
    count *= dim;
  }
  const std::size_t element_bytes = ir::byte_size(*element);
  const std::size_t data_start = header_start + header_length;
  if (count > (data.size() - data_start) / element_bytes || (data.size() - data_start) != count * element_bytes) {
    throw RuntimeError(fmt::format("{}: expected {} elements ({} bytes) of data, found {} bytes", path, count,
                                   count * element_bytes, data.size() - data_start));
  }
  array.buffer.element = *element;
  array.buffer.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(data_start), data.end());
  return array;
}

std::string to_npy_bytes(const NpyArray& array) {
  std::vector<std::uint64_t> shape = array.shape;
  if (shape.empty()) shape.push_back(array.buffer.count());
  std::string shape_text;
  for (std::uint64_t dim : shape) shape_text += fmt::format("{}, ", dim);
  if (shape.size() > 1) shape_text.resize(shape_text.size() - 2);  // "(2, 3)" but "(4,)"
  else shape_text.pop_back();
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                   npy_dtype(array.buffer.element), shape_text);
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends in '\n'.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, 6);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(array.buffer.bytes.data()), array.buffer.bytes.size());
  return bytes;
}

}  // namespace quantc::runtime
