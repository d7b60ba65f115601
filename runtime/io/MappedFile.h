// The bytes of a model file, memory-mapped read-only or owned in memory: what the strict
// readers of untrusted files (SafetensorsFile, GgufFile) keep alive while their tensors
// point into it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace quantc::runtime {

struct FileBytes {
  std::shared_ptr<const void> storage;  // the mapping or the owned vector; keeps `bytes` valid
  std::span<const std::uint8_t> bytes;
};

/// Maps the regular file `path` read-only (MAP_PRIVATE; the descriptor is closed at once,
/// the mapping keeps the file alive). `format` names the file kind in messages
/// ("safetensors", "GGUF"). Throws RuntimeError "<path>: cannot open <format> file:
/// <system error>", "<path>: not a regular file" (" (it is a folder)"), "<path>: invalid
/// <format> file: the file is empty" or "<path>: mmap failed: <system error>".
FileBytes map_file(const std::string& path, std::string_view format);

/// Takes ownership of `bytes` (for readers that parse a buffer in memory).
FileBytes own_bytes(std::vector<std::uint8_t> bytes);

}  // namespace quantc::runtime
