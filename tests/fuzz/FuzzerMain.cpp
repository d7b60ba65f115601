// The libFuzzer entry point of one target: compiled once per fuzzer executable with
// QUANTC_FUZZ_TARGET naming the target function (tests/fuzz/CMakeLists.txt).
#include "tests/fuzz/FuzzTargets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  quantc::fuzz::QUANTC_FUZZ_TARGET(data, size);
  return 0;
}
