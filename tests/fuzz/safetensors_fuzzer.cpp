// libFuzzer target for the safetensors reader (runtime/io/Safetensors.h). Any input must
// either parse or raise runtime::RuntimeError; AddressSanitizer turns every
// out-of-bounds read into a crash. Build with -DQUANTC_BUILD_FUZZERS=ON using clang,
// then: build/tests/fuzz/safetensors_fuzzer -max_total_time=60 tests/fuzz/corpus
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/io/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto file = quantc::runtime::SafetensorsFile::parse(std::vector<std::uint8_t>(data, data + size), "fuzz input");
    // Touch every byte the reader hands out, and round-trip the floating tensors.
    std::uint64_t checksum = 0;
    for (const auto& tensor : file.tensors()) {
      for (std::uint8_t byte : tensor.bytes) checksum += byte;
      auto dtype = tensor.dtype;
      using quantc::runtime::SafetensorsDtype;
      if (dtype == SafetensorsDtype::F32 || dtype == SafetensorsDtype::F16 || dtype == SafetensorsDtype::BF16 ||
          dtype == SafetensorsDtype::F64) {
        checksum += file.to_f32(tensor.name).size();
      }
    }
    volatile std::uint64_t sink = checksum;
    (void)sink;
  } catch (const quantc::runtime::RuntimeError&) {
    // Rejected cleanly: the expected outcome for malformed input.
  }
  return 0;
}
