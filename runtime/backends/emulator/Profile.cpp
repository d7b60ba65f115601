#include "runtime/backends/emulator/Profile.h"

#include <cctype>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "ptx/Ptxas.h"

namespace quantc::runtime::emulator {

namespace {

/// The sm_ number of a module's .target ("sm_90a" -> 90, arch-specific) or nullopt.
struct TargetArch {
  int sm = 0;
  bool arch_specific = false;  // sm_90a: runs on sm_90 only
};
std::optional<TargetArch> parse_target_arch(std::string_view target) {
  if (target.substr(0, 3) != "sm_") return std::nullopt;
  std::size_t i = 3;
  int sm = 0;
  while (i < target.size() && std::isdigit(static_cast<unsigned char>(target[i]))) sm = sm * 10 + (target[i++] - '0');
  if (i == 3) return std::nullopt;
  return TargetArch{sm, i < target.size() && target[i] == 'a'};
}

/// What ptxas said about one entry for one architecture.
struct Assembled {
  std::uint32_t registers = 0;
  std::uint32_t shared_bytes = 0;
  std::uint64_t spill_bytes = 0;
  std::string error;  // ptxas failed or did not report the entry
};

Assembled assemble(const std::string& ptx_text, const std::string& kernel, int sm) {
  Assembled out;
  ptx::PtxasResult result = ptx::run_ptxas(ptx_text, ptx::Target{sm});
  if (!result.success) {
    std::string first = result.log.substr(0, result.log.find('\n'));
    out.error = fmt::format("ptxas failed for sm_{} ({}); pass --registers N to model without ptxas", sm, first);
    return out;
  }
  for (const ptx::FunctionResources& function : result.functions) {
    if (function.function != kernel) continue;
    out.registers = static_cast<std::uint32_t>(function.registers);
    out.shared_bytes = static_cast<std::uint32_t>(function.static_shared_bytes);
    out.spill_bytes = static_cast<std::uint64_t>(function.spill_store_bytes) + static_cast<std::uint64_t>(function.spill_load_bytes);
    return out;
  }
  out.error = fmt::format("ptxas -v for sm_{} reported no entry '{}'", sm, kernel);
  return out;
}

std::string bytes_text(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.2f} MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt::format("{:.2f} KB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

double us(double seconds) { return seconds * 1e6; }

}  // namespace

std::string_view to_string(RegisterSource source) {
  switch (source) {
    case RegisterSource::Ptxas: return "ptxas";
    case RegisterSource::Given: return "given";
    case RegisterSource::Assumed: return "assumed";
  }
  return "?";
}

KernelProfile profile_launch(const std::string& ptx_text, const std::string& kernel, std::uint32_t threads_per_cta,
                             DynamicShared dynamic_shared, const LaunchCounters& counters,
                             std::uint64_t output_elements, const ProfileOptions& options) {
  std::vector<const DeviceSpec*> selected;
  for (const std::string& key : options.devices) selected.push_back(&find_device(key));
  if (options.devices.empty())
    for (const DeviceSpec& device : devices()) selected.push_back(&device);
  if (options.registers && *options.registers > 255)
    throw CostModelError(fmt::format("--registers {}: a thread has at most 255 registers", *options.registers));
  if (counters.ctas == 0) throw CostModelError("the counters are of a launch of 0 CTAs; nothing to model");

  const Module module = parse_ptx(ptx_text);
  const Kernel* entry = module.find(kernel);
  if (entry == nullptr) throw PtxParseError(fmt::format("no entry '{}' in the PTX module", kernel));
  const std::optional<TargetArch> module_arch = parse_target_arch(module.target);

  KernelProfile profile;
  profile.kernel = kernel;
  profile.target = module.target;
  profile.counters = counters;
  profile.output_elements = output_elements;
  profile.threads_per_cta = threads_per_cta;
  profile.static_shared_bytes = entry->static_shared_bytes;
  profile.dynamic_shared_bytes = dynamic_shared.bytes;
  profile.even_waves = dynamic_shared.even_waves;

  const bool use_ptxas = !options.registers && options.run_ptxas && ptx::ptxas_available();
  if (!options.registers) {
    if (!options.run_ptxas)
      profile.registers_note = fmt::format("ptxas not run: assumed {} registers per thread; pass --registers N", kAssumedRegisters);
    else if (!use_ptxas)
      profile.registers_note = fmt::format("ptxas not found (install the CUDA toolkit): assumed {} registers per thread; "
                                           "pass --registers N",
                                           kAssumedRegisters);
  }
  std::map<int, Assembled> by_arch;  // one ptxas run per architecture
  auto assembled_for = [&](int sm) -> const Assembled& {
    auto found = by_arch.find(sm);
    if (found == by_arch.end()) found = by_arch.emplace(sm, assemble(ptx_text, kernel, sm)).first;
    return found->second;
  };
  if (options.registers) {
    profile.registers = *options.registers;
    profile.registers_source = RegisterSource::Given;
  } else if (use_ptxas && module_arch && !module_arch->arch_specific) {
    const Assembled& own = assembled_for(module_arch->sm);
    if (own.error.empty()) profile.registers = own.registers;
    profile.registers_source = RegisterSource::Ptxas;
  } else if (!use_ptxas) {
    profile.registers = kAssumedRegisters;
    profile.registers_source = RegisterSource::Assumed;
  }
  for (const DeviceSpec* device : selected) {
    DeviceProfile out;
    out.device = device;
    out.resources.threads_per_cta = threads_per_cta;
    out.resources.ctas = counters.ctas;
    std::uint32_t static_shared_bytes = entry->static_shared_bytes;
    if (module_arch && (module_arch->sm > device->compute_capability ||
                        (module_arch->arch_specific && module_arch->sm != device->compute_capability))) {
      out.error = fmt::format("the PTX targets {}; {} is {} and cannot run it", module.target, device->key, device->arch());
      profile.devices.push_back(std::move(out));
      continue;
    }
    if (options.registers) {
      out.resources.registers_per_thread = *options.registers;
      out.registers_source = RegisterSource::Given;
    } else if (use_ptxas) {
      const Assembled& assembled = assembled_for(device->compute_capability);
      if (!assembled.error.empty()) {
        out.error = assembled.error;
        profile.devices.push_back(std::move(out));
        continue;
      }
      out.resources.registers_per_thread = assembled.registers;
      static_shared_bytes = assembled.shared_bytes;
      out.spill_bytes = assembled.spill_bytes;
      out.registers_source = RegisterSource::Ptxas;
    } else {
      out.resources.registers_per_thread = kAssumedRegisters;
      out.registers_source = RegisterSource::Assumed;
    }
    out.dynamic_shared_bytes = dynamic_shared.on(*device, counters.ctas, threads_per_cta, static_shared_bytes,
                                                 out.resources.registers_per_thread);
    out.resources.shared_bytes_per_cta = static_shared_bytes + out.dynamic_shared_bytes;
    try {
      out.estimate = estimate_launch(counters, out.resources, *device);
    } catch (const CostModelError& error) {
      out.error = error.what();
    }
    profile.devices.push_back(std::move(out));
  }
  return profile;
}

KernelProfile profile_program(const ir::Program& program, const std::string& ptx_text, std::uint64_t seed,
                              const ProfileOptions& options) {
  BufferSet buffers = random_buffers(program, seed);
  LaunchOptions launch_options;
  launch_options.progress = options.progress;
  LaunchCounters counters = run(ptx_text, program, buffers, launch_options);
  const auto& block = program.workgroup_size;
  return profile_launch(ptx_text, program.name, block[0] * block[1] * block[2],
                        DynamicShared::even_waves_plan(program.reserved_shared_bytes), counters,
                        output_element_count(program), options);
}

std::string format_counters(const std::string& kernel_name, const std::string& target, const LaunchCounters& c,
                            std::uint64_t output_elements) {
  std::string out;
  auto line = [&](const std::string& label, std::uint64_t value) {
    if (output_elements > 0)
      out += fmt::format("  {:<34} {:>16}   {:>12.3f} per output element\n", label, value,
                         double(value) / double(output_elements));
    else
      out += fmt::format("  {:<34} {:>16}\n", label, value);
  };
  out += fmt::format("kernel {} (target {}): {} CTAs, {} threads, {} output elements\n", kernel_name, target, c.ctas,
                     c.threads, output_elements);
  out += "instructions (warp-level, as issued):\n";
  line("total", c.warp_instructions);
  for (std::size_t pipe = 0; pipe < ptx::kPipeCount; ++pipe) {
    if (c.pipe_instructions[pipe] != 0) line(std::string(ptx::to_string(static_cast<ptx::Pipe>(pipe))), c.pipe_instructions[pipe]);
  }
  for (std::size_t s = 0; s < kSubroutineCount; ++s) {
    if (c.subroutine_instructions[s] != 0)
      line("  of which " + std::string(to_string(static_cast<Subroutine>(s))), c.subroutine_instructions[s]);
  }
  if (c.parameter_loads != 0) line("parameter loads (free: ld.param)", c.parameter_loads);
  line("thread instructions (active lanes)", c.thread_instructions);
  out += fmt::format("  SIMT efficiency (active lanes / 32)  {:.1f}%\n",
                     c.warp_instructions ? 100.0 * double(c.thread_instructions) / (32.0 * double(c.warp_instructions)) : 0.0);
  out += "global memory:\n";
  line("load requests", c.global_load_requests);
  line("store requests", c.global_store_requests);
  line("load sectors (32 B)", c.global_load_sectors);
  line("store sectors (32 B)", c.global_store_sectors);
  line("load wavefronts (128 B lines)", c.global_load_wavefronts);
  line("store wavefronts (128 B lines)", c.global_store_wavefronts);
  out += fmt::format("  sectors per load request             {:.2f} (4 = fully coalesced 4-byte accesses)\n",
                     c.sectors_per_load_request());
  out += fmt::format("  sectors per store request            {:.2f}\n", c.sectors_per_store_request());
  line("unique bytes read", c.unique_global_bytes_read);
  line("unique bytes written", c.unique_global_bytes_written);
  line("unique sectors read", c.unique_global_sectors_read);
  line("unique sectors written", c.unique_global_sectors_written);
  line("load batches (waits on loads)", c.global_load_batches);
  line("  reaching DRAM (first touch)", c.global_load_batches_dram);
  line("  reaching L2", c.global_load_batches_l2);
  line("  reaching L1 (this CTA's)", c.global_load_batches_l1);
  if (c.global_load_batches != 0)
    out += fmt::format("  loads in flight per warp             {:.2f} requests, {:.0f} bytes\n",
                       double(c.global_load_requests) / double(c.global_load_batches),
                       32.0 * double(c.global_load_sectors) / double(c.global_load_batches));
  if (!c.buffers.empty()) {
    out += "global memory per buffer (sector efficiency: requested bytes / 32-byte sectors touched):\n";
    out += fmt::format("  {:<20} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8}\n", "buffer", "ld requests", "ld sectors",
                       "ld eff.", "st requests", "st sectors", "st eff.");
    for (const BufferTraffic& b : c.buffers) {
      auto efficiency = [](std::uint64_t requests, double value) {
        return requests ? fmt::format("{:.1f}%", 100.0 * value) : std::string("-");
      };
      out += fmt::format("  {:<20} {:>12} {:>12} {:>8} {:>12} {:>12} {:>8}\n", b.name, b.load_requests, b.load_sectors,
                         efficiency(b.load_requests, b.load_sector_efficiency()), b.store_requests, b.store_sectors,
                         efficiency(b.store_requests, b.store_sector_efficiency()));
    }
  }
  out += "shared memory and synchronization:\n";
  line("shared load requests", c.shared_load_requests);
  line("shared store requests", c.shared_store_requests);
  line("shared load wavefronts", c.shared_load_wavefronts);
  line("shared store wavefronts", c.shared_store_wavefronts);
  line("shared bank conflicts (wavefronts)", c.shared_bank_conflicts);
  if (!c.shared_conflict_sites.empty()) {
    out += "  most bank conflicts (requests that conflicted, their wavefronts, conflicts):\n";
    for (const SharedConflictSite& site : c.shared_conflict_sites)
      out += fmt::format("    PTX line {:<6} {:>10} {:>12} {:>12}  {}\n", site.line, site.requests, site.wavefronts,
                         site.bank_conflicts, site.instruction);
  }
  line("CTA barriers released", c.barriers);
  return out;
}

std::string format_profile(const KernelProfile& p) {
  std::string out = format_counters(p.kernel, p.target, p.counters, p.output_elements);
  out += "cost model (an estimate for comparing kernels, not a measurement):\n";
  if (p.registers)
    out += fmt::format("  registers per thread for {}: {} ({})\n", p.target, *p.registers, to_string(p.registers_source));
  if (!p.registers_note.empty()) out += fmt::format("  note: {}\n", p.registers_note);
  for (const DeviceProfile& dp : p.devices) {
    const DeviceSpec& d = *dp.device;
    out += fmt::format("  {}: {} ({}), {} SMs at {:.2f} GHz, {} {:.2f} TB/s, latency DRAM {:.0f} / L2 {:.0f} / L1 {:.0f} ns\n",
                       d.key, d.name, d.arch(), d.sms, d.clock_hz / 1e9, d.memory, d.dram_bandwidth / 1e12,
                       d.dram_latency * 1e9, d.l2_latency * 1e9, d.l1_latency * 1e9);
    if (!dp.estimate) {
      out += fmt::format("    cannot model: {}\n", dp.error);
      continue;
    }
    const LaunchEstimate& e = *dp.estimate;
    const Occupancy& o = e.occupancy;
    out += fmt::format("    resources        {} registers/thread ({}){}, {} B shared/CTA; {} CTAs/SM (limit: {}), "
                       "{} warps/SM, occupancy {:.1f}%\n",
                       dp.resources.registers_per_thread, to_string(dp.registers_source),
                       dp.spill_bytes ? fmt::format(", {} B spilled", dp.spill_bytes) : "", dp.resources.shared_bytes_per_cta,
                       o.ctas_per_sm, to_string(o.limit), o.resident_warps, 100.0 * o.fraction);
    out += fmt::format("    waves            {} of up to {} CTAs (last {}), {} of {} SMs busy in the first\n", e.waves,
                       e.cta_slots, e.last_wave_ctas, e.active_sms, d.sms);
    out += fmt::format("    DRAM bandwidth   {:10.3f} us  ({} / {:.2f} TB/s)\n", us(e.memory_bound_seconds),
                       bytes_text(e.dram_bytes), d.dram_bandwidth / 1e12);
    const double warps = double(p.counters.ctas) * o.warps_per_cta;
    out += fmt::format("    latency          {:10.3f} us  (waits on loads per warp: {:.2f} DRAM, {:.2f} L2, {:.2f} L1; "
                       "in flight per SM {}, {} needed for DRAM bandwidth)\n",
                       us(e.latency_bound_seconds), double(p.counters.global_load_batches_dram) / warps,
                       double(p.counters.global_load_batches_l2) / warps, double(p.counters.global_load_batches_l1) / warps,
                       bytes_text(e.bytes_in_flight_per_sm), bytes_text(e.bytes_in_flight_needed_per_sm));
    std::size_t busiest = 0;
    for (std::size_t pipe = 1; pipe < ptx::kPipeCount; ++pipe)
      if (e.pipe_seconds[pipe] > e.pipe_seconds[busiest]) busiest = pipe;
    out += fmt::format("    issue            {:10.3f} us  (busiest pipe {} {:.3f} us, dispatch {:.3f} us)\n",
                       us(e.issue_bound_seconds), ptx::to_string(static_cast<ptx::Pipe>(busiest)),
                       us(e.pipe_seconds[busiest]), us(e.dispatch_seconds));
    out += fmt::format("    modeled          {:10.3f} us  limit: {}; {:.1f}% of peak DRAM bandwidth\n", us(e.seconds),
                       e.limit_description(), 100.0 * e.hbm_fraction());
  }
  out += "model assumptions (README.md, \"quantc profile\"):\n"
         "  per wave of CTAs, the largest of: issue on the busiest SM (per pipe, at the CUDA C++ Programming Guide's\n"
         "  results per clock per SM for the device's compute capability; 4 warp instructions per clock dispatched;\n"
         "  moves and ld.param free; div/rem/sqrt subroutines as their SASS instructions), DRAM bandwidth (unique\n"
         "  32-byte sectors cross DRAM once: perfect L2 reuse; a sector written and then read crosses it once, as a\n"
         "  write) and each warp's serial chain (each wait on loads in flight costs the latency of the level it\n"
         "  reaches: DRAM for a first touch, else L2 or L1: Little's law; each instruction issued a fitted number of\n"
         "  cycles); shared memory by its wavefronts (bank conflicts included); occupancy from registers, shared\n"
         "  memory, warps and CTA slots. Not modeled: launch overhead, L2 bandwidth, cache evictions. PTX counts,\n"
         "  not SASS.\n";
  return out;
}

nlohmann::ordered_json profile_json(const KernelProfile& p) {
  using json = nlohmann::ordered_json;
  const LaunchCounters& c = p.counters;
  json pipes = json::object();
  for (std::size_t pipe = 0; pipe < ptx::kPipeCount; ++pipe)
    pipes[std::string(pipe_key(static_cast<ptx::Pipe>(pipe)))] = c.pipe_instructions[pipe];
  json subroutines = json::object();
  for (std::size_t s = 0; s < kSubroutineCount; ++s)
    subroutines[std::string(to_string(static_cast<Subroutine>(s)))] = c.subroutine_instructions[s];
  json buffers = json::array();
  for (const BufferTraffic& b : c.buffers)
    buffers.push_back({{"name", b.name},
                       {"load_requests", b.load_requests},
                       {"load_sectors", b.load_sectors},
                       {"load_bytes", b.load_bytes},
                       {"load_sector_efficiency", b.load_sector_efficiency()},
                       {"store_requests", b.store_requests},
                       {"store_sectors", b.store_sectors},
                       {"store_bytes", b.store_bytes},
                       {"store_sector_efficiency", b.store_sector_efficiency()}});
  json conflict_sites = json::array();
  for (const SharedConflictSite& site : c.shared_conflict_sites)
    conflict_sites.push_back({{"line", site.line},
                              {"instruction", site.instruction},
                              {"requests", site.requests},
                              {"wavefronts", site.wavefronts},
                              {"bank_conflicts", site.bank_conflicts}});
  json k = {
      {"kernel", p.kernel},
      {"target", p.target},
      {"ctas", c.ctas},
      {"threads_per_cta", p.threads_per_cta},
      {"threads", c.threads},
      {"output_elements", p.output_elements},
      {"warp_instructions", c.warp_instructions},
      {"thread_instructions", c.thread_instructions},
      {"pipe_instructions", pipes},
      {"subroutine_instructions", subroutines},
      {"parameter_loads", c.parameter_loads},
      {"load_requests", c.global_load_requests},
      {"store_requests", c.global_store_requests},
      {"load_sectors", c.global_load_sectors},
      {"store_sectors", c.global_store_sectors},
      {"load_wavefronts", c.global_load_wavefronts},
      {"store_wavefronts", c.global_store_wavefronts},
      {"shared_load_requests", c.shared_load_requests},
      {"shared_store_requests", c.shared_store_requests},
      {"shared_load_wavefronts", c.shared_load_wavefronts},
      {"shared_store_wavefronts", c.shared_store_wavefronts},
      {"shared_bank_conflicts", c.shared_bank_conflicts},
      {"shared_conflict_sites", conflict_sites},
      {"unique_bytes_read", c.unique_global_bytes_read},
      {"unique_bytes_written", c.unique_global_bytes_written},
      {"unique_sectors_read", c.unique_global_sectors_read},
      {"unique_sectors_written", c.unique_global_sectors_written},
      {"load_batches", c.global_load_batches},
      {"load_batches_dram", c.global_load_batches_dram},
      {"load_batches_l2", c.global_load_batches_l2},
      {"load_batches_l1", c.global_load_batches_l1},
      {"loads_in_flight_per_warp",
       c.global_load_batches ? double(c.global_load_requests) / double(c.global_load_batches) : 0.0},
      {"bytes_in_flight_per_warp",
       c.global_load_batches ? 32.0 * double(c.global_load_sectors) / double(c.global_load_batches) : 0.0},
      {"barriers", c.barriers},
      {"buffers", buffers},
      {"static_shared_bytes", p.static_shared_bytes},
      {"dynamic_shared_bytes", p.dynamic_shared_bytes},
      {"even_waves", p.even_waves},
  };
  json by_device = json::object();
  for (const DeviceProfile& dp : p.devices) {
    const DeviceSpec& d = *dp.device;
    json entry = {{"name", d.name}, {"arch", d.arch()}};
    if (dp.resources.registers_per_thread != 0 || dp.estimate) {
      entry["registers"] = dp.resources.registers_per_thread;
      entry["registers_source"] = std::string(to_string(dp.registers_source));
      entry["spill_bytes"] = dp.spill_bytes;
      entry["shared_bytes_per_cta"] = dp.resources.shared_bytes_per_cta;
      entry["dynamic_shared_bytes"] = dp.dynamic_shared_bytes;
    }
    if (!dp.estimate) {
      entry["error"] = dp.error;
      by_device[std::string(d.key)] = entry;
      continue;
    }
    const LaunchEstimate& e = *dp.estimate;
    const Occupancy& o = e.occupancy;
    auto limit_or_null = [](unsigned value) {
      return value == std::numeric_limits<unsigned>::max() ? json(nullptr) : json(value);
    };
    json issue = json::object();
    for (std::size_t pipe = 0; pipe < ptx::kPipeCount; ++pipe)
      if (e.pipe_seconds[pipe] > 0) issue[std::string(pipe_key(static_cast<ptx::Pipe>(pipe)))] = us(e.pipe_seconds[pipe]);
    issue["dispatch"] = us(e.dispatch_seconds);
    json limits = json::object();
    for (const auto& [key, seconds] : e.limit_seconds) limits[key] = us(seconds);
    entry.update({
        {"ctas_per_sm", o.ctas_per_sm},
        {"occupancy_limit", std::string(to_string(o.limit))},
        {"ctas_per_sm_by",
         {{"warps", o.ctas_by_warps},
          {"registers", limit_or_null(o.ctas_by_registers)},
          {"shared_memory", o.ctas_by_shared_memory},
          {"cta_slots", o.ctas_by_cta_slots}}},
        {"resident_warps_per_sm", o.resident_warps},
        {"occupancy", o.fraction},
        {"cta_slots", e.cta_slots},
        {"waves", e.waves},
        {"last_wave_ctas", e.last_wave_ctas},
        {"active_sms", e.active_sms},
        {"dram_bytes", e.dram_bytes},
        {"memory_bound_us", us(e.memory_bound_seconds)},
        {"latency_bound_us", us(e.latency_bound_seconds)},
        {"issue_bound_us", us(e.issue_bound_seconds)},
        {"issue_us", issue},
        {"instructions_per_warp", e.instructions_per_warp},
        {"load_batches_per_warp", e.load_batches_per_warp},
        {"bytes_in_flight_per_warp", e.bytes_in_flight_per_warp},
        {"bytes_in_flight_per_sm", e.bytes_in_flight_per_sm},
        {"bytes_in_flight_needed_per_sm", e.bytes_in_flight_needed_per_sm},
        {"limits_us", limits},
        {"modeled_us", us(e.seconds)},
        {"limit", e.limit_key()},
        {"limit_description", e.limit_description()},
        {"hbm_fraction", e.hbm_fraction()},
    });
    by_device[std::string(d.key)] = entry;
  }
  k["registers"] = p.registers ? json(*p.registers) : json(nullptr);
  k["registers_source"] = std::string(to_string(p.registers_source));
  if (!p.registers_note.empty()) k["registers_note"] = p.registers_note;
  k["devices"] = by_device;
  return k;
}

nlohmann::ordered_json devices_json() {
  using json = nlohmann::ordered_json;
  json out = json::object();
  for (const DeviceSpec& d : devices()) {
    const ArithmeticThroughput& t = d.throughput;
    json calibration = {{"measured_kernels", d.calibration.measured_kernels},
                        {"median_relative_error", d.calibration.median_relative_error
                                                      ? json(*d.calibration.median_relative_error)
                                                      : json(nullptr)},
                        {"note", d.calibration.note}};
    out[std::string(d.key)] = {
        {"name", d.name},
        {"arch", d.arch()},
        {"compute_capability", fmt::format("{}.{}", d.compute_capability / 10, d.compute_capability % 10)},
        {"sms", d.sms},
        {"clock_ghz", d.clock_hz / 1e9},
        {"memory", d.memory},
        {"dram_bandwidth_tb_per_s", d.dram_bandwidth / 1e12},
        {"sustained_dram_fraction", d.sustained_dram_fraction},
        {"warp_cycles_per_instruction", d.warp_cycles_per_instruction},
        {"dram_latency_ns", d.dram_latency * 1e9},
        {"l2_latency_ns", d.l2_latency * 1e9},
        {"l1_latency_ns", d.l1_latency * 1e9},
        {"max_threads_per_sm", d.max_threads_per_sm},
        {"max_warps_per_sm", d.max_warps_per_sm},
        {"max_ctas_per_sm", d.max_ctas_per_sm},
        {"registers_per_sm", d.registers_per_sm},
        {"register_allocation_unit", d.register_allocation_unit},
        {"shared_bytes_per_sm", d.shared_bytes_per_sm},
        {"max_shared_bytes_per_cta", d.max_shared_bytes_per_cta},
        {"reserved_shared_bytes_per_cta", d.reserved_shared_bytes_per_cta},
        {"results_per_clock_per_sm",
         {{"fp32", t.fp32},
          {"fp16", t.fp16},
          {"fp64", t.fp64},
          {"integer", t.integer},
          {"integer_multiply", t.integer_multiply},
          {"special_function", t.special},
          {"conversion", t.conversion},
          {"shuffle", t.shuffle},
          {"load_store", t.load_store}}},
        {"calibration", calibration},
    };
  }
  return out;
}

}  // namespace quantc::runtime::emulator
