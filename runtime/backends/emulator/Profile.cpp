#include "runtime/backends/emulator/Profile.h"

#include <fmt/format.h>

namespace quantc::runtime::emulator {

const std::vector<RooflineDevice>& roofline_devices() {
  static const std::vector<RooflineDevice> devices = {
      {"H100 SXM", 3.35e12, 132, 4, 1.98e9},
      {"H200", 4.8e12, 132, 4, 1.98e9},
  };
  return devices;
}

RooflineEstimate estimate_roofline(const LaunchCounters& counters, const RooflineDevice& device) {
  RooflineEstimate estimate;
  double bytes = double(counters.unique_global_bytes_read + counters.unique_global_bytes_written);
  estimate.memory_seconds = bytes / device.bandwidth_bytes_per_second;
  double issue_rate = double(device.streaming_multiprocessors) * device.schedulers_per_multiprocessor * device.clock_hz;
  estimate.issue_seconds = double(counters.warp_instructions) / issue_rate;
  return estimate;
}

std::string format_profile(const std::string& kernel_name, const std::string& target, const LaunchCounters& c,
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
  line("thread instructions (active lanes)", c.thread_instructions);
  out += fmt::format("  SIMT efficiency (active lanes / 32)  {:.1f}%\n",
                     c.warp_instructions ? 100.0 * double(c.thread_instructions) / (32.0 * double(c.warp_instructions)) : 0.0);
  out += "global memory:\n";
  line("load requests", c.global_load_requests);
  line("store requests", c.global_store_requests);
  line("load sectors (32 B)", c.global_load_sectors);
  line("store sectors (32 B)", c.global_store_sectors);
  out += fmt::format("  sectors per load request             {:.2f} (4 = fully coalesced 4-byte accesses)\n",
                     c.sectors_per_load_request());
  out += fmt::format("  sectors per store request            {:.2f}\n", c.sectors_per_store_request());
  line("unique bytes read", c.unique_global_bytes_read);
  line("unique bytes written", c.unique_global_bytes_written);
  out += "shared memory and synchronization:\n";
  line("shared load requests", c.shared_load_requests);
  line("shared store requests", c.shared_store_requests);
  line("CTA barriers released", c.barriers);
  out += "roofline estimate:\n";
  for (const RooflineDevice& device : roofline_devices()) {
    RooflineEstimate e = estimate_roofline(c, device);
    out += fmt::format("  {:<9} memory-bound {:10.3f} us   issue-bound {:10.3f} us   -> {} dominates ({:.3f} us)\n",
                       device.name, e.memory_seconds * 1e6, e.issue_seconds * 1e6, e.memory_bound() ? "memory" : "issue",
                       e.seconds() * 1e6);
  }
  out += "model assumptions (an estimate for comparing kernels, not a measurement):\n"
         "  memory-bound time = unique global bytes read + written / HBM bandwidth (each byte crosses HBM once:\n"
         "    perfect cache reuse, no over-fetch); H100 SXM 3.35 TB/s, H200 4.8 TB/s.\n"
         "  issue-bound time = warp instructions / (132 SMs x 4 schedulers x 1.98 GHz boost clock): one warp\n"
         "    instruction per scheduler per cycle, full occupancy, all latency hidden, launch overhead ignored.\n"
         "  the larger of the two dominates; instruction counts are PTX instructions, not SASS.\n";
  return out;
}

std::string profile_program(const ir::Program& program, const std::string& ptx_text, const std::string& target,
                            std::uint64_t seed) {
  BufferSet buffers = random_buffers(program, seed);
  LaunchCounters counters = run(ptx_text, program, buffers);
  return format_profile(program.name, target, counters, output_element_count(program));
}

}  // namespace quantc::runtime::emulator
