#include "tools/PtxLaunchFlags.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <new>

#include "runtime/io/Npy.h"
#include "tools/CommandSupport.h"

namespace quantc::tools {

namespace {

constexpr const char* kArgumentForms =
    "FILE.npy (a buffer from a file), NAME:DTYPE:COUNT (a zero-filled buffer, e.g. out:f32:4096) or DTYPE:VALUE "
    "(a scalar, e.g. u32:4096, s32:-3, f32:0.5)";
constexpr const char* kScalarTypes = "u8, u16, u32, u64, s8, s16, s32, s64, f32, f64";
constexpr const char* kBufferTypes = "bool, u8, s8, u16, u32, s32, u64, s64, f16, f32, f64";

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

/// A decimal (or 0x-prefixed hexadecimal) unsigned integer, the whole text; nullopt otherwise.
std::optional<std::uint64_t> parse_unsigned(const std::string& text) {
  int base = 10;
  std::size_t start = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    start = 2;
  }
  std::uint64_t value = 0;
  const char* first = text.data() + start;
  const char* last = text.data() + text.size();
  auto [end, error] = std::from_chars(first, last, value, base);
  if (first == last || error != std::errc() || end != last) return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_signed(const std::string& text) {
  if (!text.empty() && text[0] == '-') {
    std::optional<std::uint64_t> magnitude = parse_unsigned(text.substr(1));
    if (!magnitude || *magnitude > std::uint64_t(std::numeric_limits<std::int64_t>::max()) + 1) return std::nullopt;
    return static_cast<std::int64_t>(0 - *magnitude);
  }
  std::optional<std::uint64_t> value = parse_unsigned(text);
  if (!value || *value > std::uint64_t(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return static_cast<std::int64_t>(*value);
}

std::array<std::uint32_t, 3> parse_dimensions(const std::string& text, const std::string& option) {
  const std::vector<std::string> parts = split(text, ',');
  std::array<std::uint32_t, 3> dimensions{1, 1, 1};
  bool valid = parts.size() <= 3;
  for (std::size_t i = 0; valid && i < parts.size(); ++i) {
    std::optional<std::uint64_t> value = parse_unsigned(parts[i]);
    valid = value && *value >= 1 && *value <= std::numeric_limits<std::uint32_t>::max();
    if (valid) dimensions[i] = static_cast<std::uint32_t>(*value);
  }
  if (!valid) {
    throw CommandError(fmt::format("{} '{}': expected X[,Y,Z], one to three integers from 1 to 4294967295 "
                                   "separated by commas, e.g. {} 64 or {} 16,16",
                                   option, text, option, option));
  }
  return dimensions;
}

/// PTX spellings (s32) and quantc's (i32) of the element types a buffer may have.
std::optional<ir::ScalarType> parse_buffer_type(std::string text) {
  if (text.size() > 1 && text[0] == 's' && std::isdigit(static_cast<unsigned char>(text[1]))) text[0] = 'i';
  std::optional<ir::ScalarType> type = ir::parse_scalar_type(text);
  if (!type || *type == ir::ScalarType::BF16 || ir::is_storage_only(*type)) return std::nullopt;
  return type;
}

runtime::PtxArgument parse_scalar(const std::string& argument, const std::string& type_text,
                                     const std::string& value_text) {
  std::string type = type_text;
  if (type.size() > 1 && type[0] == 'i' && std::isdigit(static_cast<unsigned char>(type[1]))) type[0] = 's';
  runtime::PtxArgument scalar = runtime::PtxArgument::of_scalar(0, 0, argument);
  auto fail = [&](const std::string& expected) -> runtime::PtxArgument {
    throw CommandError(fmt::format("--arg '{}': {} takes {}, got '{}'", argument, type_text, expected, value_text));
  };
  if (type == "f32" || type == "f64") {
    const char* first = value_text.c_str();
    char* end = nullptr;
    errno = 0;
    const double value = std::strtod(first, &end);
    if (value_text.empty() || end != first + value_text.size() || std::isspace(static_cast<unsigned char>(value_text[0]))) {
      return fail("a decimal number (e.g. 0.5, -1e-3, inf, nan)");
    }
    if (type == "f64") {
      if (errno == ERANGE && std::isinf(value)) return fail("a number within the f64 range");
      scalar.bits = std::bit_cast<std::uint64_t>(value);
      scalar.bytes = 8;
      return scalar;
    }
    if (std::isfinite(value) && std::fabs(value) > double(std::numeric_limits<float>::max())) {
      return fail("a number within the f32 range (|x| <= 3.4028235e38)");
    }
    scalar.bits = std::bit_cast<std::uint32_t>(static_cast<float>(value));
    scalar.bytes = 4;
    return scalar;
  }
  if (type.size() < 2 || (type[0] != 'u' && type[0] != 's' && type[0] != 'b')) {
    throw CommandError(fmt::format("--arg '{}': unknown scalar type '{}'; the types are {}. An --arg is {}", argument,
                                   type_text, kScalarTypes, kArgumentForms));
  }
  std::optional<std::uint64_t> bits_width = parse_unsigned(type.substr(1));
  if (!bits_width || (*bits_width != 8 && *bits_width != 16 && *bits_width != 32 && *bits_width != 64) ||
      type.substr(1).starts_with("0x")) {
    throw CommandError(fmt::format("--arg '{}': unknown scalar type '{}'; the types are {}. An --arg is {}", argument,
                                   type_text, kScalarTypes, kArgumentForms));
  }
  const unsigned bits = static_cast<unsigned>(*bits_width);
  scalar.bytes = bits / 8;
  const std::uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  if (type[0] == 's') {
    const std::int64_t low = bits == 64 ? std::numeric_limits<std::int64_t>::min() : -(std::int64_t(1) << (bits - 1));
    const std::int64_t high = bits == 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t(1) << (bits - 1)) - 1;
    std::optional<std::int64_t> value = parse_signed(value_text);
    if (!value || *value < low || *value > high) return fail(fmt::format("an integer in {}..{}", low, high));
    scalar.bits = static_cast<std::uint64_t>(*value) & mask;
    return scalar;
  }
  std::optional<std::uint64_t> value = parse_unsigned(value_text);
  if (!value || *value > mask) return fail(fmt::format("an integer in 0..{} (decimal or 0x hexadecimal)", mask));
  scalar.bits = *value;
  return scalar;
}

}  // namespace

bool is_ptx_file(const std::string& path, const std::string& text) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".ptx") return true;
  if (extension == ".json") return false;
  std::size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      i = text.find('\n', i);
      if (i == std::string::npos) return false;
    } else if (text.compare(i, 2, "/*") == 0) {
      i = text.find("*/", i + 2);
      if (i == std::string::npos) return false;
      i += 2;
    } else {
      return text.compare(i, 8, ".version") == 0;
    }
  }
  return false;
}

void PtxLaunchFlags::add_to(CLI::App& command) {
  command.add_option("--entry", entry, "PTX: the kernel to launch (default: the module's only .entry)");
  command.add_option("--grid", grid, "PTX: CTAs per dimension, X[,Y,Z]");
  command.add_option("--block", block, "PTX: threads per CTA per dimension, X[,Y,Z]");
  command.add_option("--shared-bytes", shared_bytes, "PTX: dynamic shared memory bytes (default 0)");
  command.add_option("--arg", arguments,
                     "PTX: one kernel argument per .param, in order (repeatable): FILE.npy, NAME:DTYPE:COUNT "
                     "(zero-filled buffer) or DTYPE:VALUE (scalar)");
}

const std::vector<std::string>& PtxLaunchFlags::names() {
  static const std::vector<std::string> names = {"--entry", "--grid", "--block", "--shared-bytes", "--arg"};
  return names;
}

std::uint64_t PreparedPtxLaunch::output_elements() const {
  std::uint64_t elements = 0;
  if (outputs.empty()) {
    for (const runtime::NamedBuffer& named : buffers) elements += named.buffer.count();
  } else {
    for (const PtxOutput& output : outputs) elements += buffers[output.buffer].buffer.count();
  }
  return elements;
}

void PreparedPtxLaunch::print_buffers(std::FILE* out) const {
  auto print = [&](std::size_t index) {
    const runtime::NamedBuffer& named = buffers[index];
    fmt::print(out, "{}", format_buffer(fmt::format("arg {} {}", buffer_info[index].argument, named.name), named.buffer));
  };
  if (outputs.empty()) {
    for (std::size_t i = 0; i < buffers.size(); ++i) print(i);
  } else {
    for (const PtxOutput& output : outputs) print(output.buffer);
  }
}

std::FILE* PreparedPtxLaunch::report_stream() const { return files->writes_stdout() ? stderr : stdout; }

void PreparedPtxLaunch::write_outputs() const {
  for (const PtxOutput& output : outputs) {
    files->stage(output.file,
                 runtime::to_npy_bytes({buffers[output.buffer].buffer, buffer_info[output.buffer].shape}));
  }
  files->commit();
}

PreparedPtxLaunch prepare_ptx_launch(const std::string& ptx_text, const PtxLaunchFlags& flags,
                                     const std::vector<std::string>& outputs) {
  PreparedPtxLaunch prepared;
  runtime::PtxLaunch& launch = prepared.launch;
  launch.ptx = ptx_text;
  launch.entry = flags.entry.value_or("");
  if (!flags.grid || !flags.block) {
    throw CommandError(fmt::format("a PTX launch needs {}: give the CTAs with --grid X[,Y,Z] and the threads per "
                                   "CTA with --block X[,Y,Z]",
                                   !flags.grid && !flags.block ? "--grid and --block" : !flags.grid ? "--grid" : "--block"));
  }
  launch.grid = parse_dimensions(*flags.grid, "--grid");
  launch.block = parse_dimensions(*flags.block, "--block");
  if (flags.shared_bytes) {
    std::optional<std::uint64_t> bytes = parse_unsigned(*flags.shared_bytes);
    if (!bytes || *bytes > std::numeric_limits<std::uint32_t>::max()) {
      throw CommandError(fmt::format("--shared-bytes '{}': expected a byte count from 0 to 4294967295",
                                     *flags.shared_bytes));
    }
    launch.dynamic_shared_bytes = static_cast<std::uint32_t>(*bytes);
  }

  std::vector<std::optional<std::size_t>> buffer_of_argument;
  for (std::size_t index = 0; index < flags.arguments.size(); ++index) {
    const std::string& argument = flags.arguments[index];
    if (argument.ends_with(".npy")) {
      runtime::NpyArray array;
      try {
        array = runtime::read_npy(argument);
      } catch (const runtime::RuntimeError& error) {
        throw CommandError(fmt::format("--arg '{}' (argument {}): {}", argument, index, error.what()));
      }
      std::vector<std::uint64_t> shape = array.shape;
      buffer_of_argument.push_back(prepared.buffers.size());
      prepared.buffers.push_back({std::filesystem::path(argument).stem().string(), std::move(array.buffer)});
      prepared.buffer_info.push_back({index, std::move(shape)});
      launch.arguments.push_back(runtime::PtxArgument::of_buffer(prepared.buffers.size() - 1));
      continue;
    }
    const std::vector<std::string> parts = split(argument, ':');
    if (parts.size() == 3) {
      const std::string& name = parts[0];
      std::optional<ir::ScalarType> element = parse_buffer_type(parts[1]);
      if (name.empty()) {
        throw CommandError(fmt::format("--arg '{}': the buffer needs a name, NAME:DTYPE:COUNT (e.g. out:f32:4096)",
                                       argument));
      }
      if (!element) {
        throw CommandError(fmt::format("--arg '{}': unknown buffer element type '{}'; the types are {}", argument,
                                       parts[1], kBufferTypes));
      }
      std::optional<std::uint64_t> count = parse_unsigned(parts[2]);
      const std::uint64_t element_bytes = ir::byte_size(*element);
      constexpr std::uint64_t kMaxBytes = std::uint64_t(1) << 40;
      if (!count || *count == 0 || *count > kMaxBytes / element_bytes) {
        throw CommandError(fmt::format("--arg '{}': the element count must be an integer from 1 to {}, got '{}'",
                                       argument, kMaxBytes / element_bytes, parts[2]));
      }
      runtime::HostBuffer buffer{*element, {}};
      try {
        buffer.bytes.assign(*count * element_bytes, 0);
      } catch (const std::bad_alloc&) {
        throw CommandError(fmt::format("--arg '{}': cannot allocate {} bytes on the host", argument,
                                       *count * element_bytes));
      }
      buffer_of_argument.push_back(prepared.buffers.size());
      prepared.buffers.push_back({name, std::move(buffer)});
      prepared.buffer_info.push_back({index, {*count}});
      launch.arguments.push_back(runtime::PtxArgument::of_buffer(prepared.buffers.size() - 1));
      continue;
    }
    if (parts.size() == 2) {
      buffer_of_argument.push_back(std::nullopt);
      launch.arguments.push_back(parse_scalar(argument, parts[0], parts[1]));
      continue;
    }
    throw CommandError(fmt::format("--arg '{}' (argument {}): expected {}", argument, index, kArgumentForms));
  }

  for (const std::string& binding : outputs) {
    const std::size_t equals = binding.find('=');
    std::optional<std::uint64_t> index =
        equals == std::string::npos ? std::nullopt : parse_unsigned(binding.substr(0, equals));
    if (!index || binding.substr(0, equals).starts_with("0x") || equals + 1 >= binding.size()) {
      throw CommandError(fmt::format("--output '{}': for a PTX kernel expected INDEX=FILE.npy, INDEX the 0-based "
                                     "position of a buffer among the --arg values (e.g. --output 1=y.npy)",
                                     binding));
    }
    if (*index >= flags.arguments.size()) {
      const std::size_t count = flags.arguments.size();
      throw CommandError(fmt::format("--output '{}': argument {} does not exist; {}", binding, *index,
                                     count == 0   ? std::string("no --arg values were given")
                                     : count == 1 ? std::string("1 --arg value was given (index 0)")
                                                  : fmt::format("{} --arg values were given (0..{})", count, count - 1)));
    }
    const std::optional<std::size_t> buffer = buffer_of_argument[*index];
    if (!buffer) {
      throw CommandError(fmt::format("--output '{}': argument {} is the scalar '{}'; only buffer arguments "
                                     "(FILE.npy or NAME:DTYPE:COUNT) can be written",
                                     binding, *index, flags.arguments[*index]));
    }
    const std::string path = binding.substr(equals + 1);
    try {
      prepared.outputs.push_back({*buffer, path, prepared.files->add(path, /*allow_stdout=*/true)});
    } catch (const runtime::RuntimeError& error) {
      throw CommandError(fmt::format("--output {}: {}", binding, error.what()));
    }
  }
  return prepared;
}

void reject_options(const CLI::App& command, const std::vector<std::string>& names, const std::string& why) {
  for (const std::string& name : names) {
    if (command.count(name) > 0) throw CommandError(fmt::format("{} {}", name, why));
  }
}

}  // namespace quantc::tools
