#include "runtime/io/Safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/io/AtomicFile.h"
#include "runtime/io/MappedFile.h"

namespace quantc::runtime {
namespace {

using Json = nlohmann::json;

// The reference implementation refuses headers above 100 MB; so do we, which also
// bounds the JSON parser's memory on hostile input.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
constexpr char kMetadataKey[] = "__metadata__";

struct SafetensorsDtypeEntry {
  SafetensorsDtype dtype;
  const char* name;
  std::uint64_t size;
};

constexpr std::array<SafetensorsDtypeEntry, 15> kSafetensorsDtypes{{
    {SafetensorsDtype::Bool, "BOOL", 1},   {SafetensorsDtype::U8, "U8", 1},
    {SafetensorsDtype::I8, "I8", 1},       {SafetensorsDtype::F8E5M2, "F8_E5M2", 1},
    {SafetensorsDtype::F8E4M3, "F8_E4M3", 1}, {SafetensorsDtype::I16, "I16", 2},
    {SafetensorsDtype::U16, "U16", 2},     {SafetensorsDtype::F16, "F16", 2},
    {SafetensorsDtype::BF16, "BF16", 2},   {SafetensorsDtype::I32, "I32", 4},
    {SafetensorsDtype::U32, "U32", 4},     {SafetensorsDtype::F32, "F32", 4},
    {SafetensorsDtype::I64, "I64", 8},     {SafetensorsDtype::U64, "U64", 8},
    {SafetensorsDtype::F64, "F64", 8},
}};

const SafetensorsDtypeEntry& entry_for(SafetensorsDtype dtype) {
  for (const SafetensorsDtypeEntry& entry : kSafetensorsDtypes) {
    if (entry.dtype == dtype) return entry;
  }
  throw RuntimeError("safetensors: unknown dtype enumerator");
}

std::string known_dtype_names() {
  std::string names;
  for (const SafetensorsDtypeEntry& entry : kSafetensorsDtypes) names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

[[noreturn]] void fail(const std::string& label, const std::string& problem) {
  throw RuntimeError(fmt::format("{}: invalid safetensors file: {}", label, problem));
}

[[noreturn]] void fail_tensor(const std::string& label, const std::string& tensor, const std::string& problem) {
  throw RuntimeError(fmt::format("{}: invalid safetensors file: tensor '{}': {}", label, tensor, problem));
}

/// A JSON value that must be a non-negative integer (not a float, not negative).
std::uint64_t as_count(const Json& value, const std::string& label, const std::string& tensor, const char* what) {
  if (!value.is_number_unsigned()) {
    fail_tensor(label, tensor, fmt::format("{} entry {} is not a non-negative integer", what, value.dump()));
  }
  return value.get<std::uint64_t>();
}

/// Parses the header text, rejecting duplicate keys at any depth (nlohmann keeps the
/// last duplicate silently, which would let two entries disagree about one tensor).
Json parse_header(std::string_view text, const std::string& label) {
  std::vector<std::set<std::string>> keys_per_object;
  std::string duplicate;
  auto callback = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start: keys_per_object.emplace_back(); break;
      case Json::parse_event_t::object_end:
        if (!keys_per_object.empty()) keys_per_object.pop_back();
        break;
      case Json::parse_event_t::key:
        if (!keys_per_object.empty() && !keys_per_object.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get<std::string>();
        }
        break;
      default: break;
    }
    return true;
  };
  Json header = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/false);
  if (header.is_discarded()) fail(label, "the header is not valid JSON");
  if (!duplicate.empty()) fail(label, fmt::format("the header repeats the key '{}'", duplicate));
  if (!header.is_object()) fail(label, "the header is not a JSON object");
  return header;
}

std::map<std::string, std::string> parse_metadata(const Json& value, const std::string& label) {
  if (!value.is_object()) fail(label, "__metadata__ is not an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) fail(label, fmt::format("__metadata__ entry '{}' is not a string", key));
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

SafetensorsTensor parse_entry(const std::string& name, const Json& entry, std::uint64_t data_size,
                              const std::string& label) {
  if (!entry.is_object()) fail_tensor(label, name, "the entry is not an object");
  for (const auto& [key, unused] : entry.items()) {
    (void)unused;
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail_tensor(label, name, fmt::format("unknown field '{}' (expected dtype, shape, data_offsets)", key));
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(field)) fail_tensor(label, name, fmt::format("missing field '{}'", field));
  }
  SafetensorsTensor tensor;
  tensor.name = name;
  const Json& dtype = entry["dtype"];
  if (!dtype.is_string()) fail_tensor(label, name, "dtype is not a string");
  try {
    tensor.dtype = safetensors_dtype_from_name(dtype.get<std::string>());
  } catch (const RuntimeError& error) {
    fail_tensor(label, name, error.what());
  }
  const Json& shape = entry["shape"];
  if (!shape.is_array()) fail_tensor(label, name, "shape is not an array");
  std::uint64_t element_count = 1;
  for (const Json& dimension : shape) {
    std::uint64_t extent = as_count(dimension, label, name, "shape");
    tensor.shape.push_back(extent);
    if (__builtin_mul_overflow(element_count, extent, &element_count)) {
      fail_tensor(label, name, fmt::format("shape {} overflows a 64-bit element count", shape.dump()));
    }
  }
  std::uint64_t byte_count = 0;
  if (__builtin_mul_overflow(element_count, safetensors_dtype_size(tensor.dtype), &byte_count)) {
    fail_tensor(label, name, fmt::format("shape {} of {} overflows a 64-bit byte count", shape.dump(), dtype.dump()));
  }
  const Json& offsets = entry["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) fail_tensor(label, name, "data_offsets is not [begin, end]");
  tensor.begin = as_count(offsets[0], label, name, "data_offsets");
  tensor.end = as_count(offsets[1], label, name, "data_offsets");
  if (tensor.begin > tensor.end) {
    fail_tensor(label, name, fmt::format("data_offsets [{}, {}] end before begin", tensor.begin, tensor.end));
  }
  if (tensor.end > data_size) {
    fail_tensor(label, name, fmt::format("data_offsets [{}, {}] reach past the data section of {} bytes "
                                         "(truncated file?)",
                                         tensor.begin, tensor.end, data_size));
  }
  if (tensor.end - tensor.begin != byte_count) {
    fail_tensor(label, name, fmt::format("data_offsets [{}, {}] hold {} bytes but dtype {} and shape {} need {}",
                                         tensor.begin, tensor.end, tensor.end - tensor.begin, dtype.get<std::string>(),
                                         shape.dump(), byte_count));
  }
  return tensor;
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = (bits >> 15) & 1u, exponent = (bits >> 10) & 0x1Fu, mantissa = bits & 0x3FFu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // subnormal (or zero)
  } else if (exponent == 31) {
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

template <class T>
T load_little_endian(const std::uint8_t* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));  // the data section need not be aligned
  return value;
}

}  // namespace

std::uint64_t safetensors_dtype_size(SafetensorsDtype dtype) { return entry_for(dtype).size; }
std::string_view safetensors_dtype_name(SafetensorsDtype dtype) { return entry_for(dtype).name; }

SafetensorsDtype safetensors_dtype_from_name(std::string_view name) {
  for (const SafetensorsDtypeEntry& entry : kSafetensorsDtypes) {
    if (name == entry.name) return entry.dtype;
  }
  throw RuntimeError(fmt::format("unknown dtype '{}' (known: {})", name, known_dtype_names()));
}

std::uint64_t SafetensorsTensor::element_count() const {
  std::uint64_t count = 1;
  for (std::uint64_t extent : shape) count *= extent;  // validated not to overflow
  return count;
}

void SafetensorsFile::validate(std::span<const std::uint8_t> file) {
  if (file.size() < 8) fail(label_, fmt::format("{} bytes is too short for the 8-byte header length", file.size()));
  const std::uint64_t header_size = load_little_endian<std::uint64_t>(file.data());
  if (header_size > file.size() - 8) {
    fail(label_, fmt::format("header length {} exceeds the {} bytes after the length field (truncated file?)",
                             header_size, file.size() - 8));
  }
  if (header_size > kMaxHeaderBytes) {
    fail(label_, fmt::format("header length {} exceeds the limit of {} bytes", header_size, kMaxHeaderBytes));
  }
  if (header_size < 2 || file[8] != '{') fail(label_, "the header does not start with '{'");
  const std::string_view text(reinterpret_cast<const char*>(file.data() + 8), header_size);
  const Json header = parse_header(text, label_);
  const std::span<const std::uint8_t> data = file.subspan(8 + header_size);

  for (const auto& [name, entry] : header.items()) {
    if (name == kMetadataKey) {
      metadata_ = parse_metadata(entry, label_);
      continue;
    }
    if (name.empty()) fail(label_, "a tensor has an empty name");
    tensors_.push_back(parse_entry(name, entry, data.size(), label_));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t covered = 0;
  for (SafetensorsTensor& tensor : tensors_) {
    if (tensor.begin < covered) {
      fail_tensor(label_, tensor.name,
                  fmt::format("data_offsets [{}, {}] overlap the previous tensor, which ends at {}", tensor.begin,
                              tensor.end, covered));
    }
    if (tensor.begin > covered) {
      fail_tensor(label_, tensor.name,
                  fmt::format("data_offsets [{}, {}] leave a gap after byte {} (tensors must be contiguous)",
                              tensor.begin, tensor.end, covered));
    }
    covered = tensor.end;
    tensor.bytes = data.subspan(tensor.begin, tensor.end - tensor.begin);
    index_[tensor.name] = &tensor - tensors_.data();
  }
  if (covered != data.size()) {
    fail(label_, fmt::format("the tensors cover {} bytes but the data section holds {} (trailing bytes)", covered,
                             data.size()));
  }
}

SafetensorsFile SafetensorsFile::parse(std::vector<std::uint8_t> bytes, const std::string& label) {
  SafetensorsFile file;
  file.label_ = label;
  FileBytes owned = own_bytes(std::move(bytes));
  file.storage_ = owned.storage;
  file.validate(owned.bytes);
  return file;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  FileBytes mapped = map_file(path, "safetensors");
  SafetensorsFile file;
  file.label_ = path;
  file.storage_ = mapped.storage;
  file.validate(mapped.bytes);
  return file;
}

bool SafetensorsFile::contains(const std::string& name) const { return index_.count(name) != 0; }

const SafetensorsTensor& SafetensorsFile::tensor(const std::string& name) const {
  auto found = index_.find(name);
  if (found == index_.end()) {
    std::string some;
    std::size_t listed = 0;
    for (const SafetensorsTensor& tensor : tensors_) {
      if (listed++ == 5) {
        some += ", ...";
        break;
      }
      some += (some.empty() ? "" : ", ") + tensor.name;
    }
    throw RuntimeError(fmt::format("{}: no tensor named '{}' ({} tensors present: {})", label_, name,
                                   tensors_.size(), some));
  }
  return tensors_[found->second];
}

std::vector<float> SafetensorsFile::to_f32(const std::string& name) const {
  const SafetensorsTensor& tensor = this->tensor(name);
  const std::uint64_t count = tensor.element_count();
  std::vector<float> values(count);
  const std::uint8_t* bytes = tensor.bytes.data();
  switch (tensor.dtype) {
    case SafetensorsDtype::F32:
      if (count) std::memcpy(values.data(), bytes, count * 4);
      break;
    case SafetensorsDtype::F16:
      for (std::uint64_t i = 0; i < count; ++i) values[i] = half_to_float(load_little_endian<std::uint16_t>(bytes + 2 * i));
      break;
    case SafetensorsDtype::BF16:
      for (std::uint64_t i = 0; i < count; ++i) {
        values[i] = std::bit_cast<float>(std::uint32_t{load_little_endian<std::uint16_t>(bytes + 2 * i)} << 16);
      }
      break;
    case SafetensorsDtype::F64:
      for (std::uint64_t i = 0; i < count; ++i) values[i] = static_cast<float>(load_little_endian<double>(bytes + 8 * i));
      break;
    default:
      throw RuntimeError(fmt::format("{}: tensor '{}' has dtype {}; only F32, F16, BF16 and F64 convert to f32", label_,
                                     name, safetensors_dtype_name(tensor.dtype)));
  }
  return values;
}

std::vector<std::uint8_t> to_safetensors_bytes(const std::vector<SafetensorsTensorData>& tensors,
                                               const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::uint64_t offset = 0;
  for (const SafetensorsTensorData& tensor : tensors) {
    if (tensor.name.empty() || tensor.name == kMetadataKey) {
      throw RuntimeError(fmt::format("safetensors writer: invalid tensor name '{}'", tensor.name));
    }
    if (header.contains(tensor.name)) {
      throw RuntimeError(fmt::format("safetensors writer: tensor '{}' given twice", tensor.name));
    }
    std::uint64_t expected = safetensors_dtype_size(tensor.dtype);
    for (std::uint64_t extent : tensor.shape) {
      if (__builtin_mul_overflow(expected, extent, &expected)) {
        throw RuntimeError(fmt::format("safetensors writer: tensor '{}' shape [{}] overflows a 64-bit byte count",
                                       tensor.name, fmt::join(tensor.shape, ", ")));
      }
    }
    if (tensor.bytes.size() != expected) {
      throw RuntimeError(fmt::format("safetensors writer: tensor '{}' has {} bytes but dtype {} and shape [{}] need {}",
                                     tensor.name, tensor.bytes.size(), safetensors_dtype_name(tensor.dtype),
                                     fmt::join(tensor.shape, ", "), expected));
    }
    header[tensor.name] = {{"dtype", safetensors_dtype_name(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t header_size = text.size();
  std::vector<std::uint8_t> file(8 + header_size + offset);
  std::memcpy(file.data(), &header_size, 8);  // x86-64 and aarch64 Linux are little-endian
  std::memcpy(file.data() + 8, text.data(), header_size);
  // nlohmann orders keys alphabetically but offsets follow `tensors`, so the data goes
  // in `tensors` order.
  std::uint8_t* cursor = file.data() + 8 + header_size;
  for (const SafetensorsTensorData& tensor : tensors) {
    if (!tensor.bytes.empty()) std::memcpy(cursor, tensor.bytes.data(), tensor.bytes.size());
    cursor += tensor.bytes.size();
  }
  return file;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensorData>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::vector<std::uint8_t> bytes = to_safetensors_bytes(tensors, metadata);
  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace quantc::runtime
