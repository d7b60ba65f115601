// `quantc profile`: the emulator's counters of one kernel launch (per kernel and per
// output element) and the cost model's estimate of that launch on each modeled GPU
// (CostModel.h), as text or as JSON.
//
// The resources the model needs besides the counters come from the launch (threads per
// CTA, CTAs, dynamic shared memory) and from ptxas: `ptxas -v` run on the PTX for each
// device's architecture (sm_80, sm_89, sm_90; whole-program mode, as the driver
// JIT-compiles PTX) gives registers per thread, static shared memory and spill bytes.
// When ptxas cannot be run, registers are assumed (kAssumedRegisters) and marked so;
// --registers N gives them instead.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/backends/emulator/CostModel.h"
#include "runtime/backends/emulator/Emulator.h"

namespace quantc::runtime::emulator {

/// Where a device's registers per thread came from.
enum class RegisterSource : std::uint8_t {
  Ptxas,    // `ptxas -v` for the device's architecture
  Given,    // ProfileOptions::registers (--registers)
  Assumed,  // kAssumedRegisters: ptxas was not found (or not run) and none were given
};
std::string_view to_string(RegisterSource source);  // "ptxas", "given", "assumed"

/// Registers per thread assumed when ptxas cannot be run and none were given: the most
/// with which a CTA of any size still reaches full occupancy on sm_80 and sm_90 (65536
/// registers / 2048 threads), so an unknown count never makes occupancy look worse than a
/// simple kernel's. Counting the PTX's `.reg` declarations would be meaningless: ptxas
/// allocates registers itself.
inline constexpr std::uint32_t kAssumedRegisters = 32;

struct ProfileOptions {
  std::vector<std::string> devices;        // device keys (find_device); empty: every modeled device
  std::optional<std::uint32_t> registers;  // per thread on every device; ptxas is then not run
  bool run_ptxas = true;                   // false: registers are assumed unless given
  /// profile_program's emulation reports (CTAs done, CTAs) here (LaunchOptions::progress).
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

/// The model's view of one launch on one device.
struct DeviceProfile {
  const DeviceSpec* device = nullptr;
  KernelResources resources;                // shared_bytes_per_cta: static + this device's dynamic
  std::uint32_t dynamic_shared_bytes = 0;   // of the launch on this device
  RegisterSource registers_source = RegisterSource::Assumed;
  std::uint64_t spill_bytes = 0;           // ptxas's spill stores + loads per thread (not timed by the model)
  std::optional<LaunchEstimate> estimate;  // unset when `error` says why
  std::string error;                       // the device cannot run the PTX or the launch, or ptxas failed
};

struct KernelProfile {
  std::string kernel;
  std::string target;  // the module's .target, as written ("sm_80")
  LaunchCounters counters;
  std::uint64_t output_elements = 0;  // 0: no per-output-element figures
  std::uint32_t threads_per_cta = 0;
  std::uint32_t static_shared_bytes = 0;   // declared in the PTX (ptxas's figure per device, where it ran)
  std::uint32_t dynamic_shared_bytes = 0;  // of the launch (an even-waves plan: its H100 bytes)
  bool even_waves = false;                 // dynamic shared memory sized per device (DynamicShared)
  std::vector<DeviceProfile> devices;      // in ProfileOptions::devices order (else devices() order)
  /// Registers per thread of the kernel as compiled for its own .target (`ptxas -v` for
  /// that architecture, --registers, or kAssumedRegisters); unset when ptxas rejected it.
  std::optional<std::uint32_t> registers;
  RegisterSource registers_source = RegisterSource::Assumed;
  std::string registers_note;              // set when registers are assumed: why, and how to give them
};

/// Models a launch of entry `kernel` of the PTX module `ptx_text` whose emulation gave
/// `counters` (CTAs from counters.ctas), with `threads_per_cta` threads and
/// `dynamic_shared` of dynamic shared memory per CTA. Throws CostModelError for an
/// unknown device key, a registers value above 255, or counters of 0 CTAs; PtxParseError
/// when the module does not parse or has no such entry. A device that cannot run the
/// PTX (its .target is newer), cannot fit the launch or on which ptxas fails gets an
/// `error` instead of an estimate; the others are still modeled.
KernelProfile profile_launch(const std::string& ptx_text, const std::string& kernel, std::uint32_t threads_per_cta,
                             DynamicShared dynamic_shared, const LaunchCounters& counters,
                             std::uint64_t output_elements, const ProfileOptions& options = {});

/// Runs `ptx_text` for `program` in the emulator on runtime::random_buffers(program, seed)
/// and models it (profile_launch); output elements = the readable bytes of every written
/// buffer divided by its element size. Throws what run() and profile_launch() throw.
KernelProfile profile_program(const ir::Program& program, const std::string& ptx_text, std::uint64_t seed = 1,
                              const ProfileOptions& options = {});

/// The counters as text: totals, per output element when `output_elements` > 0, pipes,
/// coalescing, unique bytes and sectors, loads in flight. `target` is only printed.
std::string format_counters(const std::string& kernel_name, const std::string& target, const LaunchCounters& counters,
                            std::uint64_t output_elements);

/// format_counters plus, per device, the model's occupancy, waves, component times,
/// modeled time, limit and HBM fraction, and the model's assumptions.
std::string format_profile(const KernelProfile& profile);

/// The profile as JSON (keys documented in README.md, "quantc profile --json").
nlohmann::ordered_json profile_json(const KernelProfile& profile);

/// The modeled devices' figures as JSON (name, compute capability, SMs, clock, bandwidth,
/// latency, limits per SM, throughput table, calibration), keyed by device key.
nlohmann::ordered_json devices_json();

}  // namespace quantc::runtime::emulator
