#include "runtime/backends/cuda/Cubin.h"

#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "runtime/Buffers.h"

namespace quantc::runtime::cuda {

namespace {
// ELF64 header offsets (System V ABI, "ELF Header").
constexpr std::size_t kElfClassOffset = 4;      // EI_CLASS: 2 = 64-bit
constexpr std::size_t kElfDataOffset = 5;       // EI_DATA: 1 = little-endian
constexpr std::size_t kElfAbiVersionOffset = 8; // EI_ABIVERSION
constexpr std::size_t kElfMachineOffset = 18;   // e_machine (u16)
constexpr std::size_t kElfFlagsOffset = 48;     // e_flags (u32)
constexpr std::size_t kElfHeaderSize = 64;
constexpr std::uint16_t kMachineCuda = 190;     // EM_CUDA

template <class T>
T read_little_endian(std::string_view image, std::size_t offset) {
  T value;
  std::memcpy(&value, image.data() + offset, sizeof(T));
  return value;  // the hosts quantc supports are little-endian, like the ELF it reads
}
}  // namespace

int cubin_architecture(std::string_view image) {
  if (image.size() < kElfHeaderSize || image.substr(0, 4) != "\x7f" "ELF") {
    throw RuntimeError(fmt::format("not a cubin: the image ({} bytes) does not start with an ELF header; "
                                   "pass PTX text as PTX, or a cubin from `quantc emit --format cubin`",
                                   image.size()));
  }
  if (image[kElfClassOffset] != 2 || image[kElfDataOffset] != 1 ||
      read_little_endian<std::uint16_t>(image, kElfMachineOffset) != kMachineCuda) {
    throw RuntimeError(fmt::format("not a cubin: the ELF image is not a 64-bit little-endian CUDA object "
                                   "(e_machine {})",
                                   read_little_endian<std::uint16_t>(image, kElfMachineOffset)));
  }
  const auto flags = read_little_endian<std::uint32_t>(image, kElfFlagsOffset);
  const auto abi_version = static_cast<unsigned char>(image[kElfAbiVersionOffset]);
  return static_cast<int>(abi_version >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
}

bool cubin_runs_on(int cubin_architecture, int compute_capability) {
  return cubin_architecture / 10 == compute_capability / 10 && cubin_architecture <= compute_capability;
}

}  // namespace quantc::runtime::cuda
