// The fuzz targets: one function per parser of outside input, each feeding arbitrary
// bytes through the same entry point the command line uses. A target returns whether the
// input was accepted or rejected with one of the errors its parser documents; anything
// else escapes: an undocumented exception (libFuzzer reports it as a crash through
// std::terminate, the replay test as a failure), an InvariantViolation, or a sanitizer
// report.
//
// Two drivers call them: FuzzerMain.cpp (one libFuzzer executable per target, clang,
// -DQUANTC_BUILD_FUZZERS=ON, run by scripts/fuzz.sh) and ReplayTests.cpp (every file of
// corpus/<target>/ through the target in every normal build, no clang needed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace quantc::fuzz {

enum class Outcome { Accepted, Rejected };

/// A property that must hold for every accepted input failed (e.g. a round trip changed
/// the data). Deliberately not one of the errors a target catches.
class InvariantViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

using TargetFunction = Outcome (*)(const std::uint8_t* data, std::size_t size);

/// safetensors bytes -> SafetensorsFile::parse (what `quantc pack` reads).
Outcome safetensors_target(const std::uint8_t* data, std::size_t size);
/// .npy file bytes -> read_npy (what `quantc run --input/--arg` read).
Outcome npy_target(const std::uint8_t* data, std::size_t size);
/// JSON op spec -> everything `quantc emit` does before touching the cache or a file:
/// parse_spec, target and pipeline resolution, the cache key, build_program, compile.
Outcome spec_target(const std::uint8_t* data, std::size_t size);
/// IR text -> parse_program, then what `quantc opt` does (verify, -O2, print), and the
/// printer/parser round trip.
Outcome ir_text_target(const std::uint8_t* data, std::size_t size);
/// GGUF bytes -> GgufFile::parse, then to_f32 of every dequantizable tensor (what a GGUF
/// converter reads).
Outcome gguf_target(const std::uint8_t* data, std::size_t size);
/// A kernel-cache entry file's bytes -> KernelCache::load and list (what `quantc emit`
/// and `quantc cache ls` read from the cache directory).
Outcome cache_entry_target(const std::uint8_t* data, std::size_t size);

struct Target {
  const char* name;  // corpus/<name>/, <name>_fuzzer
  TargetFunction run;
};

inline const std::vector<Target>& all_targets() {
  static const std::vector<Target> targets{{"safetensors", safetensors_target},
                                           {"npy", npy_target},
                                           {"spec", spec_target},
                                           {"ir_text", ir_text_target},
                                           {"cache_entry", cache_entry_target},
                                           {"gguf", gguf_target}};
  return targets;
}

/// A private directory for targets whose entry point reads a file (removed at exit).
const std::string& scratch_directory();
/// Writes `size` bytes to `path` (replacing it); throws std::runtime_error on failure.
void write_bytes(const std::string& path, const std::uint8_t* data, std::size_t size);

}  // namespace quantc::fuzz
