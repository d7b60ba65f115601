#include "runtime/io/Npy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

namespace quantc::runtime {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct NpyDtypeEntry {
  const char* descr;
  ir::ScalarType element;
};

// Byte-order-free types use '|'; NumPy also writes '<' for them on some paths. The
// first entry of an element type is what the writer uses.
// bf16: NumPy has no bfloat16; numpy.save of an ml_dtypes.bfloat16 array writes its
// dtype.str, '<V2' (a 2-byte void type), and numpy.load returns the raw bytes as V2,
// which `.view(ml_dtypes.bfloat16)` turns back into bfloat16 values.
constexpr std::array<NpyDtypeEntry, 14> kNpyDtypes{{
    {"|b1", ir::ScalarType::Bool}, {"|u1", ir::ScalarType::U8},   {"|i1", ir::ScalarType::I8},
    {"<u1", ir::ScalarType::U8},   {"<i1", ir::ScalarType::I8},   {"<u2", ir::ScalarType::U16},
    {"<u4", ir::ScalarType::U32},  {"<i4", ir::ScalarType::I32},  {"<u8", ir::ScalarType::U64},
    {"<i8", ir::ScalarType::I64},  {"<f2", ir::ScalarType::F16},  {"<V2", ir::ScalarType::BF16},
    {"<f4", ir::ScalarType::F32},  {"<f8", ir::ScalarType::F64},
}};

std::optional<ir::ScalarType> element_for(const std::string& descr) {
  for (const NpyDtypeEntry& entry : kNpyDtypes) {
    if (descr == entry.descr) return entry.element;
  }
  return std::nullopt;
}

/// The header dict's grammar, one token at a time; every error names the byte offset
/// and shows the text there.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  NpyHeader parse() {
    NpyHeader header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_space();
    expect('{', "the header must be a dict starting with '{'");
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++at_;
        break;
      }
      const std::size_t key_at = at_;
      const std::string key = string_literal("a key ('descr', 'fortran_order' or 'shape')");
      auto mark = [&](bool& seen) {
        if (seen) fail(key_at, fmt::format("the key '{}' appears twice; keep one", key));
        seen = true;
      };
      skip_space();
      expect(':', fmt::format("':' after the key '{}'", key));
      skip_space();
      if (key == "descr") {
        mark(seen_descr);
        if (peek() == '[') {
          fail(at_, "'descr' is a structured dtype (a list of fields); only plain numeric arrays are supported");
        }
        header.descr = string_literal("a dtype string for 'descr', e.g. '<f4'");
      } else if (key == "fortran_order") {
        mark(seen_order);
        header.fortran_order = boolean();
      } else if (key == "shape") {
        mark(seen_shape);
        header.shape = shape();
      } else {
        fail(key_at, fmt::format("unknown key '{}'; a .npy header has exactly 'descr', 'fortran_order' and 'shape'",
                                 key));
      }
      skip_space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      if (peek() == '}') {
        ++at_;
        break;
      }
      fail(at_, "expected ',' or '}' after a value");
    }
    std::string missing;
    if (!seen_descr) missing += "'descr'";
    if (!seen_order) missing += std::string(missing.empty() ? "" : ", ") + "'fortran_order'";
    if (!seen_shape) missing += std::string(missing.empty() ? "" : ", ") + "'shape'";
    if (!missing.empty()) fail(at_, fmt::format("missing key(s) {}", missing));
    skip_space();
    if (at_ != text_.size()) fail(at_, "unexpected text after the header dict's closing '}'");
    return header;
  }

 private:
  static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && is_space(text_[at_])) ++at_;
  }

  [[noreturn]] void fail(std::size_t offset, const std::string& problem) const {
    std::string near;
    if (offset >= text_.size()) {
      near = "the end of the header";
    } else {
      std::string excerpt;
      for (char c : text_.substr(offset, 24)) {
        excerpt += (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) ? std::string(1, c)
                                                                         : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
      }
      near = fmt::format("'{}{}'", excerpt, text_.size() - offset > 24 ? "..." : "");
    }
    throw RuntimeError(fmt::format("malformed .npy header: {} (at byte {} of the header, near {}); save arrays with "
                                   "numpy.save",
                                   problem, offset, near));
  }

  void expect(char c, const std::string& what) {
    if (peek() != c || at_ >= text_.size()) fail(at_, fmt::format("expected {}", what));
    ++at_;
  }

  std::string string_literal(const std::string& what) {
    const char quote = peek();
    if (at_ >= text_.size() || (quote != '\'' && quote != '"')) fail(at_, fmt::format("expected {}", what));
    const std::size_t start = ++at_;
    while (at_ < text_.size() && text_[at_] != quote) {
      if (text_[at_] == '\\' || text_[at_] == '\n') fail(at_, "escapes and line breaks are not supported in strings");
      ++at_;
    }
    if (at_ >= text_.size()) fail(start - 1, "unterminated string");
    return std::string(text_.substr(start, at_++ - start));
  }

  bool boolean() {
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(at_, word.size()) == word) {
        const std::size_t end = at_ + word.size();
        const char next = end < text_.size() ? text_[end] : ' ';
        if (!(std::isalnum(static_cast<unsigned char>(next)) || next == '_')) {
          at_ = end;
          return value;
        }
      }
    }
    fail(at_, "'fortran_order' must be True or False");
  }

  std::uint64_t dimension() {
    const std::size_t start = at_;
    if (peek() == '-') fail(at_, "a dimension is negative; the shape holds non-negative integers");
    if (at_ >= text_.size() || !is_digit(peek())) fail(at_, "expected a dimension (a non-negative integer) or ')'");
    std::uint64_t value = 0;
    while (at_ < text_.size() && is_digit(text_[at_])) {
      const auto digit = static_cast<std::uint64_t>(text_[at_] - '0');
      if (value > (UINT64_MAX - digit) / 10) fail(start, "a dimension exceeds 2^64-1");
      value = value * 10 + digit;
      ++at_;
    }
    if (text_[start] == '0' && at_ - start > 1) fail(start, "a dimension has a leading zero");
    if (peek() == 'L' || peek() == 'l') ++at_;  // Python 2's long suffix, which NumPy also accepts
    if (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '.') {
      fail(start, "a dimension must be a decimal integer");
    }
    return value;
  }

  std::vector<std::uint64_t> shape() {
    const std::size_t open = at_;
    expect('(', "a tuple for 'shape', e.g. (3,) or (2, 3)");
    std::vector<std::uint64_t> dimensions;
    skip_space();
    if (peek() == ')') {
      ++at_;
      return dimensions;  // (): a scalar
    }
    while (true) {
      dimensions.push_back(dimension());
      skip_space();
      if (peek() == ')') {
        if (dimensions.size() == 1) {
          fail(open, fmt::format("'shape' ({}) is an integer, not a tuple; a 1-D shape is written ({},)",
                                 dimensions[0], dimensions[0]));
        }
        ++at_;
        return dimensions;
      }
      expect(',', "',' or ')' in the shape tuple");
      skip_space();
      if (peek() == ')') {
        ++at_;
        return dimensions;
      }
    }
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text;
  for (std::uint64_t dim : shape) text += fmt::format("{}, ", dim);
  if (shape.size() > 1) text.resize(text.size() - 2);  // "(2, 3)" but "(4,)"
  else if (!shape.empty()) text.pop_back();
  return "(" + text + ")";
}

std::string read_all(const std::string& path) {
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) {
    const int error = errno;
    throw RuntimeError(fmt::format("{}: cannot open .npy file: {}", path, std::strerror(error)));
  }
  struct stat status {};
  if (::fstat(descriptor, &status) == 0 && S_ISDIR(status.st_mode)) {
    ::close(descriptor);
    throw RuntimeError(fmt::format("{}: is a folder, not a .npy file", path));
  }
  std::string data;
  if (S_ISREG(status.st_mode)) data.reserve(static_cast<std::size_t>(status.st_size));
  char chunk[1 << 16];
  while (true) {
    const ssize_t got = ::read(descriptor, chunk, sizeof chunk);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      ::close(descriptor);
      throw RuntimeError(fmt::format("{}: cannot read .npy file: {}", path, std::strerror(error)));
    }
    data.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(descriptor);
  return data;
}

}  // namespace

std::string npy_dtype(ir::ScalarType element) {
  for (const NpyDtypeEntry& entry : kNpyDtypes) {
    if (entry.element == element) return entry.descr;
  }
  throw RuntimeError(fmt::format("no NumPy dtype for element type {}", ir::to_string(element)));
}

NpyHeader parse_npy_header(std::string_view header) { return HeaderParser(header).parse(); }

NpyArray parse_npy(std::string_view data, const std::string& label) {
  if (data.size() < 10 || data.compare(0, 6, std::string_view(kMagic, 6)) != 0) {
    throw RuntimeError(fmt::format("{}: not a .npy file (bad magic); save arrays with numpy.save", label));
  }
  const auto major = static_cast<std::uint8_t>(data[6]);
  std::uint64_t header_length = 0, header_start = 0;
  if (major == 1) {
    header_length = static_cast<std::uint8_t>(data[8]) | (std::uint64_t{static_cast<std::uint8_t>(data[9])} << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) throw RuntimeError(fmt::format("{}: truncated .npy header", label));
    for (int i = 3; i >= 0; --i) header_length = (header_length << 8) | static_cast<std::uint8_t>(data[8 + i]);
    header_start = 12;
  } else {
    throw RuntimeError(fmt::format("{}: unsupported .npy format version {}; versions 1, 2 and 3 are supported", label,
                                   major));
  }
  if (header_length > data.size() - header_start) {
    throw RuntimeError(fmt::format("{}: truncated .npy header: it declares {} bytes, the file has {} after the "
                                   "length field",
                                   label, header_length, data.size() - header_start));
  }
  NpyHeader header;
  try {
    header = parse_npy_header(data.substr(header_start, header_length));
  } catch (const RuntimeError& error) {
    throw RuntimeError(fmt::format("{}: {}", label, error.what()));
  }
  std::optional<ir::ScalarType> element = element_for(header.descr);
  if (!element) {
    throw RuntimeError(fmt::format("{}: unsupported dtype '{}'; use a little-endian bool, (u)int8/16/32/64, "
                                   "float16/32/64, or ml_dtypes.bfloat16 ('<V2')",
                                   label, header.descr));
  }
  if (header.fortran_order && header.shape.size() > 1) {
    throw RuntimeError(fmt::format("{}: Fortran-order arrays are not supported; save with numpy.ascontiguousarray",
                                   label));
  }
  const std::uint64_t element_bytes = ir::byte_size(*element);
  std::uint64_t count = 1, expected_bytes = 0;
  for (std::uint64_t dim : header.shape) {
    if (__builtin_mul_overflow(count, dim, &count)) {
      throw RuntimeError(fmt::format("{}: shape {} overflows a 64-bit element count", label, shape_text(header.shape)));
    }
  }
  if (__builtin_mul_overflow(count, element_bytes, &expected_bytes)) {
    throw RuntimeError(fmt::format("{}: shape {} of '{}' overflows a 64-bit byte count", label,
                                   shape_text(header.shape), header.descr));
  }
  const std::uint64_t data_start = header_start + header_length;
  const std::uint64_t actual_bytes = data.size() - data_start;
  if (actual_bytes != expected_bytes) {
    throw RuntimeError(fmt::format("{}: shape {} of '{}' needs {} elements ({} bytes) of data, found {} bytes ({}); "
                                   "the file is damaged or was not written by numpy.save",
                                   label, shape_text(header.shape), header.descr, count, expected_bytes, actual_bytes,
                                   actual_bytes < expected_bytes ? "truncated" : "trailing bytes"));
  }
  NpyArray array;
  array.shape = std::move(header.shape);
  array.buffer.element = *element;
  array.buffer.bytes.assign(reinterpret_cast<const std::uint8_t*>(data.data()) + data_start,
                            reinterpret_cast<const std::uint8_t*>(data.data()) + data.size());
  return array;
}

NpyArray read_npy(const std::string& path) { return parse_npy(read_all(path), path); }

std::string to_npy_bytes(const NpyArray& array) {
  std::vector<std::uint64_t> shape = array.shape;
  if (shape.empty()) shape.push_back(array.buffer.count());
  std::uint64_t count = 1;
  for (std::uint64_t dim : shape) {
    if (__builtin_mul_overflow(count, dim, &count)) count = UINT64_MAX;
  }
  if (count != array.buffer.count()) {
    throw RuntimeError(fmt::format(".npy writer: shape {} holds {} elements but the buffer has {}", shape_text(shape),
                                   count, array.buffer.count()));
  }
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   npy_dtype(array.buffer.element), shape_text(shape));
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends in '\n'.
  // Version 1 stores the header length in 16 bits; longer headers need version 2.
  const bool version2 = 10 + header.size() + 1 + 63 > 0xffff;
  const std::size_t prefix = version2 ? 12 : 10;
  const std::size_t unpadded = prefix + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, 6);
  bytes += version2 ? '\x02' : '\x01';
  bytes += '\x00';
  const std::size_t length_bytes = version2 ? 4 : 2;
  for (std::size_t i = 0; i < length_bytes; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(array.buffer.bytes.data()), array.buffer.bytes.size());
  return bytes;
}

}  // namespace quantc::runtime
