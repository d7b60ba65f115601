#include "ptx/Assemble.h"

#include <fmt/format.h>

#include <stdexcept>

#include "ptx/NvJitLink.h"
#include "ptx/Ptxas.h"

namespace quantc::ptx {

AssemblyReport assemble(std::string_view assembler, std::string_view ptx, const Target& target) {
  if (assembler == "ptxas") {
    const PtxasResult result = run_ptxas(ptx, target);
    return {result.success, result.registers, static_cast<std::int64_t>(result.spill_store_bytes),
            static_cast<std::int64_t>(result.spill_load_bytes), result.log};
  }
  if (assembler == "nvjitlink") {
    try {
      const LinkedCubin linked = link_cubin(ptx, target);
      const ResourceTotals totals = total_resources(linked.functions);
      return {true, totals.registers, static_cast<std::int64_t>(totals.spill_store_bytes),
              static_cast<std::int64_t>(totals.spill_load_bytes), linked.info_log};
    } catch (const LinkError& error) {
      return {false, 0, 0, 0, error.what()};
    }
  }
  throw std::invalid_argument(fmt::format("assembler '{}' is not ptxas or nvjitlink", assembler));
}

}  // namespace quantc::ptx
