#include "runtime/backends/reference/Statistics.h"

#include <fmt/format.h>

#include "runtime/Buffers.h"

namespace quantc::runtime::reference {

std::string format_statistics(const RunStatistics& statistics, const ir::Program& program) {
  const std::uint64_t outputs = output_element_count(program);
  const double per_output = outputs ? 1.0 / static_cast<double>(outputs) : 0.0;
  auto scaled = [per_output](std::uint64_t count) { return static_cast<double>(count) * per_output; };
  std::string text = fmt::format(
      "statistics ({} outputs): per output {:.1f} global loads, {:.1f} stores, {:.1f} shuffles, "
      "{:.1f} subgroup reductions, {:.1f} arithmetic ops\n",
      outputs, scaled(statistics.global_loads), scaled(statistics.global_stores), scaled(statistics.subgroup_shuffles),
      scaled(statistics.subgroup_reductions), scaled(statistics.arithmetic_ops));
  for (const auto& [buffer, loads] : statistics.loads_per_buffer) {
    text += fmt::format("  loads from {}: {:.2f} per output\n", buffer, scaled(loads));
  }
  return text;
}

}  // namespace quantc::runtime::reference
