#include "runtime/Buffers.h"

#include "ir/Arithmetic.h"

#include <fmt/format.h>

#include <random>

namespace quantc::runtime {

BufferSet allocate_buffers(const ir::Program& program) {
  BufferSet buffers;
  for (const ir::BufferDecl& decl : program.buffers) {
    buffers[decl.name] = HostBuffer{decl.element, std::vector<std::uint8_t>(decl.byte_size())};
  }
  return buffers;
}

namespace {
bool is_zero_point_name(const std::string& name) {
  return name.rfind("zero_point", 0) == 0 || name.rfind("zp", 0) == 0;
}

template <class T>
void fill(HostBuffer& buffer, auto&& generate) {
  std::size_t count = buffer.bytes.size() / sizeof(T);
  for (std::size_t i = 0; i < count; ++i) {
    T value = static_cast<T>(generate());
    std::memcpy(buffer.bytes.data() + i * sizeof(T), &value, sizeof(T));
  }
}
}  // namespace

BufferSet random_buffers(const ir::Program& program, std::uint64_t seed) {
  BufferSet buffers = allocate_buffers(program);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (const ir::BufferDecl& decl : program.buffers) {
    if (decl.is_written()) continue;  // outputs start zeroed; scratch must start zeroed
    HostBuffer& buffer = buffers[decl.name];
    const bool zero_point = is_zero_point_name(decl.name);
    if (zero_point && decl.element == ir::ScalarType::U32) {
      fill<std::uint32_t>(buffer, [&] { return engine() & 15u; });
      continue;
    }
    if (zero_point && decl.element == ir::ScalarType::F32) {
      fill<float>(buffer, [&] { return double(engine() & 15u); });
      continue;
    }
    if (decl.name == "perm" && decl.element == ir::ScalarType::U32) {
      // A uniform permutation (Fisher-Yates with the engine's own draws, the same on
      // every platform, unlike std::shuffle's unspecified algorithm).
      std::vector<std::uint32_t> values(decl.count);
      for (std::uint32_t i = 0; i < values.size(); ++i) values[i] = i;
      for (std::size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[engine() % i]);
      buffer = HostBuffer::from(ir::ScalarType::U32, values);
      continue;
    }
    switch (decl.element) {
      case ir::ScalarType::F32:
        fill<float>(buffer, [&] { return unit(engine); });
        break;
      case ir::ScalarType::F64:
        fill<double>(buffer, [&] { return unit(engine); });
        break;
      case ir::ScalarType::F16:
      case ir::ScalarType::BF16: {
        const ir::arith::FloatFormat format = ir::arith::format_of(decl.element);
        fill<std::uint16_t>(buffer, [&] { return ir::arith::round_to_format(unit(engine), format); });
        break;
      }
      default:
        // Integers: random bytes.
        for (auto& byte : buffer.bytes) byte = static_cast<std::uint8_t>(engine());
        break;
    }
  }
  return buffers;
}

std::uint64_t output_element_count(const ir::Program& program) {
  std::uint64_t elements = 0;
  for (const ir::BufferDecl& decl : program.buffers) {
    if (!decl.is_output()) continue;
    const ir::ByteRange range = decl.readable_range();
    elements += (range.end - range.begin) / ir::byte_size(decl.element);
  }
  return elements;
}

double element_as_double(const HostBuffer& buffer, std::size_t index) {
  const std::size_t size = ir::byte_size(buffer.element);
  if (index >= buffer.bytes.size() / size) {
    throw RuntimeError(fmt::format("element {} is out of range for a buffer of {} elements", index, buffer.bytes.size() / size));
  }
  const std::uint8_t* at = buffer.bytes.data() + index * size;
  auto read = [at]<class T>(T) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
  };
  switch (buffer.element) {
    case ir::ScalarType::Bool:
      return *at != 0 ? 1.0 : 0.0;
    case ir::ScalarType::U8:
      return read(std::uint8_t{});
    case ir::ScalarType::I8:
      return read(std::int8_t{});
    case ir::ScalarType::U16:
      return read(std::uint16_t{});
    case ir::ScalarType::U32:
      return read(std::uint32_t{});
    case ir::ScalarType::I32:
      return read(std::int32_t{});
    case ir::ScalarType::U64:
      return static_cast<double>(read(std::uint64_t{}));
    case ir::ScalarType::I64:
      return static_cast<double>(read(std::int64_t{}));
    case ir::ScalarType::F16:
    case ir::ScalarType::BF16:
      return static_cast<double>(ir::arith::decode(read(std::uint16_t{}), ir::arith::format_of(buffer.element)));
    case ir::ScalarType::F32:
      return read(float{});
    case ir::ScalarType::F64:
      return read(double{});
    default:
      throw RuntimeError(fmt::format("element type {} has no byte encoding", ir::to_string(buffer.element)));
  }
}

void check_buffers(const ir::Program& program, const BufferSet& buffers) {
  for (const ir::BufferDecl& decl : program.buffers) {
    auto found = buffers.find(decl.name);
    if (found == buffers.end()) {
      throw RuntimeError(fmt::format("buffer '{}' ({} x {}) was not provided", decl.name, decl.count,
                                     ir::to_string(decl.element)));
    }
    const HostBuffer& buffer = found->second;
    if (buffer.element != decl.element) {
      throw RuntimeError(fmt::format("buffer '{}': expected element type {}, given {}", decl.name,
                                     ir::to_string(decl.element), ir::to_string(buffer.element)));
    }
    if (buffer.bytes.size() != decl.byte_size()) {
      throw RuntimeError(fmt::format("buffer '{}': expected {} elements ({} bytes), given {} bytes", decl.name,
                                     decl.count, decl.byte_size(), buffer.bytes.size()));
    }
  }
}

}  // namespace quantc::runtime
