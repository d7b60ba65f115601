// The reference interpreter's counters (runtime::reference::run fills them on request;
// the backend interface reports them in RunReport::statistics). Kept apart from
// Interpreter.h so that code reading a report needs no interpreter.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/Program.h"

namespace quantc::runtime::reference {

/// Dynamic operation counts of one run, summed over invocations: an operation executed
/// by n active invocations counts n. Divide by the number of outputs for per-output
/// figures (what a fused kernel costs per result).
struct RunStatistics {
  std::uint64_t workgroups = 0;
  std::uint64_t invocations = 0;          // launched, including ones that do nothing
  std::uint64_t global_loads = 0;         // element loads from any buffer
  std::uint64_t global_stores = 0;        // element stores to any buffer
  std::uint64_t shared_loads = 0;         // loads from workgroup arrays (Program::shared)
  std::uint64_t shared_stores = 0;        // stores to workgroup arrays
  std::uint64_t subgroup_shuffles = 0;    // SubgroupShuffle, per invocation
  std::uint64_t subgroup_reductions = 0;  // SubgroupReduce (one 5-step butterfly each), per invocation
  std::uint64_t subgroup_ballots = 0;     // SubgroupBallot, per invocation
  std::uint64_t subgroup_mmas = 0;        // SubgroupMma (one m16n8k16 tile per subgroup), per invocation
  std::uint64_t arithmetic_ops = 0;       // Binary, Unary, Cast, Select, Fma and Lookup evaluations
  std::map<std::string, std::uint64_t> loads_per_buffer;   // by buffer name (every declared buffer)
  std::map<std::string, std::uint64_t> stores_per_buffer;  // likewise
};

/// The statistics as text, per output element of `program` (output_element_count):
/// the totals `quantc run --stats` prints, then loads per buffer.
std::string format_statistics(const RunStatistics& statistics, const ir::Program& program);

}  // namespace quantc::runtime::reference
